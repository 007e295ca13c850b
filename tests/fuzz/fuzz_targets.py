"""Hostile-input targets, one per parser (issue 14 item 7), shared by the Hypothesis tests
(tests/fuzz/test_fuzz_*.py) and the coverage-guided atheris runner (tests/fuzz/deep.py).

A target takes raw bytes, runs the parser the way icefloe reads that kind of object, and
returns normally when the parser accepted the input or raised one of the typed errors
listed for it. Anything else (another exception, or a read that silently returns fewer
entries or rows than the object's description says) escapes as an exception: a finding.
`COUNTS` counts the inputs each target was given (the deep run reports them).
"""
from __future__ import annotations

import io
import json
from collections import Counter
from dataclasses import replace
from functools import lru_cache

import fastavro
import pyarrow as pa

from icefloe.impl.catalog.base import CatalogError, TableIdentifier
from icefloe.impl.catalog.s3 import Pointer
from icefloe.impl.format import types as T
from icefloe.impl.format.expression_parser import parse
from icefloe.impl.format.expressions import ExpressionError, bind
from icefloe.impl.format.integrity import CorruptMetadata, check_manifest_list
from icefloe.impl.format.manifest import (
    DataFile, ManifestEntry, ManifestEntryStatus, ManifestError, ManifestFile, manifest_file_of,
)
from icefloe.impl.format.manifest_reader import ManifestReader, Projection, read_manifest_list
from icefloe.impl.format.manifest_writer import write_manifest, write_manifest_list
from icefloe.impl.format.metadata import MetadataError, from_json, new_table_metadata, to_json
from icefloe.impl.format.parquet import DataFileError, read_data_file, write_data_file
from icefloe.impl.format.transforms import parse_partition_spec

COUNTS: Counter = Counter()

ROWS = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "cat": pa.array(["a", "b", None, "d"]),
                 "amount": pa.array([1.5, 2.5, float("nan"), None], pa.float64())})
SCHEMA = T.schema_from_arrow(ROWS.schema)
SPEC = parse_partition_spec("cat, bucket(4, id)", SCHEMA)
ENTRIES_N = 5


class Finding(AssertionError):
    """A parser returned something it must not (fewer entries or rows than described)."""


# -- seeds: valid objects of each kind, built in memory ------------------------------------

@lru_cache(maxsize=None)
def seed_manifest() -> tuple[bytes, ManifestFile]:
    """A manifest of ENTRIES_N entries in several Avro blocks, and its list entry."""
    files = [DataFile(f"s3://b/t/data/f{i}.parquet", "PARQUET", (chr(97 + i), i % 4), 10 + i, 1000 + i,
                      value_counts={1: 10, 2: 10}, null_value_counts={1: 0, 2: 1}, nan_value_counts={3: 0},
                      lower_bounds={1: b"\x01" + b"\0" * 7}, upper_bounds={1: b"\x09" + b"\0" * 7},
                      split_offsets=(4,)) for i in range(ENTRIES_N)]
    entries = [ManifestEntry(ManifestEntryStatus.ADDED if i % 2 else ManifestEntryStatus.EXISTING, f, 7, 1, 1)
               for i, f in enumerate(files)]
    data = _in_small_blocks(write_manifest(entries, SCHEMA, SPEC))
    mf = manifest_file_of(entries, SCHEMA, SPEC, manifest_path="s3://b/t/metadata/m0.avro",
                          manifest_length=len(data), added_snapshot_id=7, sequence_number=1)
    return data, mf


def _in_small_blocks(data: bytes) -> bytes:
    """The same container re-encoded with a block every few records (Java writes a block
    about every 64 KB), so that cuts and drops at block boundaries have blocks to act on."""
    reader = fastavro.reader(io.BytesIO(data))
    out = io.BytesIO()
    fastavro.writer(out, reader.writer_schema, list(reader), codec="deflate", sync_interval=100,
                    metadata={k: v for k, v in reader.metadata.items() if not k.startswith("avro.")})
    return out.getvalue()


@lru_cache(maxsize=None)
def seed_manifest_list() -> tuple[bytes, dict[str, str]]:
    """A manifest list of three manifests and the summary totals that describe it."""
    _, mf = seed_manifest()
    listed = [mf, replace(mf, manifest_path="m1.avro"), replace(mf, manifest_path="m2.avro")]
    data = _in_small_blocks(write_manifest_list(listed, 7, 6, 2))
    files = sum(m.added_files_count + m.existing_files_count for m in listed)
    rows = sum(m.added_rows_count + m.existing_rows_count for m in listed)
    return data, {"operation": "append", "total-data-files": str(files), "total-records": str(rows)}


@lru_cache(maxsize=None)
def seed_metadata() -> bytes:
    meta = new_table_metadata(SCHEMA, "s3://b/t", "9c12f5e0-0d5b-4c3c-9b8e-2a3c4d5e6f70", 1_700_000_000_000, SPEC,
                              properties={"write.data-files.max": "100"})
    return to_json(meta)


@lru_cache(maxsize=None)
def seed_pointer() -> bytes:
    return Pointer("s3://b/t/metadata/00001-x.metadata.json", "s3://b/t/metadata/00000-y.metadata.json",
                   "6f1c2a34-5b6c-4d7e-8f90-a1b2c3d4e5f6").encode()


@lru_cache(maxsize=None)
def seed_parquet() -> tuple[bytes, DataFile]:
    return write_data_file(ROWS, SCHEMA, "s3://b/t/data/f.parquet", ())


SEEDS = {
    "metadata_json": lambda: seed_metadata(),
    "manifest_list": lambda: seed_manifest_list()[0],
    "manifest": lambda: seed_manifest()[0],
    "s3_pointer": lambda: seed_pointer(),
    "parquet": lambda: seed_parquet()[0],
    "identifier": lambda: b"db.events",
    "filter": lambda: b"id > 2 and (cat = 'a' or cat in ('b', 'c')) and not amount is nan",
}


# -- targets -------------------------------------------------------------------------------

def metadata_json(data: bytes) -> None:
    COUNTS["metadata_json"] += 1
    try:
        meta = from_json(data, "fuzz.metadata.json")
    except MetadataError:
        return
    if meta.format_version == 2:  # v1 is read, never written (docs/format.md)
        from_json(to_json(meta), "rewritten.metadata.json")  # what is accepted must write back readably


def manifest_list(data: bytes) -> None:
    """Read as a commit's refresh does: the list, then the summary check."""
    COUNTS["manifest_list"] += 1
    _, summary = seed_manifest_list()
    try:
        listed = read_manifest_list(data, "fuzz-list.avro")
        check_manifest_list(listed, summary, "fuzz-list.avro", 7)
    except (ManifestError, CorruptMetadata):
        return
    counts = [(m.added_files_count, m.existing_files_count) for m in listed if m.content == 0]
    if any(None in c for c in counts):
        return  # a list that leaves counts out (as v1 may) cannot be checked against the summary
    files = sum(a + e for a, e in counts)
    if files != int(summary["total-data-files"]):
        raise Finding(f"list read as {files} live files, summary {summary}")


def manifest(data: bytes) -> None:
    """Read with the seed's list entry, in every projection, selectively and by partition."""
    COUNTS["manifest"] += 1
    _, mf = seed_manifest()
    for projection in Projection:
        try:
            got = ManifestReader(data, mf).read_entries(projection)
        except (ManifestError, CorruptMetadata):
            continue
        if len(got) != ENTRIES_N:
            raise Finding(f"{len(got)} entries read, the list entry says {ENTRIES_N}")
    try:
        reader = ManifestReader(data, mf)
        reader.read_entries(Projection.WITHOUT_COLUMN_STATS)
        reader.read_entries(Projection.ALL, keep=lambda e: e.data_file.record_count % 2 == 0)
    except (ManifestError, CorruptMetadata):
        pass
    try:  # a filtered plan's read: the partition index, then the kept entries
        ManifestReader(data, mf).read_matching(lambda p: len(repr(p)) % 2 == 0)
    except (ManifestError, CorruptMetadata):
        pass


def s3_pointer(data: bytes) -> None:
    COUNTS["s3_pointer"] += 1
    try:
        pointer = Pointer.decode(data, "fuzz/pointer.json")
    except CatalogError:
        return
    if not (isinstance(pointer.metadata_location, str) and pointer.metadata_location):
        raise Finding(f"pointer decoded without a metadata location: {pointer}")


def parquet(data: bytes) -> None:
    """Read a data file as a scan task does: against its manifest entry's record count."""
    COUNTS["parquet"] += 1
    _, entry = seed_parquet()
    try:
        rows = read_data_file(data, SCHEMA, entry.file_path, data_file=entry)
    except (DataFileError, CorruptMetadata):
        return
    if rows.num_rows != entry.record_count:
        raise Finding(f"{rows.num_rows} rows read, the entry says {entry.record_count}")


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")


def identifier(data: bytes) -> None:
    COUNTS["identifier"] += 1
    try:
        ident = TableIdentifier.parse(_text(data))
    except CatalogError:
        return
    if TableIdentifier.parse(str(ident)) != ident:
        raise Finding(f"{ident!r} does not parse back from its text")


def filter_text(data: bytes) -> None:
    COUNTS["filter"] += 1
    try:
        bind(parse(_text(data)), SCHEMA)
    except ExpressionError:
        return


TARGETS = {"metadata_json": metadata_json, "manifest_list": manifest_list, "manifest": manifest,
           "s3_pointer": s3_pointer, "parquet": parquet, "identifier": identifier, "filter": filter_text}
