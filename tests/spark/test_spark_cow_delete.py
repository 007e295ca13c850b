"""Copy-on-write deletes through Spark (impl/spark/cow_delete.py): the survivors move through
Spark's writer, and the result is Table.delete's: the same rows (with the same `_row_id`s on
v3), the same files removed, the same operation, the same validations."""
from __future__ import annotations

import pytest

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format import types as T
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.io.local import LocalStore
from icefloe.impl.outcomes import CommitConflictError, require_committed
from icefloe.impl.spark import delete, read
from icefloe.impl.spark.job import ValidationFailed
from icefloe.impl.spark.producers import SUMMARY_JOB_ID
from icefloe.impl.table.table import Table, create_table
from spark_helpers import SCHEMA, rows

pytestmark = pytest.mark.xdist_group("spark")


def _twins(spark, opts, format_version: int) -> tuple[Table, Table]:
    """db.t (deleted from through Spark) and db.u (through Table.delete), written alike:
    two appends of 4 partitions and one of a single row (id 80), then a Spark merge-on-read
    delete (position deletes on v2, DVs on v3) so that some files carry deletes already and
    the one-row file has no live row left (a delete whose filter range holds it removes it)."""
    schema = T.schema_from_arrow(SCHEMA)
    out = []
    for name in ("t", "u"):
        table = create_table(SqlCatalog(opts["catalog-uri"], name="icefloe"), f"db.{name}", schema,
                             parse_partition_spec("cat", schema), f"file://{opts['warehouse']}/db.db/{name}",
                             io=LocalStore(), format_version=format_version)
        require_committed(table.append(rows(range(0, 40))))
        require_committed(table.append(rows(range(40, 80))))
        require_committed(table.append(rows([80])))
        if format_version >= 2:
            delete(spark, f"icefloe.db.{name}", opts, "id in (3, 44, 80)", mode="merge-on-read")
        out.append(table)
    return out[0], out[1]


def _state(table: Table) -> dict:
    """What a delete leaves: the rows (and their lineage on v3), the operation, how many
    data files went and came, and whether a live delete file is left on a removed file."""
    table.refresh()
    columns = ["id", "cat", "v"] + (["_row_id", "_last_updated_sequence_number"]
                                    if table.metadata.format_version >= 3 else [])
    got = table.scan(columns=columns).sort_by("id").to_pylist()
    snap = table.current_snapshot()
    s = snap.summary
    return {"rows": got, "operation": snap.operation,
            "removed": int(s.get("deleted-data-files", 0)), "added_rows": int(s.get("added-records", 0)),
            "deleted_rows": int(s.get("deleted-records", 0))}


@pytest.mark.parametrize("format_version", [1, 2, 3])
@pytest.mark.parametrize("row_filter", ["id < 6 or id > 74",        # rewrites files of every partition
                                        "cat = 'b'",                 # whole files only: no Spark write
                                        "id = 1000",                 # nothing
                                        "v > 10.0 and cat in ('a', 'c')"])
def test_spark_copy_on_write_delete_leaves_what_table_delete_leaves(spark, opts, monkeypatch, format_version,
                                                                     row_filter):
    """Goal: the Spark copy-on-write delete is Table.delete with the survivors written by Spark:
    same rows, same row ids and sequence numbers on v3, same operation and counts. Method:
    twin tables, one deleted from through Spark (with Table.delete made to fail, so the driver
    path cannot stand in), the other by Table.delete; the summaries name the Spark job when
    survivors were rewritten."""
    t, u = _twins(spark, opts, format_version)
    twin_outcome = u.delete(row_filter, mode="copy-on-write")
    monkeypatch.setattr(Table, "delete", lambda *a, **k: pytest.fail("the driver's Table.delete ran"))
    outcome = delete(spark, "icefloe.db.t", opts, row_filter, mode="copy-on-write")
    assert (outcome.snapshot_id is None) == (twin_outcome.snapshot_id is None)
    assert _state(t) == _state(u)
    if outcome.snapshot_id is not None:
        summary = t.current_snapshot().summary
        assert (SUMMARY_JOB_ID in summary) == (t.current_snapshot().operation == "overwrite"), summary
    assert sorted(r.id for r in read(spark, "icefloe.db.t", opts).collect()) == \
        sorted(r["id"] for r in _state(u)["rows"])


def _live_data_paths(table: Table) -> set[str]:
    table.refresh()
    return table.tree.live_data_paths(table.current_snapshot())


def _dv_racing(monkeypatch, opts, other_filter: str):
    """Commit icefloe's own merge-on-read delete of `other_filter` right after Spark's
    first job (the counts) ran."""
    import icefloe.impl.spark.cow_delete as CD
    real = CD._counts

    def racing(scan):
        found = real(scan)
        other = Table(SqlCatalog(opts["catalog-uri"], name="icefloe"), "db.t", LocalStore())
        require_committed(other.delete(other_filter, mode="merge-on-read"))
        return found
    monkeypatch.setattr(CD, "_counts", racing)


def test_a_delete_racing_a_rewritten_file_is_a_conflict_and_nothing_is_lost(spark, opts, monkeypatch):
    """Goal: a DV committed meanwhile for a file whose survivors Spark rewrites refuses the
    commit (its row would come back), as Table.delete's validation does. Method: the racing
    delete between the Spark jobs; the typed error, the rows, the data files left."""
    t, _ = _twins(spark, opts, 3)
    _dv_racing(monkeypatch, opts, "id = 4")   # id 4 (cat 'a') survives 'id = 0' in the same file
    before = _live_data_paths(t)
    with pytest.raises((CommitConflictError, ValidationFailed)):
        delete(spark, "icefloe.db.t", opts, "id = 0", mode="copy-on-write")
    assert _live_data_paths(t) == before
    t.refresh()
    assert sorted(t.scan().column("id").to_pylist()) == [i for i in range(81) if i not in (3, 44, 80, 4)]


@pytest.mark.parametrize("row_filter, operation, also_deleted", [
    ("cat = 'b'", "delete", ()),                   # files removed whole only
    ("cat = 'b' or id = 0", "overwrite", (0,)),     # and one file's survivors rewritten beside them
])
def test_a_delete_racing_a_file_removed_whole_does_not_conflict(spark, opts, monkeypatch, row_filter, operation,
                                                                 also_deleted):
    """Goal: a DV committed meanwhile for a file the delete removes whole does not refuse it
    (no row of that file is copied forward), as Table.delete, also when the same delete
    rewrites another file's survivors. Method: delete every 'b' row (and id 0, in a file of
    'a') while a racing DV deletes one 'b' row."""
    t, _ = _twins(spark, opts, 3)
    _dv_racing(monkeypatch, opts, "id = 1")
    outcome = delete(spark, "icefloe.db.t", opts, row_filter, mode="copy-on-write")
    assert outcome.snapshot_id is not None
    t.refresh()
    assert t.current_snapshot().operation == operation
    assert sorted(t.scan().column("id").to_pylist()) == \
        [i for i in range(81) if i % 4 != 1 and i not in (3, 44, 80, *also_deleted)]
