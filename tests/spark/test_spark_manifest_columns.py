"""The columnar planner's manifest decoder (impl/spark/manifest_columns.py) against the
reference reader (manifest_reader.py) and scan.plan_files's pruning: the same files, in the
same order, with the same sequence numbers and partitions, on random manifests, foreign
writers' shapes (extra fields, other union orders, every codec, wide tables), pyiceberg's v1
and v2 manifests, and hostile bytes. No Spark session."""
from __future__ import annotations

import io
from dataclasses import replace

import fastavro
import pytest
from hypothesis import given, settings, strategies as st

from icefloe.impl.format import conversions, evaluators as EV, expressions as E, types as T
from icefloe.impl.format.expression_parser import parse as parse_filter
from icefloe.impl.format.manifest import (
    DataFile, ManifestEntry, ManifestEntryStatus, ManifestError, ManifestFile, manifest_file_of,
)
from icefloe.impl.format.manifest_reader import read_manifest
from icefloe.impl.format.manifest_writer import write_manifest
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.spark import manifest_columns as MC

SCHEMA = T.Schema((T.NestedField(1, "id", T.LONG, True), T.NestedField(2, "cat", T.STRING, False),
                   T.NestedField(3, "v", T.DOUBLE, False), T.NestedField(4, "d", T.DecimalType(9, 2), False)))
SPEC = parse_partition_spec("cat, bucket(4, id), d", SCHEMA)
FILTERS = (None, "id >= 40", "id = 7", "id < 3 or cat = 'b'", "not (id > 20)", "cat = 'a'", "v is null",
           "v is nan", "v > 0.5 and id in (1, 2, 50)", "cat starts_with 'a'", "id != 5", "d = 1.50")

counts = st.none() | st.dictionaries(st.integers(1, 4), st.integers(0, 200), max_size=4)


@st.composite
def entries(draw) -> ManifestEntry:
    status = draw(st.sampled_from(ManifestEntryStatus))
    inherit = status == ManifestEntryStatus.ADDED and draw(st.booleans())
    lo = draw(st.integers(-5, 80))
    hi = lo + draw(st.integers(0, 30))
    bounds_lower, bounds_upper = {}, {}
    if draw(st.booleans()):
        bounds_lower[1], bounds_upper[1] = conversions.to_bytes(T.LONG, lo), conversions.to_bytes(T.LONG, hi)
    if draw(st.booleans()):
        bounds_lower[3], bounds_upper[3] = conversions.to_bytes(T.DOUBLE, lo / 10), conversions.to_bytes(T.DOUBLE, hi / 10)
    if draw(st.booleans()):
        bounds_lower[2], bounds_upper[2] = b"a" * draw(st.integers(0, 70)), b"b"  # a long bound: the slow path
    from decimal import Decimal
    data_file = DataFile(
        f"file:///t/data/{draw(st.text('abc/', max_size=12))}.parquet", "PARQUET",
        (draw(st.none() | st.sampled_from(["a", "b", "ab"])), draw(st.none() | st.integers(0, 3)),
         draw(st.none() | st.sampled_from([Decimal("1.50"), Decimal("-2.25")]))),
        draw(st.integers(0, 1000)), draw(st.integers(0, 2**40)),
        column_sizes=draw(counts), value_counts=draw(counts), null_value_counts=draw(counts),
        nan_value_counts=draw(counts), lower_bounds=bounds_lower or None, upper_bounds=bounds_upper or None,
        key_metadata=draw(st.none() | st.binary(max_size=80)),
        split_offsets=draw(st.none() | st.lists(st.integers(0, 2**40), max_size=3).map(tuple)))
    seq = None if inherit else draw(st.integers(0, 50))
    return ManifestEntry(status, data_file, None if inherit else 9, seq, seq)


def _list_entry(data: bytes, manifest_entries, sequence_number: int = 60) -> ManifestFile:
    mf = manifest_file_of(manifest_entries, SCHEMA, SPEC, manifest_path="file:///t/m.avro",
                          manifest_length=len(data), added_snapshot_id=9)
    return replace(mf, sequence_number=sequence_number, min_sequence_number=0)


def reference(data: bytes, mf: ManifestFile, row_filter: str | None) -> list[tuple]:
    """What scan.plan_files keeps of one data manifest (its reader, its evaluators)."""
    out = []
    metrics = None if row_filter is None else EV.MetricsEvaluator(parse_filter(row_filter), SCHEMA)
    partition = None if row_filter is None else EV.PartitionEvaluator(parse_filter(row_filter), SPEC, SCHEMA)
    for e in read_manifest(data, mf):
        if e.status not in (0, 1):
            continue
        f = e.data_file
        if (f.record_count == 0 if metrics is None
                else not (partition.might_match(f.partition) and metrics.might_match(f))):
            continue
        out.append((f.file_path, f.file_size_in_bytes, f.record_count, e.sequence_number, mf.partition_spec_id,
                    f.partition))
    return out


def columnar(data: bytes, mf: ManifestFile, row_filter: str | None) -> list[tuple]:
    out = MC.ManifestColumns()
    if row_filter is None:
        MC.decode_manifest(data, mf, None, None, frozenset(), out)
    else:
        bound = EV.rewrite_not(E.bind(parse_filter(row_filter), SCHEMA))
        MC.decode_manifest(data, mf, EV.PartitionEvaluator(parse_filter(row_filter), SPEC, SCHEMA), bound,
                           MC.referenced_field_ids(bound), out)
    return list(zip(out.paths(), out.file_size_in_bytes, out.record_count, out.data_sequence_number, out.spec_id,
                    out.partition))


def _reencoded(data: bytes, change_schema=None, change_record=None, codec: str = "deflate") -> bytes:
    reader = fastavro.reader(io.BytesIO(data))
    schema, records = reader.writer_schema, list(reader)
    if change_schema:
        change_schema(schema)
    for r in records:
        if change_record:
            change_record(r)
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec, sync_interval=300)
    return out.getvalue()


@settings(max_examples=60, deadline=None)
@given(st.lists(entries(), max_size=12), st.sampled_from(FILTERS), st.sampled_from([0, 60]))
def test_columnar_plan_equals_the_reference_readers_plan(manifest_entries, row_filter, sequence_number):
    """Goal: for any manifest and filter, the columnar decoder keeps exactly the files
    scan.plan_files keeps, with the same inherited sequence numbers (v2, and v1: list entry
    sequence number 0) and partitions. Method: random entries (statuses, inheritance, counts,
    bounds, long bounds and key metadata that leave the one-match skip), written by icefloe;
    compare both plans."""
    data = write_manifest(manifest_entries, SCHEMA, SPEC)
    mf = _list_entry(data, manifest_entries, sequence_number)
    assert columnar(data, mf, row_filter) == reference(data, mf, row_filter)


def _one_of_each():
    out = []
    for k in range(8):
        f = DataFile(f"file:///t/data/f{k}.parquet", "PARQUET", ("ab"[k % 2], k % 4, None), k, 100 + k,
                     value_counts={1: k, 3: k}, null_value_counts={1: 0, 3: k // 2}, nan_value_counts={3: 0},
                     lower_bounds={1: conversions.to_bytes(T.LONG, k * 10)},
                     upper_bounds={1: conversions.to_bytes(T.LONG, k * 10 + 9)})
        out.append(ManifestEntry(ManifestEntryStatus(k % 3), f, 9, k, k))
    return out


@pytest.mark.parametrize("codec", ["null", "deflate", "bzip2", "xz"])
def test_foreign_shapes_read_alike(codec):
    """Goal: what other writers put in a manifest (fields we do not know, [X, null] unions,
    another codec, several blocks, a 90-column table's statistics maps) plans as the
    reference reader plans it. Method: re-encode an icefloe manifest with fastavro after
    changing its schema; compare both plans for every filter."""
    manifest_entries = _one_of_each()
    wide = [replace(e, data_file=replace(e.data_file, column_sizes={i: i for i in range(1, 91)},
                                         value_counts={**{i: 5 for i in range(5, 95)}, **e.data_file.value_counts}))
            for e in manifest_entries]
    base = write_manifest(manifest_entries, SCHEMA, SPEC)

    def extra_fields(schema):
        schema["fields"].insert(1, {"name": "vendor_note", "type": "string"})
        data_file = next(f for f in schema["fields"] if f["name"] == "data_file")["type"]
        data_file["fields"].append({"name": "first_row_id", "type": ["null", "long"], "default": None,
                                    "field-id": 142})
        for f in data_file["fields"]:
            if isinstance(f["type"], list):
                f["type"] = list(reversed(f["type"]))  # [X, "null"]
                f.pop("default", None)

    def extra_values(r):
        r["vendor_note"] = "hello"
        r["data_file"]["first_row_id"] = 3

    for data, chosen in ((_reencoded(base, extra_fields, extra_values, codec), manifest_entries),
                         (_reencoded(write_manifest(wide, SCHEMA, SPEC), codec=codec), wide)):
        mf = _list_entry(data, chosen)
        for row_filter in FILTERS:
            assert columnar(data, mf, row_filter) == reference(data, mf, row_filter), row_filter
    assert len(columnar(data, mf, None)) == 5  # live (statuses 0 and 1) with rows: k = 1, 3, 4, 6, 7


@pytest.mark.parametrize("format_version", [1, 2])
def test_pyiceberg_manifests_plan_alike(tmp_path, format_version):
    """Goal: pyiceberg's v1 and v2 manifests (its writer's shapes, v1 sequence numbers)
    plan alike. Method: a pyiceberg table with appends, a delete and an overwrite; for every
    data manifest of every snapshot compare both plans with and without a filter."""
    import sys
    from pathlib import Path
    from icefloe.impl.format.manifest_reader import read_manifest_list
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "impl" / "format"))
    from pyiceberg_history import pyiceberg_table_with_history
    pi_table = pyiceberg_table_with_history(tmp_path, format_version)
    schema = T.Schema((T.NestedField(1, "id", T.LONG, False), T.NestedField(2, "cat", T.STRING, False)))
    spec = parse_partition_spec("cat", schema)
    global SCHEMA, SPEC
    saved = SCHEMA, SPEC
    SCHEMA, SPEC = schema, spec
    try:
        checked = 0
        for snapshot in pi_table.metadata.snapshots:
            path = snapshot.manifest_list.removeprefix("file://")
            for mf in read_manifest_list(open(path, "rb").read(), snapshot.manifest_list):
                if mf.content != 0:
                    continue
                data = open(mf.manifest_path.removeprefix("file://"), "rb").read()
                for row_filter in (None, "id >= 3", "cat = 'a'", "id is null"):
                    assert columnar(data, mf, row_filter) == reference(data, mf, row_filter)
                checked += 1
        assert checked >= 4
    finally:
        SCHEMA, SPEC = saved


def test_a_run_the_walker_cannot_learn_is_walked_shapes_max_times_only(monkeypatch):
    """Goal: the decoder's skipper of a run of fields (avro_shapes' walker behind it) spends
    at most SHAPES_MAX walks on a run it cannot learn, then steps over every record by the
    compiled skipper alone, ending each where it should. Method: a field of arrays nested
    one deeper than the walker goes; count avro_shapes.learned_match's calls over 20
    records."""
    from icefloe.impl.format import avro_shapes
    depth = avro_shapes.WALK_DEPTH_MAX  # the run's record adds one level
    t: object = "long"
    for _ in range(depth):
        t = {"type": "array", "items": t}
    one = b"\x02" * depth + b"\x04" + b"\x00" * depth  # one long, each array of one item
    buf = one * 20
    calls = []
    learned_match = avro_shapes.learned_match
    monkeypatch.setattr(avro_shapes, "learned_match", lambda *a: calls.append(a[2]) or learned_match(*a))
    skip = MC._ShapeSkipper({"type": "record", "name": "skipped", "fields": [{"name": "deep", "type": t}]})
    p = 0
    for k in range(20):
        p = skip(buf, p)
        assert p == (k + 1) * len(one)
    assert len(calls) == avro_shapes.SHAPES_MAX and skip.patterns == []


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 255), st.booleans())
def test_hostile_bytes_are_manifest_errors(position, xor, truncate):
    """Goal: a flipped byte or a cut anywhere gives ManifestError (or CorruptMetadata from
    the counts check), never another exception, and wherever the reference reader reads
    the damaged file the columnar decoder reads the same plan (it may read a file whose
    damage lies only in statistics it steps over). Method: damage a written manifest,
    decode it both ways."""
    from icefloe.impl.format.integrity import CorruptMetadata
    manifest_entries = _one_of_each()
    data = write_manifest(manifest_entries, SCHEMA, SPEC)
    mf = replace(_list_entry(data, manifest_entries), manifest_length=None)
    broken = bytearray(data)
    if truncate:
        broken = broken[:position % len(data)]
    else:
        broken[position % len(data)] ^= xor
    for row_filter in (None, "id >= 40"):
        try:
            want = reference(bytes(broken), mf, row_filter)
        except (ManifestError, CorruptMetadata):
            want = None
        try:
            got = columnar(bytes(broken), mf, row_filter)
        except (ManifestError, CorruptMetadata):
            got = None
        if want is not None:
            assert got == want


def test_a_null_in_a_required_field_names_it():
    """Goal: a foreign manifest with a null file path is a ManifestError naming field 100.
    Method: make file_path optional in the schema, write a null, decode."""
    manifest_entries = _one_of_each()[:2]

    def optional_path(schema):
        data_file = next(f for f in schema["fields"] if f["name"] == "data_file")["type"]
        for f in data_file["fields"]:
            if f["name"] == "file_path":
                f["type"] = ["null", "string"]

    def null_path(r):
        r["data_file"]["file_path"] = None

    data = _reencoded(write_manifest(manifest_entries, SCHEMA, SPEC), optional_path, null_path)
    with pytest.raises(ManifestError) as info:
        columnar(data, replace(_list_entry(data, manifest_entries)), None)
    assert info.value.field == "100 file_path"


def test_local_columnar_plan_equals_plan_files_with_deletes(tmp_path):
    """Goal: the native read's plan made in one process from columns (planning.plan_table_local)
    is scan.plan_files's plan as a table: the same files, sequence numbers and attached
    position and equality deletes, with and without filters. Method: a partitioned table with
    several appends, a copy-on-write delete, position deletes in one partition and a global
    and a partition equality delete; compare both plans at every snapshot."""
    import sys
    from pathlib import Path
    from icefloe.impl.spark import planning as PL
    from icefloe.impl.table.scan import plan_files
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "impl" / "table"))
    from delete_writers import equality_delete_file, position_delete_file
    from spark_helpers import make_table, rows
    opts = {"catalog-uri": f"sqlite:///{tmp_path}/c.db", "warehouse": str(tmp_path / "wh")}
    table = make_table(opts, "cat")
    for k in range(3):
        table.append(rows(range(k * 40, k * 40 + 40)))
    table.delete("id < 10")
    table.refresh()
    live = sorted(table.tree.live_data_paths(table.current_snapshot()))
    partition = next(e.data_file.partition for _, e in table.tree.live_entries(table.current_snapshot())
                     if e.data_file.file_path == live[0])
    table.add_delete_files([position_delete_file(table, [(live[0], 0), (live[0], 3)], partition)], [live[0]])
    table.refresh()
    table.add_delete_files([equality_delete_file(table, "id", [44, 45], ("a",))])
    table.append(rows(range(200, 210)))
    table.refresh()
    attached = {"position": 0, "equality": 0}
    for snapshot in table.metadata.snapshots:
        for row_filter in (None, "id >= 60", "cat = 'a'", "id < 50 and cat = 'b'"):
            tasks = plan_files(table.tree, table.metadata, snapshot, row_filter)
            want_deletes = {}
            for t in tasks:
                for d in t.position_deletes + t.equality_deletes:
                    want_deletes.setdefault(d.file_path, d)
            got, deletes = PL.plan_table_local(table.io, table.tree, table.metadata, snapshot,
                                               parse_filter(row_filter) if row_filter else E.AlwaysTrue())
            names = {i: d[2].file_path for i, d in enumerate(deletes)}
            want = sorted((t.data_file.file_path, t.data_file.record_count, t.data_sequence_number,
                           sorted(d.file_path for d in t.position_deletes),
                           sorted(d.file_path for d in t.equality_deletes)) for t in tasks)
            have = sorted((r["file_path"], r["record_count"], r["data_sequence_number"],
                           sorted(names[i] for i in r["position_deletes"] or ()),
                           sorted(names[i] for i in r["equality_deletes"] or ())) for r in got.to_pylist())
            assert have == want, (snapshot.snapshot_id, row_filter)
            assert set(want_deletes) <= set(names.values())
            attached["position"] += sum(len(w[3]) for w in want)
            attached["equality"] += sum(len(w[4]) for w in want)
    assert attached["position"] > 0 and attached["equality"] > 0  # the comparison saw both kinds


def test_the_automatic_planning_switch():
    """Goal: planning='auto' goes to the executors only with two or more cores and enough
    announced data entries (fewer when a filter needs column statistics); delete manifests
    do not count. Method: choose_native_mode on synthetic manifest lists around the bounds."""
    from icefloe.impl.spark import planning as PL

    def manifests(entries_each: int, count: int, deletes: int = 0) -> list[ManifestFile]:
        out = [ManifestFile(f"m{k}", 1, 0, 1, added_files_count=entries_each, existing_files_count=0)
               for k in range(count)]
        return out + [ManifestFile(f"d{k}", 1, 0, 1, content=1, added_files_count=10**6, existing_files_count=0)
                      for k in range(deletes)]
    at = PL.NATIVE_ENTRIES_MIN // 10
    assert PL.choose_native_mode(manifests(at, 10), 2, False) == "distributed"
    assert PL.choose_native_mode(manifests(at, 9), 2, False) == "local"
    assert PL.choose_native_mode(manifests(at, 9, deletes=3), 2, False) == "local"
    assert PL.choose_native_mode(manifests(at, 10), 1, False) == "local"
    assert PL.choose_native_mode(manifests(PL.NATIVE_ENTRIES_MIN, 1), 8, False) == "local"  # one manifest: one task
    with_stats = PL.NATIVE_ENTRIES_MIN_WITH_STATS // 10
    assert PL.choose_native_mode(manifests(with_stats, 10), 2, True) == "distributed"
    assert PL.choose_native_mode(manifests(with_stats, 10), 2, False) == "local"
