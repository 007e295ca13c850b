"""Format versions v1, v2, v3 in metadata and manifests (impl/format/metadata.py,
manifest_writer.py, manifest_reader.py, manifest.py, types.py)."""
from __future__ import annotations

import io
import json

import fastavro
import pytest

from icefloe.impl.format import types as T
from icefloe.impl.format.manifest import (
    DataFile, DataFileContent, ManifestContent, ManifestEntry, ManifestEntryStatus, ManifestError, ManifestFile,
    assign_first_row_ids, manifest_file_of,
)
from icefloe.impl.format.manifest_reader import read_manifest, read_manifest_list
from icefloe.impl.format.manifest_writer import write_manifest, write_manifest_list
from icefloe.impl.format.metadata import (
    MetadataError, Snapshot, UnsupportedFormatVersion, check_format_version, from_json, new_table_metadata,
    to_json, upgraded,
)
from icefloe.impl.format.transforms import PartitionField, PartitionSpec, parse_transform

SCHEMA = T.Schema((T.NestedField(1, "id", T.LONG, True), T.NestedField(2, "s", T.STRING, False)))
UUID = "9c12d441-03fe-4693-9a96-a0705ddf69c1"


def _meta(version: int):
    return new_table_metadata(SCHEMA, "s3://b/t", UUID, 1000, format_version=version)


def _ids(schema: dict) -> set[int]:
    out = set()
    for f in schema["fields"]:
        out.add(f.get("field-id"))
        t = f["type"]
        t = t[1] if isinstance(t, list) else t
        if isinstance(t, dict) and t.get("type") == "record":
            out |= _ids(t)
    return out - {None}


@pytest.mark.parametrize("version", [1, 2, 3])
def test_new_metadata_is_written_and_read_back_as_its_version(version):
    """Goal: a table created at v1, v2 or v3 is that version on disk and on re-read, with
    the version's own fields. Method: write, parse JSON, read back."""
    meta = _meta(version)
    doc = json.loads(to_json(meta))
    assert doc["format-version"] == version and from_json(to_json(meta), "m.json") == meta
    assert ("last-sequence-number" in doc) == (version > 1)
    assert ("schema" in doc and "partition-spec" in doc) == (version == 1)
    assert doc.get("next-row-id") == (0 if version == 3 else None)


@pytest.mark.parametrize("bad", [0, 4, -1, "x", None, True, 2.0])
def test_unsupported_versions_are_refused_by_name(bad):
    """Goal: an unknown version is an UnsupportedFormatVersion naming it, never v2. Method:
    create with each."""
    with pytest.raises(UnsupportedFormatVersion, match="format version"):
        _meta(bad)
    assert check_format_version("3") == 3


def test_upgrade_is_one_step_up_never_down():
    """Goal: v1 -> v2 -> v3 one step at a time; a skip or downgrade is refused; v3 starts
    row lineage at next-row-id 0. Method: upgraded() on each pair."""
    v1 = _meta(1)
    v2 = upgraded(v1, 2)
    v3 = upgraded(v2, 3)
    assert (v2.format_version, v3.format_version, v3.next_row_id, v2.next_row_id) == (2, 3, 0, None)
    assert upgraded(v3, 3) is v3
    for m, target, why in ((v1, 3, "one version at a time"), (v3, 2, "downgrade"), (v2, 1, "downgrade"),
                           (v3, 4, "not supported")):
        with pytest.raises(UnsupportedFormatVersion, match=why):
            upgraded(m, target)


def test_v3_types_and_defaults_need_v3_and_the_rest_are_refused_by_name():
    """Goal: timestamp_ns / unknown / defaults only in v3; variant, geometry, geography are
    refused by name. Method: create v2 and v3 tables with them, parse type strings."""
    ns = T.Schema((T.NestedField(1, "ts", T.TIMESTAMP_NS, False),
                   T.NestedField(2, "u", T.UNKNOWN, False),
                   T.NestedField(3, "d", T.INT, False, initial_default=7, write_default=8)))
    meta = new_table_metadata(ns, "s3://b/t", UUID, 1, format_version=3)
    back = from_json(to_json(meta), "m.json")
    assert back.schema() == ns and back.schema().fields[2].initial_default == 7
    field = json.loads(to_json(meta))["schemas"][0]["fields"][2]
    assert (field["initial-default"], field["write-default"]) == (7, 8)
    with pytest.raises(UnsupportedFormatVersion, match="timestamp_ns"):
        new_table_metadata(ns, "s3://b/t", UUID, 1, format_version=2)
    with pytest.raises(UnsupportedFormatVersion, match="default"):
        new_table_metadata(T.Schema((ns.fields[2],)), "s3://b/t", UUID, 1, format_version=2)
    for name in ("variant", "geometry", "geography", "geometry(srid:4326)"):
        with pytest.raises(T.UnsupportedType, match=name.split("(")[0]):
            T.type_from_json(name)
    with pytest.raises(T.FormatError, match="optional"):
        T.NestedField(9, "u", T.UNKNOWN, True)
    bad = json.loads(to_json(meta))
    bad["schemas"][0]["fields"][2]["initial-default"] = "x"
    with pytest.raises(MetadataError, match="not a int value") as info:
        from_json(json.dumps(bad), "m.json")
    assert info.value.field == "schemas[0].d.initial-default"


def test_v1_partition_fields_are_numbered_from_1000():
    """Goal: the v1 rule on partition field ids holds at create. Method: a spec numbered 1005."""
    spec = PartitionSpec(0, (PartitionField(1, 1005, parse_transform("bucket[4]"), "id_b"),))
    with pytest.raises(UnsupportedFormatVersion, match="1000"):
        new_table_metadata(SCHEMA, "s3://b/t", UUID, 1, spec, format_version=1)
    new_table_metadata(SCHEMA, "s3://b/t", UUID, 1, spec, format_version=2)


def test_v3_snapshot_lineage_fields_round_trip_and_are_checked():
    """Goal: first-row-id / added-rows are written in v3 and bounded by next-row-id.
    Method: a v3 metadata with a snapshot; one beyond next-row-id."""
    from dataclasses import replace
    from icefloe.impl.format.metadata import FrozenMap, SnapshotRef
    snap = Snapshot(5, None, 1, 10, "s3://b/t/metadata/l.avro", {"operation": "append"}, 0, 0, 40)
    meta = replace(_meta(3), snapshots=(snap,), current_snapshot_id=5, last_sequence_number=1,
                   refs=FrozenMap({"main": SnapshotRef(5)}), next_row_id=40)
    doc = json.loads(to_json(meta))
    assert (doc["snapshots"][0]["first-row-id"], doc["snapshots"][0]["added-rows"], doc["next-row-id"]) == (0, 40, 40)
    assert from_json(to_json(meta), "m.json") == meta
    with pytest.raises(MetadataError, match="next-row-id"):
        replace(meta, next_row_id=39)
    with pytest.raises(MetadataError, match="v3"):
        replace(meta, format_version=2, next_row_id=None)


def _file(name: str, rows: int, **kw) -> DataFile:
    return DataFile(f"s3://b/t/data/{name}", "PARQUET", (), rows, 100, **kw)


def test_v1_manifest_and_list_use_the_v1_schemas():
    """Goal: v1 manifests have no content or sequence numbers, a required snapshot_id and
    block_size_in_bytes; v1 lists lack 515-517; both read back. Method: write, inspect the
    Avro schema by field id, read back."""
    spec = PartitionSpec(0, ())
    entries = [ManifestEntry(ManifestEntryStatus.ADDED, _file("a", 3))]
    data = write_manifest(entries, SCHEMA, spec, format_version=1, snapshot_id=77)
    reader = fastavro.reader(io.BytesIO(data))
    ids = _ids(reader.writer_schema)
    assert {3, 4, 134, 135}.isdisjoint(ids) and {0, 1, 2, 100, 105} <= ids
    assert reader.metadata["format-version"] == "1" and "content" not in reader.metadata
    mf = manifest_file_of(entries, SCHEMA, spec, manifest_path="m", manifest_length=len(data), added_snapshot_id=77)
    listed = write_manifest_list([mf], 77, None, 0, format_version=1)
    lreader = fastavro.reader(io.BytesIO(listed))
    assert {515, 516, 517, 520}.isdisjoint(_ids(lreader.writer_schema)) and "sequence-number" not in lreader.metadata
    (back,) = read_manifest_list(listed)
    assert back.sequence_number == 0 and back.content == ManifestContent.DATA
    (entry,) = read_manifest(data, back)
    assert (entry.snapshot_id, entry.sequence_number, entry.data_file.file_path) == (77, 0, "s3://b/t/data/a")
    with pytest.raises(ManifestError, match="v1 has no delete manifests"):
        write_manifest([], SCHEMA, spec, ManifestContent.DELETES, format_version=1)
    with pytest.raises(ManifestError, match="sequence number"):
        write_manifest_list([mf], 77, None, 1, format_version=1)


def test_v3_first_row_ids_are_assigned_by_the_list_and_inherited_by_files():
    """Goal: the spec's row lineage example: manifests get first_row_id from the snapshot's
    in list order (added + existing rows each), delete manifests none; files without one
    inherit manifest first_row_id + preceding record counts, deleted entries skipped.
    Method: assign, write v3 list and manifest, read back."""
    spec = PartitionSpec(0, ())
    existing = _file("data1", 25, first_row_id=800)
    entries = [ManifestEntry(ManifestEntryStatus.EXISTING, existing, 1, 1, 1),
               ManifestEntry(ManifestEntryStatus.DELETED, _file("gone", 9, first_row_id=0), 2, 1, 1),
               ManifestEntry(ManifestEntryStatus.ADDED, _file("data2", 50)),
               ManifestEntry(ManifestEntryStatus.ADDED, _file("data3", 50))]
    data = write_manifest(entries, SCHEMA, spec, format_version=3)
    added1 = manifest_file_of(entries, SCHEMA, spec, manifest_path="added1", manifest_length=len(data),
                              added_snapshot_id=None)
    old = ManifestFile("existing", 1, 0, 3, existing_rows_count=0, added_rows_count=75, added_files_count=1,
                       existing_files_count=0, deleted_files_count=0, deleted_rows_count=0,
                       sequence_number=1, min_sequence_number=1, first_row_id=925)
    deletes = ManifestFile("dels", 1, 0, None, ManifestContent.DELETES, added_files_count=1, existing_files_count=0,
                           deleted_files_count=0, added_rows_count=4, existing_rows_count=0, deleted_rows_count=0)
    assigned, added_rows = assign_first_row_ids([old, added1, deletes], 1000)
    assert [m.first_row_id for m in assigned] == [925, 1000, None] and added_rows == 100 + 25
    listed = read_manifest_list(write_manifest_list(assigned, 9, None, 2, format_version=3))
    assert [m.first_row_id for m in listed] == [925, 1000, None]
    got = [(e.data_file.file_path.rsplit("/", 1)[1], e.data_file.first_row_id) for e in read_manifest(data, listed[1])]
    assert got == [("data1", 800), ("gone", 0), ("data2", 1000), ("data3", 1050)]
    with pytest.raises(ManifestError, match="without its first_row_id"):
        write_manifest_list([added1], 9, None, 2, format_version=3)
    with pytest.raises(ManifestError, match="first_row_id is v3"):
        write_manifest_list(assigned[:1], 9, None, 2, format_version=2)


def test_v3_dv_fields_are_written_and_read():
    """Goal: referenced_data_file, content_offset, content_size_in_bytes round-trip in a v3
    delete manifest and are refused in v2. Method: write and read a DV entry."""
    dv = DataFile("s3://b/t/data/x-deletes.puffin", "puffin", (), 3, 500, DataFileContent.POSITION_DELETES,
                  referenced_data_file="s3://b/t/data/a", content_offset=4, content_size_in_bytes=60)
    entry = ManifestEntry(ManifestEntryStatus.ADDED, dv, 5, 2, 2)
    data = write_manifest([entry], SCHEMA, PartitionSpec(0, ()), ManifestContent.DELETES, format_version=3)
    (back,) = read_manifest(data)
    assert back == entry and back.data_file.is_deletion_vector
    with pytest.raises(ManifestError, match="v3 fields"):
        write_manifest([entry], SCHEMA, PartitionSpec(0, ()), ManifestContent.DELETES, format_version=2)
    # v2: referenced_data_file is optional (file-scoped position deletes of other writers) and
    # kept on a rewrite; a manifest without it keeps the schema it always had.
    from dataclasses import replace
    pos = replace(dv, file_path="s3://b/t/data/p.parquet", file_format="PARQUET", content_offset=None,
                  content_size_in_bytes=None)
    data = write_manifest([replace(entry, data_file=pos)], SCHEMA, PartitionSpec(0, ()), ManifestContent.DELETES)
    assert read_manifest(data)[0].data_file.referenced_data_file == "s3://b/t/data/a"
    plain = write_manifest([replace(entry, data_file=replace(pos, referenced_data_file=None))], SCHEMA,
                           PartitionSpec(0, ()), ManifestContent.DELETES)
    assert 143 not in _ids(fastavro.reader(io.BytesIO(plain)).writer_schema)


def test_v1_specs_keep_their_fields_in_place():
    """Goal: a v1 table is never written with a spec that moves or renumbers partition
    fields (v1 readers find them by position); a dropped field as a void transform is fine.
    Method: v1 metadata with evolved specs, written."""
    from dataclasses import replace
    first = PartitionSpec(0, (PartitionField(1, 1000, parse_transform("bucket[4]"), "id_b"),))
    meta = new_table_metadata(SCHEMA, "s3://b/t", UUID, 1, first, format_version=1)
    voided = PartitionSpec(1, (PartitionField(1, 1000, parse_transform("void"), "id_b"),
                               PartitionField(2, 1001, parse_transform("identity"), "s")))
    ok = replace(meta, partition_specs=(first, voided), default_spec_id=1, last_partition_id=1001)
    assert from_json(to_json(ok), "m.json").spec() == voided
    moved = PartitionSpec(1, (PartitionField(2, 1000, parse_transform("identity"), "s"),))
    with pytest.raises(UnsupportedFormatVersion, match="keeps fields in place"):
        to_json(replace(meta, partition_specs=(first, moved), default_spec_id=1))
    gap = PartitionSpec(1, (PartitionField(2, 1001, parse_transform("identity"), "s"),))
    with pytest.raises(UnsupportedFormatVersion, match="1000"):
        to_json(replace(meta, partition_specs=(first, gap), default_spec_id=1, last_partition_id=1001))
