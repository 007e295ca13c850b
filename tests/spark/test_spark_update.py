"""Row-level updates through Spark (impl/spark/native_update.py; issue 29 item 2): the rows
and their lineage after `update(spark, ...)` equal impl/table's Table.update on an identical
table (merge-on-read and copy-on-write, v2 and v3, an upgraded table); merge-on-read writes
one live DV per touched file (v3) or position delete files (v2); a rival commit between the
Spark jobs and the swap is a typed conflict leaving no file; mistakes are refused by name
with nothing committed; icefloe's Spark read, DuckDB and pyiceberg read the result."""
from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format import types as T
from icefloe.impl.format.manifest import ManifestContent
from icefloe.impl.format.metadata import UnsupportedFormatVersion
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.io.local import LocalStore
from icefloe.impl.outcomes import CommitConflictError, InvalidArgument, require_committed
from icefloe.impl.spark import read, update
from icefloe.impl.spark.options import SparkOptionError
from icefloe.impl.table.append_schema import SchemaMismatch
from icefloe.impl.table.table import Table, create_table
from spark_helpers import SCHEMA, rows

pytestmark = pytest.mark.xdist_group("spark")
COLUMNS = ["id", "cat", "v", "_row_id", "_last_updated_sequence_number"]
MOR, COW = "merge-on-read", "copy-on-write"


def _table(opts, name: str, format_version: int):
    schema = T.schema_from_arrow(SCHEMA)
    return create_table(SqlCatalog(opts["catalog-uri"], name="icefloe"), f"db.{name}", schema,
                        parse_partition_spec("cat", schema), f"file://{opts['warehouse']}/db.db/{name}",
                        io=LocalStore(), format_version=format_version)


def _twins(opts, format_version: int, history):
    """Two tables with the same commits: `db.spark` (Spark updates it) and `db.api`."""
    out = []
    for name in ("spark", "api"):
        t = _table(opts, name, format_version)
        history(t)
        t.refresh()
        out.append(t)
    return out


def _history(t):
    require_committed(t.append(rows(range(0, 40))))
    require_committed(t.append(rows(range(40, 60))))


def _scan(table, columns=COLUMNS) -> list[tuple]:
    table.refresh()
    got = table.scan(columns=columns)
    return sorted(zip(*[got.column(c).to_pylist() for c in columns]))


def _live_deletes(table) -> list:
    table.refresh()
    return [e.data_file for _, e in table.tree.live_entries(table.current_snapshot(), ManifestContent.DELETES)]


def _on_disk(opts, name: str) -> set[str]:
    """The files under the table's data folder, but a Spark job's markers (job.py keeps
    `_job/*.json` by design: an abort reads them)."""
    root = Path(opts["warehouse"], "db.db", name, "data")
    return {str(p.resolve()) for p in root.rglob("*") if p.is_file() and p.parent.name != "_job"} \
        if root.exists() else set()


def _debris(opts, name: str, before: set[str]) -> list[str]:
    """Files put under the table's data folder since `before` that no live entry names."""
    table = Table(SqlCatalog(opts["catalog-uri"], name="icefloe"), f"db.{name}", LocalStore())
    snap = table.current_snapshot()
    named = {str(Path(e.data_file.file_path.replace("file://", "")).resolve())
             for _, e in table.tree.live_entries(snap)} if snap else set()
    return sorted(_on_disk(opts, name) - before - named)


@pytest.mark.parametrize("mode", [MOR, COW])
def test_v3_update_equals_table_update_with_lineage(spark, opts, mode):
    """Goal: a Spark update on v3 gives the rows, `_row_id`s, `_last_updated_sequence_number`s
    and next-row-id that Table.update gives on an identical table, merge-on-read keeping
    one live DV per data file (an earlier DV merged and superseded), twice in a row (the
    second over files Spark wrote); Spark's lineage read and DuckDB agree. Method: twin
    tables with a DV delete; the same two updates through Spark and through the API;
    both tables' scans with lineage, the DVs, next-row-id, Spark's and DuckDB's reads."""
    spark_t, api_t = _twins(opts, 3, lambda t: (_history(t), t.delete("id in (2, 45)", mode=MOR)))
    before = {r[0]: r[3] for r in _scan(api_t)}
    update(spark, "icefloe.db.spark", opts, set={"v": 99.5}, row_filter="id < 9 or id = 50", mode=mode)
    require_committed(api_t.update({"v": 99.5}, "id < 9 or id = 50", mode=mode))
    got = _scan(spark_t)
    assert got == _scan(api_t)
    assert spark_t.metadata.next_row_id == api_t.metadata.next_row_id
    seq = spark_t.current_snapshot().sequence_number
    assert spark_t.current_snapshot().operation == "overwrite"
    assert {r[0] for r in got if r[4] == seq} == {0, 1, 3, 4, 5, 6, 7, 8, 50}   # updated: the update's seq
    assert all(r[3] == before[r[0]] for r in got)                                  # every row keeps its _row_id
    assert all(r[2] == 99.5 for r in got if r[0] in (0, 1, 3, 50)) and not {2, 45} & {r[0] for r in got}
    if mode == MOR:
        dvs = _live_deletes(spark_t)
        assert all(d.is_deletion_vector for d in dvs)
        referenced = [d.referenced_data_file for d in dvs]
        assert len(referenced) == len(set(referenced))  # one live DV per data file
        assert sum(d.record_count for d in dvs) == sum(d.record_count for d in _live_deletes(api_t))
    else:
        live = spark_t.tree.live_data_paths(spark_t.current_snapshot())
        kept = [d.referenced_data_file for d in _live_deletes(spark_t)]
        assert len(kept) == 1 and set(kept) <= live  # 45's DV; 2's went with its rewritten file
    # a second update, of rows Spark wrote (their _row_id materialised), as an expression
    update(spark, "icefloe.db.spark", opts, set={"v": "v + 1", "cat": "'z'"}, row_filter="v = 99.5 and id > 4",
           mode=mode)
    require_committed(api_t.update({"v": 100.5, "cat": "z"}, "v = 99.5 and id > 4", mode=mode))
    got = _scan(spark_t)
    assert got == _scan(api_t) and spark_t.metadata.next_row_id == api_t.metadata.next_row_id
    assert {r[0] for r in got if r[1] == "z"} == {5, 6, 7, 8, 50}
    lineage = sorted(tuple(r) for r in read(spark, "icefloe.db.spark", opts, columns=COLUMNS).collect())
    assert lineage == got
    from icefloe.conformance.engines.duckdb_engine import connect
    duck = sorted(connect().execute(f"SELECT {', '.join(COLUMNS)} FROM iceberg_scan('{spark_t.metadata_location}')")
                  .fetchall())
    assert duck == got


@pytest.mark.parametrize("mode", [MOR, COW])
def test_v2_update_equals_table_update(spark, opts, mode):
    """Goal: on v2 a Spark update gives Table.update's rows (copy-on-write: the API's own
    mode; merge-on-read: Table.update refuses it on v2, so its copy-on-write is the
    reference), merge-on-read writing one position delete file per touched data file and
    the updated rows; pyiceberg reads the same rows. Method: twin v2 tables, both scans,
    the live delete files, pyiceberg's StaticTable."""
    spark_t, api_t = _twins(opts, 2, _history)
    with pytest.raises(UnsupportedFormatVersion):
        api_t.update({"v": 1.0}, "id = 1", mode=MOR)
    update(spark, "icefloe.db.spark", opts, set={"v": 7}, row_filter="id in (1, 2, 41)", mode=mode)
    require_committed(api_t.update({"v": 7.0}, "id in (1, 2, 41)", mode=COW))
    values = ["id", "cat", "v"]
    assert _scan(spark_t, values) == _scan(api_t, values)
    deletes = _live_deletes(spark_t)
    if mode == MOR:
        assert len(deletes) == 3 and all(not d.is_deletion_vector and d.referenced_data_file for d in deletes)
        assert sorted(d.record_count for d in deletes) == [1, 1, 1]  # ids 1, 2, 41 are in three files
    else:
        assert deletes == []
    assert spark_t.metadata.format_version == 2
    from pyiceberg.table import StaticTable
    peer = StaticTable.from_metadata(spark_t.metadata_location).scan().to_arrow()
    assert sorted(zip(*[peer.column(c).to_pylist() for c in values])) == _scan(api_t, values)


def test_upgraded_table_update_assigns_ids_and_replaces_position_deletes(spark, opts):
    """Goal: on a table upgraded from v2 (no first_row_id yet) a Spark merge-on-read update
    gives Table.update's rows; untouched rows get the ids the API's commit gives them, the
    updated rows the same ids as a set (their order in the new files is Spark's); a touched
    file's v2 position delete file is replaced by a DV holding its positions. Method: twin
    v2 tables, a copy-on-write delete and a Spark position delete, upgraded; the same
    update both ways; scans, next-row-id, the live delete files."""
    def history(t):
        _history(t)
        require_committed(t.delete("id = 4", mode=COW))
    spark_t, api_t = _twins(opts, 2, history)
    from icefloe.impl.spark import delete
    for name, t in (("spark", spark_t), ("api", api_t)):
        delete(spark, f"icefloe.db.{name}", opts, "id = 8", mode=MOR)  # a v2 position delete file
        require_committed(t.upgrade_format_version(3))
    assert {(r[3], r[4]) for r in _scan(spark_t)} == {(None, None)}
    changed = {0, 12, 41}
    update(spark, "icefloe.db.spark", opts, set={"v": -1.0}, row_filter="id in (0, 12, 41)", mode=MOR)
    require_committed(api_t.update({"v": -1.0}, "id in (0, 12, 41)", mode=MOR))
    got, want = _scan(spark_t), _scan(api_t)
    assert spark_t.metadata.next_row_id == api_t.metadata.next_row_id
    assert [r for r in got if r[0] not in changed] == [r for r in want if r[0] not in changed]
    assert [r[:3] + r[4:] for r in got] == [r[:3] + r[4:] for r in want]
    assert {r[3] for r in got if r[0] in changed} == {r[3] for r in want if r[0] in changed}
    assert [(r[0], r[2]) for r in got] == sorted((i, -1.0 if i in changed else i * 0.5)
                                                 for i in range(60) if i not in (4, 8))
    ids = [r[3] for r in got]
    assert None not in ids and len(set(ids)) == len(ids) and max(ids) < spark_t.metadata.next_row_id
    live = _live_deletes(spark_t)
    assert all(d.is_deletion_vector for d in live) and len(live) == 2  # a's file (8, 0, 12), b's (41)
    assert sorted(d.record_count for d in live) == [1, 3]


def test_rival_commit_between_the_jobs_and_the_swap_is_a_conflict(spark, opts):
    """Goal: a DV committed for a touched file after the Spark jobs read the table makes the
    Spark update fail typed (never two live DVs, no lost update), and its data files and
    Puffin file are removed; copy-on-write alike; under serializable isolation a matching row
    appended meanwhile conflicts too, under snapshot isolation it commits (the new row left
    as it was). Method: icefloe's own delete or append injected at before_swap; the error,
    the table's rows and its data folder."""
    for mode, name in ((MOR, "m"), (COW, "c")):
        table = _table(opts, name, 3)
        require_committed(table.append(rows(range(0, 20))))
        table.refresh()
        before, files = _scan(table), _on_disk(opts, name)

        def rival():
            other = Table(SqlCatalog(opts["catalog-uri"], name="icefloe"), f"db.{name}", LocalStore())
            require_committed(other.delete("id = 4", mode=MOR))  # same file as id 0 (partition a)
        with pytest.raises(CommitConflictError):
            update(spark, f"icefloe.db.{name}", opts, set={"v": 1.0}, row_filter="id = 0", mode=mode,
                   before_swap=rival)
        assert _scan(table) == [r for r in before if r[0] != 4]
        assert _debris(opts, name, files) == []

    # serializable: a row matching the filter appended meanwhile is a conflict; snapshot isolation commits
    table = _table(opts, "s", 3)
    require_committed(table.append(rows(range(0, 8))))

    def append_match():
        other = Table(SqlCatalog(opts["catalog-uri"], name="icefloe"), "db.s", LocalStore())
        require_committed(other.append(rows([100])))
    with pytest.raises(CommitConflictError):
        update(spark, "icefloe.db.s", opts, set={"v": 1.0}, row_filter="id = 0 or id = 100", mode=MOR,
               before_swap=append_match)
    update(spark, "icefloe.db.s", opts, set={"v": 1.0}, row_filter="id = 0 or id >= 100", mode=MOR,
           isolation_level="snapshot", before_swap=lambda: require_committed(
               Table(SqlCatalog(opts["catalog-uri"], name="icefloe"), "db.s", LocalStore()).append(rows([101]))))
    got = [(r[0], r[2]) for r in _scan(table) if r[0] in (0, 100, 101)]
    assert got == [(0, 1.0), (100, 1.0), (101, 50.5)]  # 100 was there when the jobs read, 101 came after


def test_refusals_commit_nothing(spark, opts):
    """Goal: mistakes are refused by name before anything is committed or left behind.
    Method: each refusal's type and message, then the table's snapshot and data folder."""
    table = _table(opts, "t", 3)
    require_committed(table.append(rows(range(0, 10))))
    table.refresh()
    head, files = table.current_snapshot().snapshot_id, _on_disk(opts, "t")
    t = "icefloe.db.t"
    cases = [({"nope": 1}, InvalidArgument, "'nope'"), ({"_row_id": 1}, InvalidArgument, "_row_id is a row lineage"),
             ({"v": "nope + 1"}, SparkOptionError, "nope"), ({"v": "'abc'"}, SchemaMismatch, "set v: string"),
             ({"id": None}, InvalidArgument, "id is required"), ({}, InvalidArgument, "at least one")]
    for assignments, error, message in cases:
        with pytest.raises(error, match=message):
            update(spark, t, opts, set=assignments, row_filter="id = 1")
    with pytest.raises(SparkOptionError, match="'merge-on-write'"):
        update(spark, t, opts, set={"v": 1}, mode="merge-on-write")
    with pytest.raises(Exception, match="required column 'id' has a null"):
        update(spark, t, opts, set={"id": "case when id = 1 then null else id end"}, row_filter="id < 3")
    v1 = _table(opts, "v1", 1)
    require_committed(v1.append(rows(range(3))))
    with pytest.raises(UnsupportedFormatVersion, match="db.v1 is v1"):
        update(spark, "icefloe.db.v1", opts, set={"v": 1}, row_filter="id = 1", mode=MOR)
    update(spark, "icefloe.db.v1", opts, set={"v": "v + 10"}, row_filter="id = 1")  # v1 copy-on-write
    assert _scan(v1, ["id", "v"]) == [(0, 0.0), (1, 10.5), (2, 1.0)]
    table.refresh()
    assert table.current_snapshot().snapshot_id == head and _on_disk(opts, "t") == files
    # the default mode is the table's write.update.mode; a filter matching nothing commits nothing
    require_committed(table.set_properties({"write.update.mode": MOR}))
    table.refresh()
    head = table.current_snapshot().snapshot_id
    assert update(spark, t, opts, set={"v": 1}, row_filter="id = 100").snapshot_id is None
    update(spark, t, opts, set={"v": 1}, row_filter="id = 1")
    assert all(d.is_deletion_vector for d in _live_deletes(table)) and len(_live_deletes(table)) == 1
