"""Manifests and manifest lists: the model (Iceberg spec: "Manifests", "Manifest Lists",
"Sequence Number Inheritance").

The spec's structs as frozen data classes, and what is computed from entries alone: the
list entry describing a manifest (counts, partition summaries) and the list as a reader
reads it back. Writing them in Avro is manifest_writer.py; reading, manifest_reader.py;
checking what was read against the counts that describe it, integrity.py.

Values are in icefloe's internal form (conversions.py): date = days, time/timestamp =
microseconds, decimal = Decimal, uuid = uuid.UUID, binary/fixed = bytes.

TLA+ (tla/IcebergCommit.tla): the contents of what `WriteManifests` and
`WriteManifestList` write; the spec treats them as opaque.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Iterable

from icefloe.impl.format import conversions, types as T
from icefloe.impl.format.transforms import PartitionSpec, partition_type
from icefloe.impl.outcomes import IcefloeError

__all__ = [
    "ManifestError", "ManifestEntryStatus", "DataFileContent", "ManifestContent", "DataFile",
    "ManifestEntry", "FieldSummary", "ManifestFile", "manifest_file_of", "summarize_partitions",
    "listed_manifests", "COLUMN_STATS_IDS", "FORMAT_VERSION", "assign_first_row_ids",
]

FORMAT_VERSION = 2
# data_file fields a plan without column predicates never looks at (ids 108..128, 137)
COLUMN_STATS_IDS = frozenset({108, 109, 110, 137, 125, 128})

class ManifestError(IcefloeError):
    """A manifest or manifest list that cannot be read or written as the spec says.
    `location` names the file, `field` the spec field (e.g. `102 partition`) when known."""

    def __init__(self, message: str, location: str | None = None, field: str | None = None):
        parts = [p for p in (location, f"field {field}" if field else None) if p]
        super().__init__(f"{': '.join(parts)}: {message}" if parts else message)
        self.location = location
        self.field = field


class ManifestEntryStatus(IntEnum):
    EXISTING = 0
    ADDED = 1
    DELETED = 2


class DataFileContent(IntEnum):
    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2


class ManifestContent(IntEnum):
    DATA = 0
    DELETES = 1


@dataclass(frozen=True, slots=True)
class DataFile:
    """The spec's `data_file` struct (field ids 100..140). `partition` is a tuple ordered
    as the partition spec's fields; bounds are single-value serialized bytes."""
    file_path: str
    file_format: str
    partition: tuple
    record_count: int
    file_size_in_bytes: int
    content: DataFileContent = DataFileContent.DATA
    column_sizes: dict[int, int] | None = None
    value_counts: dict[int, int] | None = None
    null_value_counts: dict[int, int] | None = None
    nan_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    # v3 (spec "Data File Fields" 142..145): row lineage, and where a deletion vector's blob
    # sits in its Puffin file (`referenced_data_file` also marks a v2 position delete file
    # that names one data file only).
    first_row_id: int | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None

    @property
    def is_deletion_vector(self) -> bool:
        return self.content == DataFileContent.POSITION_DELETES and self.file_format.lower() == "puffin"


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """The spec's `manifest_entry`. Null snapshot/sequence numbers mean "inherit from the
    manifest list" (only ADDED entries may leave them null in v2)."""
    status: ManifestEntryStatus
    data_file: DataFile
    snapshot_id: int | None = None
    sequence_number: int | None = None
    file_sequence_number: int | None = None


@dataclass(frozen=True, slots=True)
class FieldSummary:
    """The spec's `field_summary` (ids 509, 518, 510, 511) for one partition field."""
    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """The spec's `manifest_file` (ids 500..519): one manifest list entry. A None
    sequence number is unassigned: write_manifest_list assigns the snapshot's."""
    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    added_snapshot_id: int | None
    content: ManifestContent = ManifestContent.DATA
    sequence_number: int | None = None
    min_sequence_number: int | None = None
    added_files_count: int | None = None
    existing_files_count: int | None = None
    deleted_files_count: int | None = None
    added_rows_count: int | None = None
    existing_rows_count: int | None = None
    deleted_rows_count: int | None = None
    partitions: tuple[FieldSummary, ...] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None  # v3 (520): assigned by the manifest list that adds it


def summarize_partitions(partitions: Iterable[tuple], ptype: T.StructType) -> tuple[FieldSummary, ...]:
    """Field summaries over partition tuples: null/NaN flags and serialized min/max of the
    remaining values (spec "Manifest Lists": bounds exclude nulls and NaN)."""
    partitions = list(partitions)
    out = []
    for pos, pf in enumerate(ptype.fields):
        values = [p[pos] for p in partitions]
        is_nan = [isinstance(v, float) and math.isnan(v) for v in values]
        rest = [v for v, nan in zip(values, is_nan) if v is not None and not nan]
        floating = pf.type in (T.FLOAT, T.DOUBLE)
        out.append(FieldSummary(
            contains_null=any(v is None for v in values),
            contains_nan=any(is_nan) if floating else None,
            lower_bound=conversions.to_bytes(pf.type, min(rest)) if rest else None,
            upper_bound=conversions.to_bytes(pf.type, max(rest)) if rest else None))
    return tuple(out)


def manifest_file_of(entries: Iterable[ManifestEntry], schema: T.Schema, spec: PartitionSpec, *,
                     manifest_path: str, manifest_length: int, added_snapshot_id: int | None,
                     content: ManifestContent = ManifestContent.DATA,
                     sequence_number: int | None = None) -> ManifestFile:
    """The manifest list entry describing a manifest of `entries`: counts, partition
    summaries and min_sequence_number (None when every live entry inherits, so that the
    manifest list assigns the snapshot's sequence number)."""
    entries = list(entries)
    by_status = {s: [e for e in entries if e.status == s] for s in ManifestEntryStatus}
    live = by_status[ManifestEntryStatus.ADDED] + by_status[ManifestEntryStatus.EXISTING]
    explicit = [e.sequence_number for e in live if e.sequence_number is not None]
    # A newly assigned sequence number is above every existing one, so when some entry
    # inherits, the explicit ones (if any) hold the minimum.
    min_seq = min(explicit) if explicit else sequence_number

    def rows(s):
        return sum(e.data_file.record_count for e in by_status[s])
    return ManifestFile(
        manifest_path=manifest_path, manifest_length=manifest_length,
        partition_spec_id=spec.spec_id, added_snapshot_id=added_snapshot_id, content=content,
        sequence_number=sequence_number, min_sequence_number=min_seq,
        added_files_count=len(by_status[ManifestEntryStatus.ADDED]),
        existing_files_count=len(by_status[ManifestEntryStatus.EXISTING]),
        deleted_files_count=len(by_status[ManifestEntryStatus.DELETED]),
        added_rows_count=rows(ManifestEntryStatus.ADDED),
        existing_rows_count=rows(ManifestEntryStatus.EXISTING),
        deleted_rows_count=rows(ManifestEntryStatus.DELETED),
        partitions=summarize_partitions((e.data_file.partition for e in entries),
                                        partition_type(spec, schema)))


def listed_manifests(manifests: Iterable[ManifestFile], snapshot_id: int,
                     sequence_number: int) -> list[ManifestFile]:
    """The entries of the list `write_manifest_list(manifests, snapshot_id, _,
    sequence_number)` writes, as `read_manifest_list` reads them back (unassigned numbers
    and snapshot ids filled in), without encoding and decoding the list."""
    out = []
    for m in manifests:
        seq = sequence_number if m.sequence_number is None else m.sequence_number
        changes = {}
        if m.sequence_number is None:
            changes["sequence_number"] = seq
        if m.min_sequence_number is None:
            changes["min_sequence_number"] = seq
        if m.added_snapshot_id is None:
            changes["added_snapshot_id"] = snapshot_id
        if m.partitions is not None and not isinstance(m.partitions, tuple):
            changes["partitions"] = tuple(m.partitions)
        out.append(replace(m, **changes) if changes else m)
    return out


def assign_first_row_ids(manifests: Iterable[ManifestFile], first_row_id: int
                         ) -> tuple[list[ManifestFile], int]:
    """v3 "First Row ID Assignment": each data manifest without a first_row_id gets the next
    free id, the range growing by its added + existing rows (the spec's "simple and valid
    approach"); delete manifests and manifests that have one are kept as they are. Returns
    the manifests and the number of row ids assigned (the snapshot's `added-rows`, by which
    next-row-id advances). Called on every attempt, with that attempt's base next-row-id,
    on the manifests as listed: a manifest written once and reused by a retry carries no id."""
    out, next_id = [], first_row_id
    for m in manifests:
        if m.content == ManifestContent.DATA and m.first_row_id is None:
            rows = (m.added_rows_count or 0) + (m.existing_rows_count or 0)
            if m.added_rows_count is None or m.existing_rows_count is None:
                raise ManifestError("a manifest without row counts cannot be assigned row ids",
                                    m.manifest_path, "520 first_row_id")
            out.append(replace(m, first_row_id=next_id))
            next_id += rows
        else:
            out.append(m)
    assert next_id >= first_row_id
    return out, next_id - first_row_id


_MOVED = {"read_manifest": "manifest_reader", "read_manifest_list": "manifest_reader",
          "write_manifest": "manifest_writer", "write_manifest_list": "manifest_writer"}


def __getattr__(name):
    """The reader and writer live in manifest_reader / manifest_writer (issue 10); code
    that imported them from here keeps working."""
    if name in _MOVED:
        import importlib
        return getattr(importlib.import_module(f"icefloe.impl.format.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
