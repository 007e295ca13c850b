"""Manifests and manifest lists (impl/format/manifest.py, manifest_writer.py,
manifest_reader.py): round trips, field ids, sequence number inheritance, projections,
interop with pyiceberg in both directions, hostile input."""
from __future__ import annotations

import io
import json
import math
import uuid
from functools import partial
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import fastavro
import pytest
from hypothesis import given, strategies as st

from icefloe.impl.format import conversions, types as T
from icefloe.impl.format.manifest import (
    DataFile, DataFileContent, ManifestContent, ManifestEntry, ManifestEntryStatus,
    ManifestError, ManifestFile, manifest_file_of, summarize_partitions,
)
from icefloe.impl.format.manifest_reader import (
    ManifestReader, Projection, read_manifest, read_manifest_list, read_manifest_metadata,
)
from icefloe.impl.format.manifest_writer import write_manifest, write_manifest_list
from icefloe.impl.format.transforms import (
    BucketTransform, DayTransform, IdentityTransform, PartitionField, PartitionSpec,
    TruncateTransform, partition_type,
)

SCHEMA = T.Schema((
    T.NestedField(1, "id", T.LONG, True),
    T.NestedField(2, "cat", T.STRING, False),
    T.NestedField(3, "ts", T.TIMESTAMPTZ, False),
    T.NestedField(4, "price", T.DecimalType(9, 2), False),
    T.NestedField(5, "uid", T.UUID, False),
    T.NestedField(6, "d", T.DATE, False),
    T.NestedField(7, "x", T.DOUBLE, False),
    T.NestedField(8, "t", T.TIME, False),
    T.NestedField(9, "fx", T.FixedType(3), False),
    T.NestedField(10, "b", T.BINARY, False),
    T.NestedField(11, "ok", T.BOOLEAN, False),
    T.NestedField(12, "f", T.FLOAT, False),
    T.NestedField(13, "n", T.INT, False),
    T.NestedField(14, "local", T.TIMESTAMP, False),
), schema_id=3)
SPEC = PartitionSpec(5, (
    PartitionField(2, 1000, IdentityTransform(), "cat"),
    PartitionField(3, 1001, DayTransform(), "ts_day"),
    PartitionField(1, 1002, BucketTransform(8), "id_bucket"),
    PartitionField(2, 1003, TruncateTransform(2), "cat_trunc"),
    PartitionField(4, 1004, IdentityTransform(), "price"),
    PartitionField(5, 1005, IdentityTransform(), "uid"),
    PartitionField(6, 1006, IdentityTransform(), "d"),
    PartitionField(7, 1007, IdentityTransform(), "x"),
    PartitionField(8, 1008, IdentityTransform(), "t"),
    PartitionField(9, 1009, IdentityTransform(), "fx"),
    PartitionField(10, 1010, IdentityTransform(), "b"),
    PartitionField(11, 1011, IdentityTransform(), "ok"),
    PartitionField(12, 1012, IdentityTransform(), "f-32 bit"),
    PartitionField(13, 1013, IdentityTransform(), "1n"),
    PartitionField(3, 1014, IdentityTransform(), "ts"),
    PartitionField(14, 1015, IdentityTransform(), "local"),
))
NO_EXTRA = (None,) * 8  # values of the partition fields from 1008 on

ints = st.integers(-(2**31), 2**31 - 1)
longs = st.integers(-(2**63), 2**63 - 1)
partition_values = st.tuples(
    st.none() | st.text(max_size=5),
    st.none() | st.integers(-100_000, 100_000),
    st.none() | st.integers(0, 7),
    st.none() | st.text(max_size=2),
    st.none() | st.decimals(min_value=-9999999, max_value=9999999, places=2, allow_nan=False),
    st.none() | st.uuids(),
    st.none() | st.integers(-100_000, 100_000),
    st.none() | st.floats(allow_nan=False, width=64),
    st.none() | st.integers(0, 86_400_000_000 - 1),
    st.none() | st.binary(min_size=3, max_size=3),
    st.none() | st.binary(max_size=5),
    st.none() | st.booleans(),
    st.none() | st.floats(allow_nan=False, width=32),
    st.none() | ints,
    st.none() | st.integers(-(2**62), 2**62),
    st.none() | st.integers(-(2**62), 2**62),
)
counts = st.none() | st.dictionaries(st.integers(1, 7), st.integers(0, 2**40), max_size=4)
bounds = st.none() | st.dictionaries(st.integers(1, 7), st.binary(max_size=9), max_size=4)
data_files = st.builds(
    DataFile, file_path=st.text(min_size=1, max_size=20), file_format=st.sampled_from(["PARQUET", "AVRO"]),
    partition=partition_values, record_count=st.integers(0, 2**40),
    file_size_in_bytes=st.integers(0, 2**40), content=st.just(DataFileContent.DATA),
    column_sizes=counts, value_counts=counts, null_value_counts=counts, nan_value_counts=counts,
    lower_bounds=bounds, upper_bounds=bounds, key_metadata=st.none() | st.binary(max_size=8),
    split_offsets=st.none() | st.lists(longs, max_size=3).map(tuple),
    equality_ids=st.none(), sort_order_id=st.none() | ints)


@st.composite
def manifest_entries(draw):
    status = draw(st.sampled_from(ManifestEntryStatus))
    inherit = status == ManifestEntryStatus.ADDED and draw(st.booleans())
    seq = None if inherit else draw(st.integers(0, 50))
    return ManifestEntry(status=status, data_file=draw(data_files),
                         snapshot_id=None if inherit else draw(longs),
                         sequence_number=seq,
                         file_sequence_number=None if inherit else draw(st.integers(0, 50)))


def simple_file(path: str, partition: tuple, rows: int = 10) -> DataFile:
    return DataFile(path, "PARQUET", partition, rows, 1000)


def partition_of(cat, day=None):
    return (cat, day, None, None if cat is None else cat[:2], None, None, None, None) + NO_EXTRA


NO_STATS = Projection.WITHOUT_COLUMN_STATS


def without_stats(entry: ManifestEntry) -> ManifestEntry:
    """`entry` as read in Projection.WITHOUT_COLUMN_STATS."""
    return replace(entry, data_file=replace(entry.data_file, **{
        f: None for f in ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts",
                          "lower_bounds", "upper_bounds")}))


@given(st.lists(manifest_entries(), max_size=4))
def test_manifest_round_trip(entries):
    """Goal: a written manifest reads back unchanged, and without its column statistics
    reads back the same except for those. Method: Hypothesis entries over every
    partition value kind, write then read (both ways) without inheritance, compare."""
    data = write_manifest(entries, SCHEMA, SPEC)
    assert read_manifest(data) == entries
    assert read_manifest(data, projection=NO_STATS) == [without_stats(e) for e in entries]
    partial, some, every = read_selectively(data)
    assert partial == [without_stats(e) for e in entries]
    assert some == entries[1::2] and every == entries


def read_selectively(data: bytes, manifest_file: ManifestFile | None = None):
    """The filtered plan's path through one ManifestReader: every entry without column
    statistics, then every second one with all fields (decoded one by one), then all."""
    reader = ManifestReader(data, manifest_file)
    partial = reader.read_entries(NO_STATS)
    flags = iter([False, True] * len(partial))
    some = reader.read_entries(Projection.ALL, keep=lambda e: next(flags))
    return partial, some, reader.read_entries(Projection.ALL, keep=lambda e: True)


@given(st.lists(manifest_entries(), max_size=8), st.data())
def test_read_matching_keeps_the_live_entries_whose_partition_matches(entries, data):
    """Goal: the filtered plan's read (a partition index, then the kept entries in full)
    gives exactly the live entries whose partition tuple the predicate keeps, asking once
    per distinct partition, from a fresh reader and after each other read. Method:
    Hypothesis entries over every partition value kind (decimal, uuid, fixed: converted
    from their Avro form), a predicate keeping a drawn subset of their partitions; compare
    with a plain filter of the full read."""
    written = write_manifest(entries, SCHEMA, SPEC)
    partitions = [e.data_file.partition for e in entries]
    chosen = {partitions[i] for i in data.draw(st.sets(st.integers(0, max(len(entries) - 1, 0))))} \
        if entries else set()
    expected = [e for e in entries if e.status != ManifestEntryStatus.DELETED and e.data_file.partition in chosen]
    live = {e.data_file.partition for e in entries if e.status != ManifestEntryStatus.DELETED}
    for before in ([], [NO_STATS], [Projection.ALL], [NO_STATS, Projection.ALL]):
        reader = ManifestReader(written)
        for projection in before:
            reader.read_entries(projection)
        asked = []
        assert reader.read_matching(lambda p: asked.append(p) or p in chosen) == expected, before
        assert len(asked) == len(live) and set(asked) == live
        assert reader.read_matching(lambda p: p in chosen) == expected  # the index (or entries) reused
        assert reader.read_entries(Projection.ALL) == entries  # after the index: each record again
    reader = ManifestReader(written)
    assert reader.read_matching(lambda p: p in chosen) == expected
    assert reader.read_entries(NO_STATS) == [without_stats(e) for e in entries]
    assert reader.read_matching(lambda p: p in chosen) == expected


@given(st.lists(manifest_entries(), max_size=4), st.integers(0, 100))
def test_manifest_list_round_trip(entries, seq):
    """Goal: manifest_file_of + manifest list round trip keep counts and summaries. Method:
    Hypothesis entries; compare the read list entry with the written one (sequence numbers
    assigned)."""
    data = write_manifest(entries, SCHEMA, SPEC)
    mf = manifest_file_of(entries, SCHEMA, SPEC, manifest_path="m.avro", manifest_length=len(data),
                          added_snapshot_id=42)
    explicit = [e.sequence_number for e in entries
                if e.status != ManifestEntryStatus.DELETED and e.sequence_number is not None]
    snapshot_seq = max([seq, *(e.sequence_number or 0 for e in entries)])
    (back,) = read_manifest_list(write_manifest_list([mf], 42, 41, snapshot_seq))
    assert back.sequence_number == snapshot_seq
    assert back.min_sequence_number == (min(explicit) if explicit else snapshot_seq)
    assert back == replace(mf, **{"sequence_number": snapshot_seq,
                                   "min_sequence_number": back.min_sequence_number})


@given(st.lists(partition_values, max_size=8))
def test_partition_summaries_match_brute_force(partitions):
    """Goal: field summaries are null/NaN flags and min/max of the rest. Method: compare
    summarize_partitions with a direct computation per field."""
    ptype = partition_type(SPEC, SCHEMA)
    summaries = summarize_partitions(partitions, ptype)
    for pos, (f, s) in enumerate(zip(ptype.fields, summaries)):
        values = [p[pos] for p in partitions if p[pos] is not None]
        assert s.contains_null == any(p[pos] is None for p in partitions)
        decoded = (None if s.lower_bound is None else conversions.from_bytes(f.type, s.lower_bound),
                   None if s.upper_bound is None else conversions.from_bytes(f.type, s.upper_bound))
        assert decoded == ((min(values), max(values)) if values else (None, None))


def test_summaries_exclude_nan():
    """Goal: NaN sets contains_nan and is not a bound. Method: summarize a double field
    holding NaN, 1.5 and null."""
    ptype = T.StructType((T.NestedField(1000, "x", T.DOUBLE, False),))
    (s,) = summarize_partitions([(math.nan,), (1.5,), (None,)], ptype)
    assert (s.contains_null, s.contains_nan) == (True, True)
    assert conversions.from_bytes(T.DOUBLE, s.lower_bound) == 1.5 == conversions.from_bytes(T.DOUBLE, s.upper_bound)


def _walk_avro(t, path, out):
    if isinstance(t, list):
        for b in t:
            _walk_avro(b, path, out)
    elif isinstance(t, dict) and t.get("type") == "record":
        for f in t["fields"]:
            out.append((f"{path}.{f['name']}", f.get("field-id")))
            _walk_avro(f["type"], f"{path}.{f['name']}", out)
    elif isinstance(t, dict) and t.get("type") == "array":
        if t.get("logicalType") != "map":
            out.append((f"{path}[element]", t.get("element-id")))
        _walk_avro(t["items"], path, out)


def test_written_avro_schemas_carry_field_ids_and_metadata():
    """Goal: every field of both files has the spec's id, and the headers the required
    metadata. Method: read the Avro headers with fastavro and walk the schemas."""
    entry = ManifestEntry(ManifestEntryStatus.ADDED, simple_file("a", partition_of("xy")))
    data = write_manifest([entry], SCHEMA, SPEC)
    reader = fastavro.reader(io.BytesIO(data))
    ids: list = []
    _walk_avro(reader.writer_schema, "", ids)
    missing = [p for p, fid in ids if not isinstance(fid, int)]
    assert not missing
    by_path = dict(ids)
    assert by_path[".data_file.partition.ts_day"] == 1001
    assert by_path[".data_file.lower_bounds.key"] == 126 and by_path[".data_file.split_offsets[element]"] == 133
    meta = reader.metadata
    assert json.loads(meta["schema"])["fields"][0] == {"id": 1, "name": "id", "required": True, "type": "long"}
    assert (meta["schema-id"], meta["partition-spec-id"], meta["format-version"], meta["content"]) == ("3", "5", "2", "data")
    assert [f["field-id"] for f in json.loads(meta["partition-spec"])] == list(range(1000, 1016))
    assert by_path[".data_file.partition.f_x2D32_x20bit"] == 1012 and by_path[".data_file.partition._1n"] == 1013

    mf = manifest_file_of([entry], SCHEMA, SPEC, manifest_path="m", manifest_length=len(data), added_snapshot_id=1)
    lreader = fastavro.reader(io.BytesIO(write_manifest_list([mf], 7, None, 4)))
    ids = []
    _walk_avro(lreader.writer_schema, "", ids)
    assert not [p for p, fid in ids if not isinstance(fid, int)]
    assert dict(ids)[".partitions[element]"] == 508 and dict(ids)[".partitions.contains_nan"] == 518
    assert {k: lreader.metadata[k] for k in ("snapshot-id", "parent-snapshot-id", "sequence-number", "format-version")} \
        == {"snapshot-id": "7", "parent-snapshot-id": "null", "sequence-number": "4", "format-version": "2"}


def test_sequence_number_inheritance():
    """Goal: ADDED entries with null numbers inherit the manifest's, others keep theirs,
    null snapshot ids inherit added_snapshot_id. Method: write a manifest, list it with
    an unassigned sequence number, read both back."""
    added = ManifestEntry(ManifestEntryStatus.ADDED, simple_file("new", partition_of("a")))
    existing = ManifestEntry(ManifestEntryStatus.EXISTING, simple_file("old", partition_of("b")), 11, 3, 2)
    deleted = ManifestEntry(ManifestEntryStatus.DELETED, simple_file("gone", partition_of("c")), None, 1, 1)
    data = write_manifest([added, existing, deleted], SCHEMA, SPEC)
    mf = manifest_file_of([added, existing, deleted], SCHEMA, SPEC, manifest_path="m",
                          manifest_length=len(data), added_snapshot_id=None)
    assert mf.sequence_number is None and mf.min_sequence_number == 3
    (listed,) = read_manifest_list(write_manifest_list([mf], 99, 98, 7))
    assert (listed.sequence_number, listed.min_sequence_number, listed.added_snapshot_id) == (7, 3, 99)
    a, e, d = read_manifest(data, listed)
    assert (a.snapshot_id, a.sequence_number, a.file_sequence_number) == (99, 7, 7)
    assert (e.snapshot_id, e.sequence_number, e.file_sequence_number) == (11, 3, 2)
    assert (d.snapshot_id, d.sequence_number, d.file_sequence_number) == (99, 1, 1)
    # Only new files: min_sequence_number is unassigned too, so it becomes the snapshot's.
    only_new = manifest_file_of([added], SCHEMA, SPEC, manifest_path="n", manifest_length=1, added_snapshot_id=99)
    (listed,) = read_manifest_list(write_manifest_list([only_new], 99, None, 8))
    assert (listed.sequence_number, listed.min_sequence_number) == (8, 8)


def test_v1_manifest_list_entries_inherit_zero_for_every_status():
    """Goal: a manifest listed with sequence number 0 (v1) gives 0 to every null number.
    Method: read an EXISTING entry with null numbers through a list entry of sequence 0."""
    entry = ManifestEntry(ManifestEntryStatus.ADDED, simple_file("f", partition_of("a")))
    data = write_manifest([entry], SCHEMA, SPEC)
    mf = ManifestFile("m", len(data), 5, added_snapshot_id=3, sequence_number=0, min_sequence_number=0)
    assert read_manifest(data, mf)[0].sequence_number == 0


def test_write_rejects_existing_entry_without_sequence_numbers():
    """Goal: only ADDED entries may leave sequence numbers to inheritance. Method: write an
    EXISTING entry with null numbers, expect ManifestError."""
    entry = ManifestEntry(ManifestEntryStatus.EXISTING, simple_file("f", partition_of("a")), 1)
    with pytest.raises(ManifestError, match="sequence"):
        write_manifest([entry], SCHEMA, SPEC)


def test_write_rejects_delete_file_in_data_manifest():
    """Goal: manifest content and file content agree. Method: put a position-delete file in a
    data manifest and a data file in a delete manifest, expect ManifestError both times."""
    deletes = DataFile("d", "PARQUET", partition_of("a"), 1, 1, content=DataFileContent.POSITION_DELETES)
    with pytest.raises(ManifestError, match="content"):
        write_manifest([ManifestEntry(ManifestEntryStatus.ADDED, deletes)], SCHEMA, SPEC)
    with pytest.raises(ManifestError, match="content"):
        write_manifest([ManifestEntry(ManifestEntryStatus.ADDED, simple_file("f", partition_of("a")))],
                       SCHEMA, SPEC, ManifestContent.DELETES)
    data = write_manifest([ManifestEntry(ManifestEntryStatus.ADDED, deletes)], SCHEMA, SPEC, ManifestContent.DELETES)
    assert read_manifest_metadata(data)["content"] == "deletes"
    assert read_manifest(data)[0].data_file.content == DataFileContent.POSITION_DELETES


# -- interop with pyiceberg ----------------------------------------------------------------

def test_pyiceberg_reads_our_manifest_list_and_manifests(tmp_path: Path):
    """Goal: pyiceberg reads what we write. Method: write a manifest and its list to local
    files, read them with pyiceberg's read_manifest_list/fetch_manifest_entry, compare."""
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import read_manifest_list as pi_read_manifest_list

    entries = [
        ManifestEntry(ManifestEntryStatus.ADDED, DataFile(
            f"file://{tmp_path}/d{i}.parquet", "PARQUET",
            ("c", 19_000 + i, i, "c", Decimal("1.25"), uuid.UUID(int=i), 5, 0.5, 3_600_000_001, b"abc",
             b"\x00\x01", True, 1.5, -7, -1_000_000_000_000_001, 2**40), 10 + i, 100 + i,
            value_counts={1: 10 + i}, lower_bounds={1: conversions.to_bytes(T.LONG, i)}, split_offsets=(4,)))
        for i in range(3)
    ] + [ManifestEntry(ManifestEntryStatus.EXISTING, simple_file(f"file://{tmp_path}/old", partition_of(None)), 5, 2, 2)]
    manifest_path = tmp_path / "m0.avro"
    manifest_path.write_bytes(write_manifest(entries, SCHEMA, SPEC))
    mf = manifest_file_of(entries, SCHEMA, SPEC, manifest_path=f"file://{manifest_path}",
                          manifest_length=manifest_path.stat().st_size, added_snapshot_id=77)
    list_path = tmp_path / "snap.avro"
    list_path.write_bytes(write_manifest_list([mf], 77, 76, 9))

    fileio = PyArrowFileIO()
    (theirs,) = list(pi_read_manifest_list(fileio.new_input(f"file://{list_path}")))
    assert (theirs.manifest_path, theirs.sequence_number, theirs.min_sequence_number) == (mf.manifest_path, 9, 2)
    assert (theirs.added_files_count, theirs.existing_files_count, theirs.added_rows_count) == (3, 1, 33)
    assert theirs.partitions[0].lower_bound == b"c" and theirs.partitions[0].contains_null
    got = theirs.fetch_manifest_entry(fileio, discard_deleted=False)
    assert [e.data_file.file_path for e in got] == [e.data_file.file_path for e in entries]
    assert [(e.snapshot_id, e.sequence_number) for e in got] == [(77, 9)] * 3 + [(5, 2)]
    assert got[1].data_file.record_count == 11 and got[1].data_file.value_counts == {1: 11}
    assert tuple(got[2].data_file.partition) == entries[2].data_file.partition


@pytest.mark.parametrize("format_version", [1, 2])
def test_we_read_what_pyiceberg_wrote(tmp_path: Path, format_version: int):
    """Goal: we read pyiceberg's v1 and v2 manifest lists and manifests as pyiceberg does.
    Method: a SqlCatalog table on temp SQLite, append twice, delete and overwrite; for
    every snapshot compare our reading of its list and manifests with pyiceberg's, and our
    read by partition with a filter of our full read."""
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg_history import pyiceberg_table_with_history

    table = pyiceberg_table_with_history(tmp_path, format_version)
    fileio = PyArrowFileIO()
    assert len(table.metadata.snapshots) >= 4 and table.metadata.format_version == format_version
    for snapshot in table.metadata.snapshots:
        ours = read_manifest_list(Path(snapshot.manifest_list.removeprefix("file://")).read_bytes(),
                                  snapshot.manifest_list)
        theirs = snapshot.manifests(fileio)
        assert [m.manifest_path for m in ours] == [m.manifest_path for m in theirs]
        for o, t in zip(ours, theirs):
            assert (o.sequence_number, o.min_sequence_number, o.added_snapshot_id, o.partition_spec_id) \
                == (t.sequence_number, t.min_sequence_number, t.added_snapshot_id, t.partition_spec_id)
            assert (o.added_files_count, o.existing_files_count, o.deleted_files_count) \
                == (t.added_files_count, t.existing_files_count, t.deleted_files_count)
            assert (o.added_rows_count, o.existing_rows_count, o.deleted_rows_count) \
                == (t.added_rows_count, t.existing_rows_count, t.deleted_rows_count)
            assert [(s.contains_null, s.lower_bound, s.upper_bound) for s in o.partitions] \
                == [(s.contains_null, s.lower_bound, s.upper_bound) for s in t.partitions]
            our_entries = read_manifest(Path(o.manifest_path.removeprefix("file://")).read_bytes(), o)
            their_entries = t.fetch_manifest_entry(fileio, discard_deleted=False)
            assert [(int(e.status), e.snapshot_id, e.sequence_number, e.file_sequence_number,
                     e.data_file.file_path, e.data_file.partition, e.data_file.record_count,
                     e.data_file.value_counts, e.data_file.lower_bounds) for e in our_entries] \
                == [(int(e.status), e.snapshot_id, e.sequence_number, e.file_sequence_number,
                     e.data_file.file_path, tuple(e.data_file.partition), e.data_file.record_count,
                     e.data_file.value_counts, e.data_file.lower_bounds) for e in their_entries]
            assert sum(e.status == ManifestEntryStatus.ADDED for e in our_entries) == o.added_files_count
            for cat in ("a", "b", None):  # a filtered plan's read of pyiceberg's manifest
                by_partition = ManifestReader(Path(o.manifest_path.removeprefix("file://")).read_bytes(),
                                              o).read_matching(lambda p, cat=cat: p == (cat,))
                assert by_partition == [e for e in our_entries if e.status != ManifestEntryStatus.DELETED
                                        and e.data_file.partition == (cat,)]
            if format_version == 1:
                assert o.sequence_number == 0 and all(e.sequence_number == 0 for e in our_entries)


# -- hostile input -------------------------------------------------------------------------

def _avro(schema: dict, records: list[dict]) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records)
    return out.getvalue()


def test_manifest_without_field_ids_raises_manifest_error():
    """Goal: a manifest whose schema lacks field ids is a typed error naming file and
    field. Method: write a manifest_entry-shaped Avro file without ids, read it."""
    schema = {"type": "record", "name": "manifest_entry", "fields": [
        {"name": "status", "type": "int"},
        {"name": "data_file", "type": {"type": "record", "name": "r2", "fields": [
            {"name": "file_path", "type": "string"}]}}]}
    data = _avro(schema, [{"status": 1, "data_file": {"file_path": "x"}}])
    with pytest.raises(ManifestError) as info:
        read_manifest(data, location="s3://b/m.avro")
    assert "s3://b/m.avro" in str(info.value) and info.value.field == "2 data_file"


def test_manifest_list_missing_required_id_raises_manifest_error():
    """Goal: a manifest list lacking a required id (502) is a typed error. Method: strip the
    partition_spec_id field id from a written list's schema, rewrite, read."""
    mf = ManifestFile("m", 1, 0, 5, sequence_number=1, min_sequence_number=1, added_files_count=0,
                      existing_files_count=0, deleted_files_count=0, added_rows_count=0,
                      existing_rows_count=0, deleted_rows_count=0)
    reader = fastavro.reader(io.BytesIO(write_manifest_list([mf], 5, None, 1)))
    schema, records = reader.writer_schema, list(reader)
    for f in schema["fields"]:
        if f["name"] == "partition_spec_id":
            del f["field-id"]
    with pytest.raises(ManifestError) as info:
        read_manifest_list(_avro(schema, records), "snap-5.avro")
    assert info.value.field == "502 partition_spec_id" and "snap-5.avro" in str(info.value)


@given(st.integers(0, 10_000), st.binary(max_size=8))
def test_truncated_or_corrupt_files_raise_manifest_error(cut, junk):
    """Goal: truncated or corrupted bytes never escape as anything but ManifestError.
    Method: cut a valid manifest (and list) at a random point, append junk, read."""
    entry = ManifestEntry(ManifestEntryStatus.ADDED, simple_file("f", partition_of("abc", 3)))
    data = write_manifest([entry] * 3, SCHEMA, SPEC)
    broken = data[: cut % len(data)] + junk
    for projection in Projection:
        try:
            result = read_manifest(broken, projection=projection)
        except ManifestError:
            pass
        else:
            # Some cuts land exactly after a complete block; what is read must then be valid
            # (without the list entry's counts to check against; see test_integrity.py).
            assert all(e == (entry if projection is Projection.ALL else without_stats(entry)) for e in result)
    try:
        assert all(e == entry for e in read_selectively(broken)[2])
    except ManifestError:
        pass
    try:
        assert all(e == entry for e in ManifestReader(broken).read_matching(lambda p: True))
    except ManifestError:
        pass
    try:
        read_manifest_list(broken)
    except ManifestError:
        pass
    with pytest.raises(ManifestError):
        read_manifest(b"not avro at all")


@given(st.integers(0, 10_000), st.integers(1, 255), st.booleans())
def test_corrupted_bytes_raise_manifest_error_or_read_validly(position, xor, list_file):
    """Goal: a flipped byte anywhere (header, schema, blocks) gives ManifestError or a valid
    read, never another exception. Method: flip one byte of a written manifest or manifest
    list and read it."""
    entry = ManifestEntry(ManifestEntryStatus.ADDED, simple_file("f", partition_of("abc", 3)))
    data = write_manifest([entry] * 3, SCHEMA, SPEC)
    if list_file:
        data = write_manifest_list([manifest_file_of([entry], SCHEMA, SPEC, manifest_path="m",
                                                     manifest_length=len(data), added_snapshot_id=1)], 1, None, 1)
    broken = bytearray(data)
    broken[position % len(data)] ^= xor
    readers = [read_manifest_list] if list_file else [read_manifest, partial(read_manifest, projection=NO_STATS),
                                                      lambda data: read_selectively(data)[2],
                                                      lambda data: ManifestReader(data).read_matching(bool)]
    for read in readers:
        try:
            result = read(bytes(broken))
        except ManifestError:
            continue
        assert all(isinstance(x, ManifestFile if list_file else ManifestEntry) for x in result)


def test_unknown_fields_from_newer_writers_are_ignored():
    """Goal: fields we do not know (later versions' additions, vendor extras) do not disturb reading.
    Method: re-encode a written manifest and list with extra fields (with and without ids)
    in every record, read both, compare with the originals."""
    entry = ManifestEntry(ManifestEntryStatus.ADDED, simple_file("f", partition_of("ab", 3)), 4, 2, 2)
    data = write_manifest([entry], SCHEMA, SPEC)
    reader = fastavro.reader(io.BytesIO(write_manifest([entry], SCHEMA, SPEC)))
    schema, records = reader.writer_schema, list(reader)
    schema["fields"].insert(0, {"name": "vendor_note", "type": "string"})
    data_file = next(f for f in schema["fields"] if f["name"] == "data_file")["type"]
    data_file["fields"].append({"name": "future_stat", "type": ["null", "long"], "default": None, "field-id": 9142})
    for r in records:
        r["vendor_note"] = "hello"
        r["data_file"]["future_stat"] = 7
    assert read_manifest(_avro(schema, records)) == read_manifest(data) == [entry]
    assert read_manifest(_avro(schema, records), projection=NO_STATS) == [without_stats(entry)]

    mf = manifest_file_of([entry], SCHEMA, SPEC, manifest_path="m", manifest_length=1, added_snapshot_id=4)
    reader = fastavro.reader(io.BytesIO(write_manifest_list([mf], 4, None, 2)))
    schema, records = reader.writer_schema, list(reader)
    schema["fields"].append({"name": "future_count", "type": ["null", "long"], "default": None, "field-id": 9520})
    for r in records:
        r["future_count"] = 1
    assert read_manifest_list(_avro(schema, records)) == read_manifest_list(write_manifest_list([mf], 4, None, 2))


def test_named_type_references_read_like_definitions():
    """Goal: a partition type written once and referenced by name later (as Java's writer
    does for two decimal(9, 2) fields) decodes the same. Method: rewrite a manifest's schema
    so the second decimal and uuid fields refer to the first by name; read it back."""
    schema = T.Schema((T.NestedField(1, "a", T.DecimalType(9, 2), False), T.NestedField(2, "b", T.DecimalType(9, 2), False),
                       T.NestedField(3, "u", T.UUID, False), T.NestedField(4, "v", T.UUID, False)))
    spec = PartitionSpec(0, tuple(PartitionField(i, 999 + i, IdentityTransform(), n) for i, n in
                                  [(1, "a"), (2, "b"), (3, "u"), (4, "v")]))
    entry = ManifestEntry(ManifestEntryStatus.ADDED, DataFile(
        "f", "PARQUET", (Decimal("1.50"), Decimal("-2.25"), uuid.UUID(int=1), uuid.UUID(int=2)), 1, 1))
    reader = fastavro.reader(io.BytesIO(write_manifest([entry], schema, spec)))
    avro_schema, records = reader.writer_schema, list(reader)
    partition = next(f for f in next(f for f in avro_schema["fields"] if f["name"] == "data_file")["type"]["fields"]
                     if f["name"] == "partition")["type"]
    by_name = {f["name"]: f for f in partition["fields"]}
    by_name["a"]["type"][1]["name"] = "decimal_9_2"
    by_name["b"]["type"][1] = "decimal_9_2"
    by_name["u"]["type"][1]["name"] = "uuid_fixed"
    by_name["v"]["type"][1] = "uuid_fixed"
    rewritten = _avro(avro_schema, records)
    assert '"decimal_9_2"]' in fastavro.reader(io.BytesIO(rewritten)).metadata["avro.schema"].replace(" ", "")
    assert read_manifest(rewritten) == read_manifest(rewritten, projection=NO_STATS) == [entry]


@pytest.mark.parametrize("codec", ["null", "deflate", "bzip2", "xz", "zstandard"])
def test_manifest_projections_read_every_codec(codec):
    """Goal: every projection, and the selective read, agree with the full read whatever
    the container's codec, on a partitioned and an unpartitioned manifest. Method:
    re-encode written manifests with `codec` (fastavro, several blocks), read them every
    way, compare."""
    if codec == "zstandard":
        pytest.importorskip("zstandard", reason="the zstandard codec needs the package (a pyiceberg dependency)")
    stats = {1: 5, 2: 0}
    entry = ManifestEntry(ManifestEntryStatus.ADDED, replace(
        simple_file("f", partition_of("ab", 3)), value_counts=stats, null_value_counts=stats,
        lower_bounds={1: b"a"}, upper_bounds={1: b"z"}, split_offsets=(4, 100)), 4, 2, 2)
    unpartitioned = PartitionSpec(0, ())
    plain = replace(entry, data_file=replace(entry.data_file, partition=()))
    for e, spec in ((entry, SPEC), (plain, unpartitioned)):
        reader = fastavro.reader(io.BytesIO(write_manifest([e] * 3, SCHEMA, spec)))
        schema, records = reader.writer_schema, list(reader)
        out = io.BytesIO()
        fastavro.writer(out, fastavro.parse_schema(schema), records, codec="null" if codec == "zstandard" else codec,
                        sync_interval=200)
        data = out.getvalue() if codec != "zstandard" else _zstandard_container(out.getvalue())
        assert read_manifest(data) == [e] * 3
        assert read_manifest(data, projection=NO_STATS) == [without_stats(e)] * 3
        assert read_selectively(data) == ([without_stats(e)] * 3, [e], [e] * 3)


def _zstandard_container(data: bytes) -> bytes:
    """`data` (a null-codec container) with every block compressed by zstandard, as Java
    writes them (fastavro 1.13 writes this codec only with another package)."""
    import zstandard
    from icefloe.impl.format import avro_container
    from icefloe.impl.format.avro_decode import read_long
    c = avro_container.open_container(data)
    header = io.BytesIO()
    meta = {k: v.encode() for k, v in c.metadata.items()}
    meta["avro.codec"] = b"zstandard"
    fastavro.schemaless_writer(header, {"type": "record", "name": "Header", "fields": [
        {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
        {"name": "meta", "type": {"type": "map", "values": "bytes"}},
        {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}}]},
        {"magic": avro_container.MAGIC, "meta": meta, "sync": c.sync})
    out, pos = [header.getvalue()], c.start
    while pos < len(data):
        count, pos = read_long(data, pos)
        size, pos = read_long(data, pos)
        block = zstandard.ZstdCompressor().compress(data[pos:pos + size])
        encoded = io.BytesIO()
        fastavro.schemaless_writer(encoded, "long", count)
        fastavro.schemaless_writer(encoded, "long", len(block))
        out += [encoded.getvalue(), block, c.sync]
        pos += size + 16
    return b"".join(out)


def test_unknown_codec_is_a_manifest_error():
    """Goal: a codec the reader does not know is a typed error naming the file. Method:
    rename the codec in a written manifest's header; read it."""
    data = write_manifest([ManifestEntry(ManifestEntryStatus.ADDED, simple_file("f", partition_of("ab")))],
                          SCHEMA, SPEC)
    renamed = data.replace(b"deflate", b"deflat3", 1)
    with pytest.raises(ManifestError, match="deflat3") as info:
        read_manifest(renamed, location="m-1.avro")
    assert "m-1.avro" in str(info.value)
