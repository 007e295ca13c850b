"""A table column named like a row lineage column, through Spark (impl/spark/__init__.py
`read`, lineage.py `read_target`, native_update.py, maintenance.py; docs/format.md; the
impl/table counterpart is tests/impl/table/test_reserved_lineage_names.py).

The spec reserves the field ids of `_row_id` (2147483540) and
`_last_updated_sequence_number` (2147483539), not the names, and Iceberg-Java does not
refuse the names: a table may have a column `_row_id`. Spark's paths tell lineage by the
schema read, as Table.scan does: on v2 such a column is read (`columns=["_row_id"]`),
updated (set, or kept while another column is set) and compacted as data; on v3 it is
read as the table's column, and an update or a compaction, which would move rows with
their lineage under the same name, is SchemaMismatch naming it before any file is
written, nothing committed."""
from __future__ import annotations

import io as _io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format import types as T
from icefloe.impl.format.metadata import UnsupportedFormatVersion
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.io.local import LocalStore
from icefloe.impl.outcomes import require_committed
from icefloe.impl.spark import delete, read, update
from icefloe.impl.spark.maintenance import compact
from icefloe.impl.table import schema_evolution as SE
from icefloe.impl.table.append_schema import SchemaMismatch
from icefloe.impl.table.scan import LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID, ROW_ID_FIELD_ID
from icefloe.impl.table.table import create_table

pytestmark = pytest.mark.xdist_group("spark")
TABLE = "icefloe.db.t"
ROW_ID, SEQ = "_row_id", "_last_updated_sequence_number"
# The user's `_row_id` is a string: it cannot pass for lineage's long.
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string()),
                   pa.field("v", pa.float64()), pa.field(ROW_ID, pa.string())])
MOR, COW = "merge-on-read", "copy-on-write"


def _rows(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "cat": ["ab"[i % 2] for i in ids], "v": [i * 0.5 for i in ids],
                     ROW_ID: [f"user-{i}" for i in ids]}, schema=ARROW)


def _user(ids) -> dict[int, tuple]:
    return {i: ("ab"[i % 2], i * 0.5, f"user-{i}") for i in ids}


def _table(opts, version: int):
    schema = T.schema_from_arrow(ARROW)
    table = create_table(SqlCatalog(opts["catalog-uri"], name="icefloe"), "db.t", schema,
                         parse_partition_spec("cat", schema), f"file://{opts['warehouse']}/db.db/t",
                         io=LocalStore(), format_version=version)
    require_committed(table.append(_rows(range(0, 12))))
    require_committed(table.append(_rows(range(12, 20))))  # two files per partition: compaction has work
    table.refresh()
    return table


def _api(table) -> dict[int, tuple]:
    table.refresh()
    return {r["id"]: (r["cat"], r["v"], r[ROW_ID]) for r in table.scan().to_pylist()}


def _spark(spark, opts, columns=("id", "cat", "v", ROW_ID)) -> dict[int, tuple]:
    df = read(spark, TABLE, opts, columns=list(columns))
    assert df.columns == list(columns)
    return {r[0]: tuple(r[1:]) for r in df.collect()}


def _field_ids_on_disk(table) -> set[int]:
    """Every field id any live data file holds."""
    table.refresh()
    out = set()
    for task in table.plan_files():
        t = pq.read_table(_io.BytesIO(table.io.get(task.data_file.file_path)))
        out |= {int(f.metadata[b"PARQUET:field_id"]) for f in t.schema}
    return out


def _on_disk(opts) -> set[str]:
    """The Parquet and Puffin files under the table's data folder (job markers aside)."""
    root = Path(opts["warehouse"], "db.db", "t", "data")
    return {str(p) for p in root.rglob("*") if p.is_file() and p.parent.name != "_job"}


def test_v2_a_user_row_id_is_read_updated_and_compacted_by_spark_as_data(spark, opts):
    """Goal: on v2 a string column `_row_id` is the user's everywhere in Spark: `columns=
    ["_row_id"]` reads it (it was UnsupportedFormatVersion about a column that exists), an
    update may set it (it was InvalidArgument) and keeps it while setting another column
    (copy-on-write and merge-on-read), a compaction keeps it; asking for the absent
    `_last_updated_sequence_number` is still Table.scan's refusal. Method: after each step
    Spark's read against Table.scan and the values expected; no file holds a lineage id."""
    table = _table(opts, 2)
    want = _user(range(20))
    assert _api(table) == want
    assert _spark(spark, opts) == want
    got = read(spark, TABLE, opts, columns=[ROW_ID]).collect()
    assert sorted(r[0] for r in got) == sorted(table.scan(columns=[ROW_ID]).column(ROW_ID).to_pylist())
    with pytest.raises(UnsupportedFormatVersion) as api:
        table.scan(columns=["id", ROW_ID, SEQ])
    with pytest.raises(UnsupportedFormatVersion) as native:
        read(spark, TABLE, opts, columns=["id", ROW_ID, SEQ])
    assert str(native.value) == str(api.value) and f" {SEQ}: row lineage needs format v3" in str(api.value)

    require_committed(update(spark, TABLE, opts, set={ROW_ID: "concat('mine-', cast(id as string))"},
                             row_filter="id < 3", mode=COW))
    want.update({i: (*want[i][:2], f"mine-{i}") for i in range(3)})
    assert _api(table) == want
    require_committed(update(spark, TABLE, opts, set={ROW_ID: "'mor'", "v": 99.0}, row_filter="id = 5", mode=MOR))
    want[5] = ("b", 99.0, "mor")
    require_committed(update(spark, TABLE, opts, set={"v": 7.5}, row_filter="id in (1, 14)", mode=MOR))
    require_committed(update(spark, TABLE, opts, set={"v": 8.5}, row_filter="id = 16", mode=COW))
    want.update({1: ("b", 7.5, "mine-1"), 14: ("a", 7.5, "user-14"), 16: ("a", 8.5, "user-16")})
    assert _api(table) == want
    assert _spark(spark, opts) == want

    require_committed(compact(spark, TABLE, opts, files_min=1).outcome)
    table.refresh()
    assert table.current_snapshot().operation == "replace"
    assert [t.has_deletes for t in table.plan_files()] == [False, False]  # one file per partition, deletes applied
    assert _api(table) == want
    assert _spark(spark, opts) == want
    assert _field_ids_on_disk(table) == {f.field_id for f in table.metadata.schema().fields}
    assert not {ROW_ID_FIELD_ID, LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID} & _field_ids_on_disk(table)


def test_v3_a_user_row_id_is_read_and_spark_refuses_to_move_rows_beside_it(spark, opts):
    """Goal: on v3 `columns=["_row_id"]` through Spark is the table's string column, never
    lineage; lineage asked beside it, a Spark update that matches rows (either mode) and a
    Spark compaction are SchemaMismatch naming the column, with nothing committed and no
    file written; an update matching nothing and a deletion vector move no row and commit,
    as in Table.update / Table.delete; renamed, the compaction runs and the rows keep
    their lineage. Method: the refusals' text, the head snapshot id and the data folder
    around each; Spark's reads against Table.scan."""
    table = _table(opts, 3)
    field_id = table.metadata.schema().field_by_name(ROW_ID).field_id
    refusal = (f"column '{ROW_ID}' (field id {field_id}) has the name of a row lineage column: on a v3 table "
               "rows moved to a new file keep their lineage beside the table's columns, under that name; "
               "rename it first")
    read_refusal = (f"{SEQ}: the table has a column named '{ROW_ID}', the name of a row lineage column, so the "
                    "lineage columns cannot be read beside it (rename it first)")  # (impl/table's, as Table.scan)
    want = _user(range(20))
    assert _spark(spark, opts) == _api(table) == want
    assert sorted(r[0] for r in read(spark, TABLE, opts, columns=[ROW_ID]).collect()) \
        == sorted(f"user-{i}" for i in range(20))
    require_committed(delete(spark, TABLE, opts, "id = 7", mode=MOR))  # a DV: no row moves
    del want[7]
    assert _spark(spark, opts) == _api(table) == want
    assert require_committed(update(spark, TABLE, opts, set={"v": 1.0}, row_filter="id = 999")).snapshot_id is None

    table.refresh()
    head, files = table.current_snapshot().snapshot_id, _on_disk(opts)
    refused = {
        "lineage beside it": lambda: read(spark, TABLE, opts, columns=["id", SEQ]),
        "copy-on-write update": lambda: update(spark, TABLE, opts, set={"v": 1.0}, row_filter="id = 1", mode=COW),
        "merge-on-read update": lambda: update(spark, TABLE, opts, set={"v": 1.0}, row_filter="id = 1", mode=MOR),
        "copy-on-write delete": lambda: delete(spark, TABLE, opts, "id = 1", mode=COW),
        "compaction": lambda: compact(spark, TABLE, opts, files_min=1),
    }
    for name, op in refused.items():
        with pytest.raises(SchemaMismatch) as e:
            op()
        assert str(e.value) == (read_refusal if name == "lineage beside it" else refusal), name
        assert table.refresh().current_snapshot().snapshot_id == head, name
        assert _on_disk(opts) == files, name
    assert _spark(spark, opts) == _api(table) == want

    commit = table.begin(SE.rename_column_change(ROW_ID, "user_row_id"))
    commit.run()
    require_committed(table.adopt(commit))
    lineage = ["id", "user_row_id", ROW_ID, SEQ]
    table.refresh()
    before = sorted(zip(*[table.scan(columns=lineage).column(c).to_pylist() for c in lineage]))
    assert {r[1] for r in before} == {f"user-{i}" for i in want}
    require_committed(compact(spark, TABLE, opts, files_min=1).outcome)
    table.refresh()
    assert table.current_snapshot().operation == "replace"
    after = sorted(zip(*[table.scan(columns=lineage).column(c).to_pylist() for c in lineage]))
    assert after == before
    assert sorted(tuple(r) for r in read(spark, TABLE, opts, columns=lineage).collect()) == before
