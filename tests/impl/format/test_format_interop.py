"""Interop with pyiceberg (a peer writer and reader): metadata JSON both ways, transforms."""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import duckdb
import duckdb_extension_avro
import duckdb_extension_iceberg
import pyarrow as pa
import pytest
from format_strategies import values_for
from hypothesis import given, strategies as st
from pyiceberg import transforms as peer_transforms
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField as PeerPartitionField
from pyiceberg.partitioning import PartitionSpec as PeerPartitionSpec
from pyiceberg.schema import Schema as PeerSchema
from pyiceberg.table import StaticTable
from pyiceberg.table.metadata import TableMetadataUtil
from pyiceberg.table.sorting import SortField as PeerSortField
from pyiceberg.table.sorting import SortOrder as PeerSortOrder
from pyiceberg.types import NestedField as PeerField

from icefloe.impl.format.metadata import FrozenMap, MetadataLogEntry, from_json, to_json
from icefloe.impl.format.transforms import (
    BucketTransform, DayTransform, HourTransform, MonthTransform, TruncateTransform, YearTransform,
    partition_type,
)
from icefloe.impl.format.types import (
    BINARY, DATE, INT, LONG, STRING, TIMESTAMP, TIMESTAMPTZ, UUID, DecimalType, FixedType,
    ListType, NestedField, Schema, StructType, schema_to_arrow, schema_to_json,
)

SCHEMA = Schema((
    NestedField(1, "id", LONG, True),
    NestedField(2, "ts", TIMESTAMPTZ, False),
    NestedField(3, "s", STRING, False),
    NestedField(4, "amount", DecimalType(9, 2), False),
    NestedField(5, "tags", ListType(7, STRING, False), False),
    NestedField(6, "point", StructType((NestedField(8, "x", INT, True),)), False),
), identifier_field_ids=(1,))


def _batch(start: int, n: int) -> pa.Table:
    base = dt.datetime(2017, 11, 16, 22, tzinfo=dt.timezone.utc)
    return pa.Table.from_pylist([{
        "id": i, "ts": base + dt.timedelta(hours=7 * i), "s": f"{'abcdef'[i % 6]}-{i}",
        "amount": Decimal(i * 37).scaleb(-2), "tags": ["t"] * (i % 3), "point": {"x": -i},
    } for i in range(start, start + n)], schema=schema_to_arrow(SCHEMA))


@pytest.fixture(scope="module")
def peer_table(tmp_path_factory):
    """A pyiceberg table with a sort order, appends, an overwrite, a delete, a branch, a tag,
    and then an evolved partition spec with bucket/day/truncate. (pyiceberg writes data into
    non-identity partitions only with the optional pyiceberg-core package, so the evolution
    comes after the writes.)"""
    root = tmp_path_factory.mktemp("peer")
    catalog = SqlCatalog("peer", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/wh")
    catalog.create_namespace("ns")
    schema = PeerSchema.model_validate_json(json.dumps(schema_to_json(SCHEMA)))
    spec = PeerPartitionSpec(PeerPartitionField(source_id=3, field_id=1000, name="s",
                                                transform=peer_transforms.IdentityTransform()))
    order = PeerSortOrder(PeerSortField(source_id=1, transform=peer_transforms.IdentityTransform()))
    table = catalog.create_table("ns.t", schema=schema, partition_spec=spec, sort_order=order,
                                 properties={"owner": "peer"})
    table.append(_batch(0, 6))
    table.append(_batch(6, 6))
    table.overwrite(_batch(20, 5))
    table.append(_batch(30, 4))
    table.delete("id >= 32")
    snapshot_id = table.current_snapshot().snapshot_id
    table.manage_snapshots().create_tag(snapshot_id, "v1").create_branch(snapshot_id, "audit").commit()
    with table.update_spec() as update:
        update.add_field("id", peer_transforms.BucketTransform(4), "id_bucket")
        update.add_field("ts", peer_transforms.DayTransform(), "ts_day")
        update.add_field("s", peer_transforms.TruncateTransform(1), "s_trunc")
    return catalog.load_table("ns.t")


def _metadata_files(table) -> list[Path]:
    folder = Path(table.metadata_location.removeprefix("file://")).parent
    return sorted(folder.glob("*.metadata.json"))


def test_pyiceberg_metadata_loads_and_round_trips(peer_table):
    """Goal: pyiceberg's metadata loads and rewrites field for field. Method: every file, JSON diff."""
    files = _metadata_files(peer_table)
    assert len(files) >= 6
    for path in files:
        raw = path.read_bytes()
        meta = from_json(raw, str(path))
        expected = json.loads(raw)
        expected.setdefault("current-snapshot-id", None)  # pyiceberg omits it, we write null
        assert json.loads(to_json(meta)) == expected, path.name
        assert from_json(to_json(meta), "again") == meta
    last = from_json(files[-1].read_bytes(), str(files[-1]))
    assert last.ref_head("v1").snapshot_id == last.current_snapshot_id
    assert [s.operation for s in last.ancestors_of(last.current_snapshot_id)][-1] == "append"
    assert last.schema().find_field("point.x").field_id == SCHEMA.find_field("point.x").field_id


def test_pyiceberg_reads_what_we_write(peer_table, tmp_path):
    """Goal: pyiceberg reads our metadata, down to the rows. Method: parse_raw and StaticTable scan."""
    meta = from_json(Path(peer_table.metadata_location.removeprefix("file://")).read_bytes(), "peer")
    ours = dataclasses.replace(
        meta, properties=FrozenMap(dict(meta.properties, writer="icefloe")),
        last_updated_ms=meta.last_updated_ms + 1,
        metadata_log=meta.metadata_log + (MetadataLogEntry(meta.last_updated_ms, peer_table.metadata_location),))
    data = to_json(ours)
    parsed = TableMetadataUtil.parse_raw(data)
    assert parsed.current_snapshot_id == ours.current_snapshot_id
    assert {s.snapshot_id for s in parsed.snapshots} == {s.snapshot_id for s in ours.snapshots}
    assert {name: r.snapshot_id for name, r in parsed.refs.items()} == \
        {name: r.snapshot_id for name, r in ours.refs.items()}
    assert parsed.properties["writer"] == "icefloe"
    assert from_json(parsed.model_dump_json(), "peer-rewrite") == ours

    path = tmp_path / "00099-icefloe.metadata.json"
    path.write_bytes(data)
    static = StaticTable.from_metadata(str(path))
    assert static.scan().to_arrow().sort_by("id").equals(peer_table.scan().to_arrow().sort_by("id"))
    empty = dataclasses.replace(ours, current_snapshot_id=None, refs=FrozenMap(), snapshot_log=())
    assert TableMetadataUtil.parse_raw(to_json(empty)).current_snapshot_id is None


def _duckdb() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the iceberg and avro extensions from their pip packages."""
    con = duckdb.connect()
    for module, name in ((duckdb_extension_avro, "avro"), (duckdb_extension_iceberg, "iceberg")):
        [path] = Path(module.__file__).parent.glob(f"extensions/*/{name}.duckdb_extension")
        con.execute(f"LOAD '{path}'")
    return con


def test_duckdb_reads_what_we_write(peer_table, tmp_path):
    """Goal: DuckDB sees the same rows through our rewrite of each file. Method: iceberg_scan both."""
    con = _duckdb()
    query = "SELECT id, s, amount, point.x FROM iceberg_scan('{}') ORDER BY id"
    for path in _metadata_files(peer_table):
        ours = tmp_path / path.name
        ours.write_bytes(to_json(from_json(path.read_bytes(), str(path))))
        assert con.execute(query.format(ours)).fetchall() == con.execute(query.format(path)).fetchall()
    assert con.execute(f"SELECT count(*) FROM iceberg_scan('{ours}')").fetchone()[0] == \
        peer_table.scan().to_arrow().num_rows > 0


def test_partition_types_agree_with_pyiceberg(peer_table):
    """Goal: our partition structs equal pyiceberg's. Method: each of the peer's specs, both ways."""
    meta = from_json(Path(peer_table.metadata_location.removeprefix("file://")).read_bytes(), "peer")
    assert [str(f.transform) for f in meta.spec().fields] == ["identity", "bucket[4]", "day", "truncate[1]"]
    for spec in meta.partition_specs:
        ours = partition_type(spec, meta.schema())
        theirs = peer_table.specs()[spec.spec_id].partition_type(peer_table.schema())
        assert [(f.field_id, f.name, str(f.type)) for f in ours.fields] == \
            [(f.field_id, f.name, str(f.field_type)) for f in theirs.fields]


PEER_CASES = [
    (BucketTransform(16), [INT, LONG, DATE, TIMESTAMP, TIMESTAMPTZ, STRING, UUID, BINARY,
                           FixedType(3), DecimalType(9, 2), DecimalType(38, 5)]),
    (BucketTransform(3), [LONG, STRING, DecimalType(20, 0)]),
    (TruncateTransform(7), [INT, LONG, STRING, BINARY, DecimalType(12, 3)]),
    (YearTransform(), [DATE, TIMESTAMP, TIMESTAMPTZ]),
    (MonthTransform(), [DATE, TIMESTAMP]),
    (DayTransform(), [DATE, TIMESTAMPTZ]),
    (HourTransform(), [TIMESTAMP, TIMESTAMPTZ]),
]


@pytest.mark.parametrize("transform, source_types", PEER_CASES, ids=lambda c: str(c)[:20])
@given(data=st.data())
def test_transforms_agree_with_pyiceberg(transform, source_types, data):
    """Goal: each transform equals pyiceberg's. Method: random values of every supported type."""
    source_type = data.draw(st.sampled_from(source_types))
    value = data.draw(values_for(source_type))  # dates within years 1..9999, as pyiceberg needs
    peer_type = PeerField(1, "x", str(source_type), required=False).field_type
    peer = peer_transforms.parse_transform(str(transform)).transform(peer_type)
    assert transform.apply(value, source_type) == peer(value)
