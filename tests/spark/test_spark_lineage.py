"""Row lineage through Spark's native read (impl/spark/lineage.py; issue 29 item 3):
`read(..., columns=[..., "_row_id", "_last_updated_sequence_number"])` gives, row for row,
what icefloe's scan gives: inherited ids (first_row_id + row index), materialised ones
(files rewritten by copy-on-write, compaction, updates), after DVs, position and equality
deletes, on an upgraded table before and after its first v3 commit; refusals by name."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format import types as T
from icefloe.impl.format.metadata import UnsupportedFormatVersion
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.io.local import LocalStore
from icefloe.impl.outcomes import require_committed
from icefloe.impl.spark import read
from icefloe.impl.spark.options import SparkOptionError
from icefloe.impl.table.table import create_table
from spark_helpers import SCHEMA, TABLE, rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "impl" / "table"))
from delete_writers import equality_delete_file, position_delete_file  # noqa: E402

pytestmark = pytest.mark.xdist_group("spark")
LINEAGE = ["id", "cat", "_row_id", "_last_updated_sequence_number"]


def _table(opts, format_version: int, name: str = "db.t"):
    schema = T.schema_from_arrow(SCHEMA)
    ns, t = name.split(".")
    return create_table(SqlCatalog(opts["catalog-uri"], name="icefloe"), name, schema,
                        parse_partition_spec("cat", schema), f"file://{opts['warehouse']}/{ns}.db/{t}",
                        io=LocalStore(), format_version=format_version)


def _api(table, row_filter=None, **kw) -> list[tuple]:
    table.refresh()
    t = table.scan(row_filter, columns=LINEAGE, **kw)
    return sorted(zip(*[t.column(c).to_pylist() for c in LINEAGE]), key=repr)


def _spark(spark, opts, path=TABLE, **kw) -> list[tuple]:
    df = read(spark, path, opts, columns=LINEAGE, **kw)
    assert df.columns == LINEAGE
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_lineage_equals_icefloe_scan_through_every_kind_of_file(spark, opts, monkeypatch):
    """Goal: Spark reads _row_id and _last_updated_sequence_number exactly as icefloe's
    scan, for inherited and materialised values, with DVs, equality deletes, time travel,
    and both of the native read's merges. Method: a v3 table through appends, a DV delete,
    a copy-on-write delete and update (files holding the columns), a merge-on-read update,
    a compaction, an equality delete; after each step Spark's read against Table.scan."""
    table = _table(opts, 3)
    require_committed(table.append(rows(range(0, 60))))
    require_committed(table.append(rows(range(60, 100))))
    before = {r[0]: r[2] for r in _api(table)}
    assert _spark(spark, opts) == _api(table)
    first = table.current_snapshot().snapshot_id
    require_committed(table.delete("id in (1, 5, 70)", mode="merge-on-read"))
    require_committed(table.delete("id in (2, 3)", mode="copy-on-write"))           # survivors materialised
    require_committed(table.update({"v": 7.5}, "id in (8, 12)", mode="copy-on-write"))
    require_committed(table.update({"v": 9.5}, "id in (61, 65)", mode="merge-on-read"))
    got = _api(table)
    assert _spark(spark, opts) == got
    assert {r[2] for r in got} <= set(range(100)) and len({r[2] for r in got}) == len(got)  # ids kept, unique
    by_id = {r[0]: r for r in got}
    update_seq = table.current_snapshot().sequence_number
    assert by_id[61][3] == update_seq and by_id[61][2] == before[61] and by_id[60][3] < update_seq
    require_committed(table.rewrite_files(files_min=1))                              # compaction
    require_committed(table.add_delete_files([equality_delete_file(table, "id", [13, 17], ("b",))]))
    assert _spark(spark, opts) == _api(table)
    import icefloe.impl.spark.native_read as NR
    monkeypatch.setattr(NR, "MERGE_BRANCHES_MAX", 0)  # files with deletes as one scan, rows matched by path
    require_committed(table.delete("id in (20, 40, 44)", mode="merge-on-read"))
    assert _spark(spark, opts) == _api(table)
    monkeypatch.undo()
    assert _spark(spark, opts, snapshot_id=first) == _api(table, snapshot_id=first)
    assert _spark(spark, opts, planning="distributed") == _api(table)   # the plan made on the executors
    assert _spark(spark, opts, row_filter="cat = 'b' and id > 30") == _api(table, row_filter="cat = 'b' and id > 30")


def test_lineage_on_an_upgraded_table_and_v2_position_deletes(spark, opts):
    """Goal: an upgraded table reads null lineage until its first v3 commit assigns ids,
    then the ids icefloe's scan gives, position delete files of v2 applied. Method: a v2
    table with a position delete file, upgraded; Spark's read against Table.scan before and
    after a v3 append."""
    table = _table(opts, 2)
    require_committed(table.append(rows(range(0, 12))))
    table.refresh()
    target = next(e.data_file.file_path for _, e in table.tree.live_entries(table.current_snapshot())
                  if e.data_file.partition == ("a",))
    require_committed(table.add_delete_files([position_delete_file(table, [(target, 0)], ("a",))], [target]))
    require_committed(table.upgrade_format_version(3))
    got = _api(table)
    assert {(r[2], r[3]) for r in got} == {(None, None)} and len(got) == 11
    assert _spark(spark, opts) == got
    require_committed(table.append(rows(range(12, 16))))
    got = _api(table)
    assert None not in {r[2] for r in got}
    assert _spark(spark, opts) == got


def test_lineage_refusals(spark, opts, monkeypatch):
    """Goal: lineage on a v2 table, in an incremental read, or an unknown column are
    refused by name; a row of a file the lineage join misses fails; a plain `columns` read
    selects. Method: the typed errors' messages, a path spelling injected."""
    v2 = _table(opts, 2)
    require_committed(v2.append(rows(range(4))))
    with pytest.raises(UnsupportedFormatVersion, match="_row_id: row lineage needs format v3.*is v2"):
        read(spark, TABLE, opts, columns=["id", "_row_id"])
    assert sorted(r.id for r in read(spark, TABLE, opts, columns=["id"]).collect()) == [0, 1, 2, 3]
    with pytest.raises(SparkOptionError, match="'nope'"):
        read(spark, TABLE, opts, columns=["id", "nope"])
    v3 = _table(opts, 3, "db.v3")
    require_committed(v3.append(rows(range(4))))
    with pytest.raises(SparkOptionError, match="incremental"):
        read(spark, "icefloe.db.v3", opts, columns=["_row_id"], start_snapshot_id=None,
             end_snapshot_id=v3.current_snapshot().snapshot_id)
    with pytest.raises(SparkOptionError, match="'nope'"):
        read(spark, "icefloe.db.v3", opts, columns=["_row_id", "nope"])
    import icefloe.impl.spark.lineage as L
    with monkeypatch.context() as m:  # a file the broadcast table does not name fails, never reads null
        m.setattr(L, "canonical_location", lambda p: p + ".elsewhere")
        with pytest.raises(Exception, match="row lineage of a file the read did not plan"):
            read(spark, "icefloe.db.v3", opts, columns=["_last_updated_sequence_number"]).collect()
    assert [tuple(r) for r in read(spark, "icefloe.db.v3", opts, columns=["_row_id"]).orderBy("_row_id").collect()] \
        == [(0,), (1,), (2,), (3,)]


def test_spark_compaction_keeps_row_lineage(spark, opts):
    """Goal: a Spark compaction of a v3 table moves rows to new files with their `_row_id`
    and `_last_updated_sequence_number` (spec "Row Lineage": a row moved unmodified keeps
    both), as Table.rewrite_files does. Method: appends, a DV and an update; lineage read
    before and after maintenance.compact, through icefloe's scan and Spark's read."""
    from icefloe.impl.spark.maintenance import compact
    table = _table(opts, 3)
    for start in (0, 20, 40):
        require_committed(table.append(rows(range(start, start + 20))))
    require_committed(table.delete("id in (3, 22)", mode="merge-on-read"))
    require_committed(table.update({"v": 1.5}, "id in (5, 45)", mode="merge-on-read"))
    before = _api(table)
    require_committed(compact(spark, TABLE, opts).outcome)
    table.refresh()
    assert table.current_snapshot().operation == "replace"
    assert _api(table) == before
    assert _spark(spark, opts) == before
