"""Row lineage columns through Spark, below and at v3 (impl/table/scan.py
`check_lineage_columns`, used by impl/spark/lineage.py and the `icefloe` data source's
reader): on v1 and v2 the native read and the data source refuse `_row_id` and
`_last_updated_sequence_number` with the error Table.scan raises (UnsupportedFormatVersion,
the same text naming them and the version); on v3 and on an upgraded table the data
source, given a schema naming them, reads the rows Table.scan returns."""
from __future__ import annotations

import pytest

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format import types as T
from icefloe.impl.format.metadata import UnsupportedFormatVersion
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.io.local import LocalStore
from icefloe.impl.outcomes import require_committed
from icefloe.impl.spark import read
from icefloe.impl.table.table import create_table
from spark_helpers import SCHEMA, rows

pytestmark = pytest.mark.xdist_group("spark")
LINEAGE = ["id", "cat", "_row_id", "_last_updated_sequence_number"]
DECLARED = "id BIGINT, cat STRING, v DOUBLE, _row_id BIGINT, _last_updated_sequence_number BIGINT"


def _table(opts, format_version: int, name: str):
    schema = T.schema_from_arrow(SCHEMA)
    return create_table(SqlCatalog(opts["catalog-uri"], name="icefloe"), f"db.{name}", schema,
                        parse_partition_spec("cat", schema), f"file://{opts['warehouse']}/db.db/{name}",
                        io=LocalStore(), format_version=format_version)


def _source(spark, opts, name: str, schema: str = DECLARED, **extra):
    return spark.read.format("icefloe").options(**opts).options(**extra).schema(schema).load(f"icefloe.db.{name}")


def _api(table, **kw) -> list[tuple]:
    table.refresh()
    t = table.scan(columns=LINEAGE, **kw)
    return sorted(zip(*[t.column(c).to_pylist() for c in LINEAGE]), key=repr)


@pytest.mark.parametrize("version", [1, 2])
def test_below_v3_spark_refuses_lineage_as_table_scan_does(spark, opts, version):
    """Goal: on v1 and v2 the native read's `columns` (incremental too) and the data
    source's declared schema naming a lineage column fail with Table.scan's error (type and
    text), where the data source used to fail in a task on a missing column; without them
    the same reads work. Method: Table.scan's exception, then each Spark read's, as text."""
    table = _table(opts, version, f"t{version}")
    require_committed(table.append(rows(range(4))))
    for asked, declared in ((["_row_id"], "id BIGINT, _row_id BIGINT"),
                            (["_last_updated_sequence_number"], "_last_updated_sequence_number BIGINT, id BIGINT")):
        with pytest.raises(UnsupportedFormatVersion) as api:
            table.scan(columns=["id", *asked])
        assert f"{asked[0]}: row lineage needs format v3" in str(api.value) and f"is v{version} " in str(api.value)
        with pytest.raises(UnsupportedFormatVersion) as native:
            read(spark, f"icefloe.db.t{version}", opts, columns=["id", *asked])
        assert str(native.value) == str(api.value)
        with pytest.raises(UnsupportedFormatVersion) as incremental:  # the version first, as the CLI
            read(spark, f"icefloe.db.t{version}", opts, columns=["id", *asked], start_snapshot_id=None,
                 end_snapshot_id=table.current_snapshot().snapshot_id)
        assert str(incremental.value) == str(api.value)
        with pytest.raises(Exception) as source:
            _source(spark, opts, f"t{version}", declared).collect()
        assert f"UnsupportedFormatVersion: {api.value}" in str(source.value)
    assert sorted(r.id for r in _source(spark, opts, f"t{version}", "id BIGINT, cat STRING").collect()) == [0, 1, 2, 3]


def test_the_data_source_reads_lineage_on_v3_and_upgraded_tables_as_table_scan(spark, opts):
    """Goal: the data source with a declared schema naming the lineage columns gives, row
    for row, what Table.scan gives: ids and sequence numbers on v3 after a DV delete (ids
    count positions before deletes), through local and distributed planning and time
    travel; nulls on a table upgraded from v2 until a v3 commit assigns ids. Method: each
    read collected and compared with Table.scan, some values written out by hand."""
    v3 = _table(opts, 3, "v3")
    require_committed(v3.append(rows(range(0, 6))))
    first = v3.current_snapshot().snapshot_id
    require_committed(v3.append(rows(range(6, 9))))
    before = _api(v3)
    require_committed(v3.delete("id in (1, 7)", mode="merge-on-read"))

    def spark_rows(name, **extra):
        return sorted((tuple(r[c] for c in LINEAGE) for r in _source(spark, opts, name, **extra).collect()), key=repr)

    got = _api(v3)
    assert sorted({r[2] for r in before}) == list(range(9))
    assert got == [r for r in before if r[0] not in (1, 7)]  # a DV drops rows, the others keep their ids
    assert spark_rows("v3") == got
    assert spark_rows("v3", planning="distributed") == got
    assert spark_rows("v3", **{"snapshot-id": str(first)}) == _api(v3, snapshot_id=first)

    up = _table(opts, 2, "up")
    require_committed(up.append(rows(range(4))))
    require_committed(up.upgrade_format_version(3))
    got = _api(up)
    assert {(r[2], r[3]) for r in got} == {(None, None)} and spark_rows("up") == got
    require_committed(up.append(rows(range(4, 6))))
    got = _api(up)
    assert sorted(r[2] for r in got) == list(range(6)) and spark_rows("up") == got


def test_a_time_travel_read_tells_lineage_by_the_schema_of_the_snapshot_read(spark, opts):
    """Goal: whether `_row_id` is row lineage or a column of the table's is told by the
    schema of the snapshot read (lineage.read_target), never by the current one: a v3 table
    that has a column named `_row_id` only since a later schema change reads lineage as of
    a snapshot before the change, and that column as of the head, as Table.scan does.
    Method: append, add a string column `_row_id`, append; read() of each snapshot against
    Table.scan, the first's ids written out."""
    from icefloe.impl.table import schema_evolution as SE
    table = _table(opts, 3, "travel")
    require_committed(table.append(rows(range(4))))
    first = table.current_snapshot().snapshot_id
    commit = table.begin(SE.add_column_change("_row_id", "string"))
    commit.run()
    require_committed(table.adopt(commit))
    require_committed(table.append(rows(range(4, 6))))
    columns = ["id", "_row_id"]

    def api(**kw):
        t = table.refresh().scan(columns=columns, **kw)
        return sorted(zip(*[t.column(c).to_pylist() for c in columns]), key=repr)

    def native(**kw):
        return sorted((tuple(r[c] for c in columns)
                       for r in read(spark, "icefloe.db.travel", opts, columns=columns, **kw).collect()), key=repr)

    assert api(snapshot_id=first) == [(i, i) for i in range(4)]  # lineage: the first file's ids
    assert native(snapshot_id=first) == api(snapshot_id=first)
    assert {r[1] for r in api()} == {None}  # the table's own column, null in every file
    assert native() == api()
