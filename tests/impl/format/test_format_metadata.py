"""Table metadata JSON: round trips, helpers, invariants, and typed errors on bad input."""
from __future__ import annotations

import dataclasses
import json

import pytest
from format_strategies import schemas
from hypothesis import given, strategies as st

from icefloe.impl.format.metadata import (
    FrozenMap, MetadataError, MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotRef,
    TableMetadata, from_json, new_table_metadata, to_json,
)
from icefloe.impl.format.transforms import (
    BucketTransform, IdentityTransform, PartitionField, PartitionSpec, SortField, SortOrder,
)
from icefloe.impl.format.types import LONG, STRING, NestedField, Schema

LOCATION = "s3://bucket/t/metadata/00001-abc.metadata.json"
TABLE_UUID = "9c12d441-03fe-4693-9a96-a0705ddf69c1"
SCHEMA = Schema((NestedField(1, "id", LONG, True), NestedField(2, "s", STRING, False)), 0, (1,))

SPEC_V2_FIELDS = {
    "format-version", "table-uuid", "location", "last-sequence-number", "last-updated-ms",
    "last-column-id", "schemas", "current-schema-id", "partition-specs", "default-spec-id",
    "last-partition-id", "sort-orders", "default-sort-order-id", "properties",
    "current-snapshot-id", "snapshots", "snapshot-log", "metadata-log", "refs", "statistics",
    "partition-statistics",
}


def append(meta: TableMetadata, snapshot_id: int, timestamp_ms: int, branch: str = "main",
           operation: str = "append") -> TableMetadata:
    """A pure commit action, as the commit path will write them: add a snapshot on `branch`."""
    parent = meta.refs.get(branch) or meta.refs.get("main")  # a new branch forks from main
    seq = meta.last_sequence_number + 1
    snap = Snapshot(snapshot_id, parent.snapshot_id if parent else None, seq, timestamp_ms,
                    f"s3://bucket/t/metadata/snap-{snapshot_id}.avro",
                    FrozenMap({"operation": operation}), meta.current_schema_id)
    refs = dict(meta.refs)
    refs[branch] = SnapshotRef(snapshot_id, "branch")
    main = branch == "main"
    return dataclasses.replace(
        meta, last_sequence_number=seq, last_updated_ms=timestamp_ms,
        snapshots=meta.snapshots + (snap,), refs=FrozenMap(refs),
        current_snapshot_id=snapshot_id if main else meta.current_snapshot_id,
        snapshot_log=meta.snapshot_log + ((SnapshotLogEntry(timestamp_ms, snapshot_id),) if main else ()))


def example() -> TableMetadata:
    spec = PartitionSpec(1, (PartitionField(1, 1000, BucketTransform(4), "id_bucket"),))
    order = SortOrder(1, (SortField(2, IdentityTransform(), "desc", "nulls-last"),))
    meta = new_table_metadata(SCHEMA, "s3://bucket/t", TABLE_UUID, 1000, spec, order,
                              {"owner": "icefloe"})
    meta = append(meta, 11, 2000)
    meta = append(meta, 12, 3000)
    meta = append(meta, 21, 3500, branch="audit")
    meta = append(meta, 13, 4000, operation="overwrite")
    refs = dict(meta.refs, v1=SnapshotRef(12, "tag", max_ref_age_ms=86_400_000))
    return dataclasses.replace(meta, refs=FrozenMap(refs), metadata_log=(
        MetadataLogEntry(1000, "s3://bucket/t/metadata/00000-x.metadata.json"),))


def test_to_json_writes_every_field_and_round_trips():
    """Goal: every v2 field is written with the spec's key and read back. Method: a rich table."""
    meta = example()
    doc = json.loads(to_json(meta))
    assert set(doc) == SPEC_V2_FIELDS
    assert doc["current-snapshot-id"] == 13 and doc["refs"]["main"] == {"snapshot-id": 13, "type": "branch"}
    assert doc["refs"]["v1"] == {"snapshot-id": 12, "type": "tag", "max-ref-age-ms": 86_400_000}
    assert doc["snapshots"][1] == {
        "snapshot-id": 12, "parent-snapshot-id": 11, "sequence-number": 2, "timestamp-ms": 3000,
        "manifest-list": "s3://bucket/t/metadata/snap-12.avro", "summary": {"operation": "append"},
        "schema-id": 0}
    assert "parent-snapshot-id" not in doc["snapshots"][0]
    assert doc["last-partition-id"] == 1000 and doc["last-column-id"] == 2
    assert from_json(to_json(meta), LOCATION) == meta


def test_empty_table_writes_null_current_snapshot():
    """Goal: no snapshot is written null; null, -1, absent read as None. Method: edited docs."""
    meta = new_table_metadata(SCHEMA, "s3://bucket/t", TABLE_UUID, 1000)
    doc = json.loads(to_json(meta))
    assert doc["current-snapshot-id"] is None and doc["refs"] == {} and doc["last-partition-id"] == 999
    for value in (-1, None):
        assert from_json(json.dumps(dict(doc, **{"current-snapshot-id": value})), LOCATION) == meta
    del doc["current-snapshot-id"]
    assert from_json(json.dumps(doc), LOCATION) == meta


def test_main_branch_is_implied_by_current_snapshot():
    """Goal: without refs, main comes from current-snapshot-id. Method: drop refs from a doc."""
    doc = json.loads(to_json(append(new_table_metadata(SCHEMA, "s3://b/t", TABLE_UUID, 1), 5, 2)))
    del doc["refs"]
    meta = from_json(json.dumps(doc), LOCATION)
    assert meta.refs == {"main": SnapshotRef(5, "branch")}


def test_helpers_walk_history():
    """Goal: lookups, ancestry and time travel mean what the spec says. Method: example + expiry."""
    meta = example()
    assert meta.current_snapshot().snapshot_id == 13
    assert meta.ref_head("audit").snapshot_id == 21 and meta.ref_head("nope") is None
    assert [s.snapshot_id for s in meta.ancestors_of(13)] == [13, 12, 11]
    assert [s.snapshot_id for s in meta.ancestors_of(21)] == [21, 12, 11]
    assert list(meta.ancestors_of(99)) == []
    assert meta.snapshot_as_of(999) is None
    assert meta.snapshot_as_of(3999).snapshot_id == 12 and meta.snapshot_as_of(4000).snapshot_id == 13
    assert meta.snapshot_by_id(13).operation == "overwrite"
    assert meta.schema() == SCHEMA and meta.spec().spec_id == 1 and meta.sort_order().order_id == 1
    expired = dataclasses.replace(meta, snapshots=tuple(s for s in meta.snapshots if s.snapshot_id != 12),
                                  refs=FrozenMap({k: v for k, v in meta.refs.items() if k != "v1"}))
    assert [s.snapshot_id for s in expired.ancestors_of(13)] == [13]
    assert expired.snapshot_as_of(3999) is None


def test_actions_cannot_build_invalid_metadata():
    """Goal: invariants guard action-built values too. Method: dataclasses.replace breaking each."""
    meta = example()
    for changes in ({"refs": FrozenMap(dict(meta.refs, x=SnapshotRef(404)))},
                    {"properties": FrozenMap({"a": 1})}, {"last_column_id": 0},
                    {"current_snapshot_id": None}):
        with pytest.raises(MetadataError):
            dataclasses.replace(meta, **changes)


def test_metadata_is_immutable():
    """Goal: metadata values cannot be changed in place. Method: try to assign."""
    meta = example()
    with pytest.raises(dataclasses.FrozenInstanceError):
        meta.current_snapshot_id = 11
    with pytest.raises(TypeError):
        meta.properties["x"] = "y"
    assert isinstance(meta.snapshots, tuple) and hash(meta) == hash(example())


def _edit(doc: dict, path: tuple, value=None, delete=False) -> str:
    target = doc
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return json.dumps(doc)


@pytest.mark.parametrize("path, value, delete, field", [
    (("format-version",), 4, False, "format-version"),
    (("format-version",), "2", False, "format-version"),
    (("table-uuid",), None, True, "table-uuid"),
    (("table-uuid",), "not-a-uuid", False, "table-uuid"),
    (("last-sequence-number",), None, True, "last-sequence-number"),
    (("last-sequence-number",), 2, False, "snapshots[2].sequence-number"),
    (("last-updated-ms",), 1.5, False, "last-updated-ms"),
    (("schemas",), {}, False, "schemas"),
    (("schemas", 0, "fields", 0, "type"), "int64", False, "schemas[0].fields[0].type"),
    (("current-schema-id",), 7, False, "current-schema-id"),
    (("last-column-id",), 1, False, "last-column-id"),
    (("last-partition-id",), 999, False, "last-partition-id"),
    (("default-spec-id",), 0, False, "default-spec-id"),
    (("partition-specs", 0, "fields", 0, "transform"), "bucket[x]", False,
     "partition-specs[0].fields[0].transform"),
    (("default-sort-order-id",), 5, False, "default-sort-order-id"),
    (("properties",), {"a": 1}, False, "properties.a"),
    (("current-snapshot-id",), 12, False, "refs.main"),
    (("current-snapshot-id",), 99, False, "current-snapshot-id"),
    (("refs", "v1", "snapshot-id"), 99, False, "refs.v1.snapshot-id"),
    (("refs", "v1", "type"), "bookmark", False, "refs.v1.type"),
    (("refs", "v1", "min-snapshots-to-keep"), 3, False, "refs.v1.type"),
    (("refs", "main", "type"), "tag", False, "refs.main.type"),
    (("snapshots", 0, "snapshot-id"), 12, False, "snapshots"),
    (("snapshots", 3, "snapshot-id"), -1, False, "snapshots[3].snapshot-id"),
    (("snapshots", 0, "parent-snapshot-id"), 13, False, "snapshots[0].parent-snapshot-id"),
    (("snapshots", 1, "summary"), {"added-files": "1"}, False, "snapshots[1].summary"),
    (("snapshots", 1, "summary"), {"operation": 1}, False, "snapshots[1].summary.operation"),
    (("snapshots", 1, "manifest-list"), None, True, "snapshots[1].manifest-list"),
    (("snapshots", 1, "sequence-number"), None, True, "snapshots[1].sequence-number"),
    (("snapshots", 1, "timestamp-ms"), 2**64, False, "snapshots[1].timestamp-ms"),
    (("snapshot-log", 0, "snapshot-id"), "11", False, "snapshot-log[0].snapshot-id"),
    (("metadata-log", 0), "x", False, "metadata-log[0]"),
])
def test_bad_documents_raise_metadata_error_naming_file_and_field(path, value, delete, field):
    """Goal: invalid metadata raises MetadataError naming file and field. Method: one edit per case."""
    text = _edit(json.loads(to_json(example())), path, value, delete)
    with pytest.raises(MetadataError) as info:
        from_json(text, LOCATION)
    assert (info.value.location, info.value.field) == (LOCATION, field)
    assert LOCATION in str(info.value)


@pytest.mark.parametrize("data", [b"", b"{", b"\xff\xfe", b"[1]", b"null", b"[" * 100_000,
                                  b'{"format-version": 2}', b'{"format-version": NaN}'])
def test_unreadable_documents_raise_metadata_error(data):
    """Goal: non-JSON, non-UTF-8, non-object, deep input is a MetadataError. Method: examples."""
    with pytest.raises(MetadataError) as info:
        from_json(data, LOCATION)
    assert info.value.location == LOCATION


def test_format_v1_is_read():
    """Goal: v1 metadata (one schema and spec, no sequence numbers) loads. Method: a v1 document."""
    doc = {
        "format-version": 1, "location": "s3://b/t", "last-updated-ms": 5, "last-column-id": 2,
        "schema": {"type": "struct", "fields": [
            {"id": 1, "name": "id", "required": True, "type": "long"},
            {"id": 2, "name": "ts", "required": False, "type": "timestamptz"}]},
        "partition-spec": [{"name": "ts_day", "transform": "day", "source-id": 2}],
        "properties": {}, "current-snapshot-id": -1, "snapshots": [
            {"snapshot-id": 3, "timestamp-ms": 4, "manifest-list": "s3://b/t/m.avro"}],
    }
    meta = from_json(json.dumps(doc), LOCATION)
    assert meta.format_version == 1 and meta.table_uuid is None and meta.current_snapshot() is None
    assert meta.spec().fields[0].field_id == 1000 and meta.last_partition_id == 1000
    assert meta.snapshots[0].sequence_number == 0 and meta.sort_order().is_unsorted
    written = json.loads(to_json(meta))  # v1 is written as v1 (spec Appendix E)
    assert written["format-version"] == 1 and "last-sequence-number" not in written
    assert "sequence-number" not in written["snapshots"][0] and written["current-snapshot-id"] == -1
    assert written["schema"]["fields"][1]["name"] == "ts" and written["partition-spec"][0]["field-id"] == 1000
    assert from_json(to_json(meta), LOCATION) == meta
    doc["snapshots"] = [{"snapshot-id": 3, "timestamp-ms": 4, "manifests": ["a.avro"]}]
    with pytest.raises(MetadataError) as info:
        from_json(json.dumps(doc), LOCATION)
    assert info.value.field == "snapshots[0].manifests"


JAVA_STYLE_V2 = {
    # The layout Java's TableMetadataParser writes: no refs (pre-1.0), docs on fields, a
    # snapshot upgraded from v1 (sequence number 0), a multi-field sort order, statistics.
    "format-version": 2, "table-uuid": TABLE_UUID, "location": "s3://bucket/java",
    "last-sequence-number": 7, "last-updated-ms": 1602638573590, "last-column-id": 5,
    "current-schema-id": 1,
    "schemas": [
        {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": True, "type": "long"}]},
        {"type": "struct", "schema-id": 1, "identifier-field-ids": [1, 2], "fields": [
            {"id": 1, "name": "x", "required": True, "type": "long"},
            {"id": 2, "name": "y", "required": True, "type": "long", "doc": "comment"},
            {"id": 3, "name": "z", "required": False, "type": {"type": "map", "key-id": 4,
                                                               "key": "string", "value-id": 5,
                                                               "value-required": False,
                                                               "value": "decimal(10, 3)"}}]}],
    "default-spec-id": 0,
    "partition-specs": [{"spec-id": 0, "fields": [
        {"name": "x", "transform": "identity", "source-id": 1, "field-id": 1000}]}],
    "last-partition-id": 1000, "default-sort-order-id": 3,
    "sort-orders": [{"order-id": 3, "fields": [
        {"transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-first"},
        {"transform": "bucket[4]", "source-id": 1, "direction": "desc", "null-order": "nulls-last"}]}],
    "properties": {"write.format.default": "parquet"},
    "current-snapshot-id": 3055729675574597004,
    "snapshots": [
        {"snapshot-id": 3051729675574597004, "timestamp-ms": 1515100955770, "sequence-number": 0,
         "summary": {"operation": "append"}, "manifest-list": "s3://bucket/java/m1.avro"},
        {"snapshot-id": 3055729675574597004, "parent-snapshot-id": 3051729675574597004,
         "timestamp-ms": 1555100955770, "sequence-number": 7,
         "summary": {"operation": "overwrite", "spark.app.id": "local-1"},
         "manifest-list": "s3://bucket/java/m2.avro", "schema-id": 1}],
    "snapshot-log": [{"timestamp-ms": 1515100955770, "snapshot-id": 3051729675574597004},
                     {"timestamp-ms": 1555100955770, "snapshot-id": 3055729675574597004}],
    "metadata-log": [{"timestamp-ms": 1515100955770, "metadata-file": "s3://bucket/java/v1.json"}],
    "statistics": [{"snapshot-id": 3055729675574597004, "statistics-path": "s3://bucket/java/s.puffin",
                    "file-size-in-bytes": 413, "file-footer-size-in-bytes": 42, "blob-metadata": []}],
}


def test_java_style_v2_document_loads():
    """Goal: metadata in Java's layout loads with the spec's meaning. Method: a Java-layout doc."""
    meta = from_json(json.dumps(JAVA_STYLE_V2), LOCATION)
    assert meta.refs == {"main": SnapshotRef(3055729675574597004, "branch")}
    assert meta.schema().identifier_field_ids == (1, 2)
    assert str(meta.schema().find_type("z.value")) == "decimal(10, 3)"
    assert [str(f.transform) for f in meta.sort_order().fields] == ["identity", "bucket[4]"]
    assert meta.snapshot_as_of(1555100955769).sequence_number == 0
    assert json.loads(meta.extras["statistics"])[0]["file-size-in-bytes"] == 413
    again = json.loads(to_json(meta))
    assert again["statistics"] == JAVA_STYLE_V2["statistics"]
    assert again["refs"]["main"]["snapshot-id"] == again["current-snapshot-id"]


def test_unknown_fields_survive_a_rewrite():
    """Goal: unmodelled fields (statistics, future keys) are kept. Method: add them, round-trip."""
    doc = json.loads(to_json(example()))
    doc["statistics"] = [{"snapshot-id": 13, "statistics-path": "s3://b/s.puffin",
                          "file-size-in-bytes": 10, "file-footer-size-in-bytes": 4, "blob-metadata": []}]
    doc["x-vendor"] = {"a": [1, 2]}
    again = json.loads(to_json(from_json(json.dumps(doc), LOCATION)))
    assert again == doc


# -- property tests ------------------------------------------------------------------------

@st.composite
def metadata(draw):
    """Valid v2 metadata: a schema, a random history of snapshots, branches and tags."""
    schema = draw(schemas(st.just(0)))
    meta = new_table_metadata(schema, "s3://b/t", TABLE_UUID, 0,
                              properties=draw(st.dictionaries(st.text(max_size=5), st.text(max_size=5),
                                                              max_size=3)))
    ids = draw(st.lists(st.integers(-(2**63), 2**63 - 1).filter(lambda i: i != -1), unique=True,
                        max_size=6))
    for i, snapshot_id in enumerate(ids):
        meta = append(meta, snapshot_id, 10 * (i + 1), draw(st.sampled_from(["main", "main", "b"])),
                      draw(st.sampled_from(["append", "overwrite", "delete", "replace"])))
    if ids and draw(st.booleans()):
        refs = dict(meta.refs, t=SnapshotRef(draw(st.sampled_from(ids)), "tag",
                                             max_ref_age_ms=draw(st.none() | st.integers(0, 10**9))))
        meta = dataclasses.replace(meta, refs=FrozenMap(refs))
    return meta


@given(metadata())
def test_random_metadata_round_trips(meta):
    """Goal: to_json/from_json is lossless on any valid metadata. Method: random histories."""
    assert from_json(to_json(meta), LOCATION) == meta


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=6)


def _paths(doc, prefix=()):
    yield prefix
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield from _paths(value, prefix + (key,))


@st.composite
def mutated_documents(draw):
    doc = json.loads(to_json(draw(metadata())))
    # Uniform choices (Hypothesis favours first elements): a top-level field, then a
    # spot inside it, so that no one field dominates the mutations.
    rnd = draw(st.randoms(use_true_random=True))  # seeded by Hypothesis, so it replays
    for _ in range(draw(st.integers(1, 3))):
        top = rnd.choice(sorted(doc))
        path = rnd.choice(list(_paths(doc[top], (top,))))
        action = draw(st.sampled_from(["drop"] * 4 + ["replace"] * 4 + ["version"]))
        if action == "version":
            doc["format-version"] = draw(st.sampled_from([0, 1, 3, 4, -1, "2", 2.0, None, True]))
        elif action == "drop" and isinstance(_parent(doc, path), dict):
            del _parent(doc, path)[path[-1]]
        else:
            _parent(doc, path)[path[-1]] = draw(JSON_VALUES)
    data = json.dumps(doc).encode()
    if draw(st.sampled_from([False] * 6 + [True])):
        data = data[: draw(st.integers(0, len(data) - 1))]
    return data


def _parent(doc, path):
    for key in path[:-1]:
        doc = doc[key]
    return doc


@given(mutated_documents())
def test_mutated_documents_load_or_raise_metadata_error(data):
    """Goal: from_json loads or raises MetadataError, nothing else. Method: random mutations."""
    try:
        meta = from_json(data, LOCATION)
    except MetadataError as e:
        assert e.location == LOCATION
    else:
        assert isinstance(meta, TableMetadata)
