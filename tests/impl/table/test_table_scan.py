"""Reading snapshots (spec/PROTOCOL.md 10 "Readers"; Iceberg "Scan Planning", "Row-level
Deletes"): planning cost by request counts, pruning, and merge-on-read of delete files
written as another engine writes them, under the sequence-number rules."""
from __future__ import annotations

from icefloe.impl.outcomes import Committed
from icefloe.impl.table import producer as P
from icefloe.impl.table.files import TreeReader
from icefloe.impl.table.scan import plan_files

from table_helpers import ids_of, memory_stack, rows
from delete_writers import data_file, equality_delete_file, position_delete_file


def planning_gets(table, row_filter=None) -> int:
    before = table.io.counts["get"]
    plan_files(TreeReader(table.io), table.metadata, table.current_snapshot(), row_filter)
    return table.io.counts["get"] - before


def test_planning_requests_do_not_grow_with_partitions():
    """One append over few or many partitions: planning reads one manifest list and one
    manifest. Many appends, one per partition: a filter on one partition still reads one
    list and one manifest (summaries prune the rest). No listing at all."""
    counts = {}
    for n in (2, 16):
        stack = memory_stack()
        wide = stack.create("wide", partition="cat")
        wide.append(rows(range(n), [f"p{i}" for i in range(n)]))
        many = stack.create("many", partition="cat")
        for i in range(n):
            many.append(rows([i], f"p{i}"))
        counts[n] = (planning_gets(wide), planning_gets(many, "cat = 'p1'"), len(plan_files(
            TreeReader(many.io), many.metadata, many.current_snapshot(), "cat = 'p1'")))
        assert stack.io.counts["list"] == 0
    assert counts[2] == counts[16] == (2, 2, 1)


def test_metrics_prune_files_and_filter_rows(mem):
    """Column bounds exclude files that cannot match; the residual filter trims rows."""
    table = mem.create()
    table.append(rows([1, 2, 3]))
    table.append(rows([100, 200]))
    assert len(table.plan_files("id >= 150")) == 1
    assert ids_of(table.scan("id >= 150")) == [200]
    assert ids_of(table.scan("id < 3 or id = 100")) == [1, 2, 100]


def test_position_deletes_apply_to_older_data_of_their_file(mem):
    """A position delete hides the named rows of its file; a file appended later with rows at
    the same positions is untouched (it is another path)."""
    table = mem.create()
    table.append(rows([1, 2, 3]))
    path = table.plan_files()[0].data_file.file_path
    delete = position_delete_file(table, [(path, 1), (path, 7)])
    assert isinstance(table.add_delete_files([delete], [path]), Committed)
    table.append(rows([4, 5]))
    assert ids_of(table.scan()) == [1, 3, 4, 5]
    assert [t.position_deletes for t in table.plan_files() if t.data_file.file_path == path][0] == [delete]


def test_a_position_delete_applies_to_data_of_its_own_commit(mem):
    """Goal: a position delete applies to data files of its own data sequence number (spec
    "Scan Planning": data_seq <= delete_seq), as a merge-on-read update commits. Method: one
    row delta adds a data file and a position delete of its second row; that row is gone
    from the scan and the delete is planned against the file."""
    table = mem.create()
    table.append(rows([1]))
    added = data_file(table, rows([7, 8, 9]))
    delete = position_delete_file(table, [(added.file_path, 1)])
    assert isinstance(table.new_commit(P.RowDelta([delete], [added])).run(), Committed)
    table.refresh()
    [task] = [t for t in table.plan_files() if t.data_file.file_path == added.file_path]
    assert task.data_sequence_number == table.current_snapshot().sequence_number
    assert task.position_deletes == [delete]
    assert ids_of(table.scan()) == [1, 7, 9]


def test_equality_deletes_follow_sequence_numbers(mem):
    """An equality delete applies to data with a strictly lower data sequence number: older
    rows with the key vanish, a later append of the same key stays."""
    table = mem.create()
    table.append(rows([5, 6]))
    table.add_delete_files([equality_delete_file(table, "id", [5])])
    assert ids_of(table.scan()) == [6]
    table.append(rows([5]))
    assert ids_of(table.scan()) == [5, 6]
    older = table.history()[0].snapshot_id
    assert ids_of(table.scan(snapshot_id=older)) == [5, 6]


def test_compaction_applies_deletes_and_keeps_the_starting_sequence_number(mem):
    """A rewrite reads its inputs with deletes applied, and its output carries the data
    sequence number of the starting snapshot."""
    table = mem.create()
    table.append(rows([1, 2]))
    table.append(rows([3, 4]))
    table.add_delete_files([equality_delete_file(table, "id", [2])])
    start = table.current_snapshot()
    assert isinstance(table.rewrite_files(), Committed)
    [task] = table.plan_files()
    assert task.data_sequence_number == start.sequence_number
    assert not task.equality_deletes and ids_of(table.scan()) == [1, 3, 4]


def test_delete_by_filter_reads_through_deletes(mem):
    """A copy-on-write delete rewrites survivors with earlier deletes applied (no resurrection)."""
    table = mem.create()
    table.append(rows([1, 2, 3]))
    path = table.plan_files()[0].data_file.file_path
    table.add_delete_files([position_delete_file(table, [(path, 0)])], [path])
    assert isinstance(table.delete("id = 3"), Committed)
    assert ids_of(table.scan()) == [2]


def test_row_delta_rejected_when_its_file_was_removed(mem):
    """A row delta naming a data file that a concurrent commit removed fails validation."""
    table = mem.create()
    table.append(rows([1, 2]))
    path = table.plan_files()[0].data_file.file_path
    delta = table.new_commit(P.RowDelta([position_delete_file(table, [(path, 0)])], (), [path]))
    for _ in range(5):
        delta.step()
    table.delete_files([path])
    outcome = delta.run()
    assert type(outcome).__name__ == "Conflict"


def test_upsert_commits_after_a_rollback_took_its_start_off_main(mem):
    """Goal: a row delta that names no data file and reads no rows (an upsert: an equality
    delete and its new rows) assumes nothing about its starting snapshot (spec/PROTOCOL.md
    7.3 "upsert"), so a rollback landing meanwhile is no conflict; one that names a file
    still is. Method: both deltas plan at the head, a rollback to its parent lands, both
    run."""
    table = mem.create()
    table.append(rows([1, 2]))
    table.append(rows([3]))
    head = table.current_snapshot()
    [path] = [t.data_file.file_path for t in table.plan_files() if t.data_file.record_count == 1]  # rows [3]
    upsert = table.new_commit(P.RowDelta([equality_delete_file(table, "id", [3])], [data_file(table, rows([3]))]))
    named = table.new_commit(P.RowDelta([position_delete_file(table, [(path, 0)])], (), [path]))
    for pending in (upsert, named):
        for _ in range(3):
            pending.step()
    assert isinstance(table.rollback_to(head.parent_snapshot_id), Committed)
    assert isinstance(upsert.run(), Committed)
    assert type(named.run()).__name__ == "Conflict"
    table.refresh()
    assert table.current_snapshot().parent_snapshot_id == head.parent_snapshot_id
    assert ids_of(table.scan()) == [1, 2, 3]


def _naming_exactly(delete, path: str):
    """`delete` with its file_path bounds set to `path` untruncated, as Iceberg-Java writes
    a position delete's file_path metrics (a truncated bound encloses the neighbours too)."""
    from dataclasses import replace

    from icefloe.impl.table.deletes import DELETE_FILE_PATH_ID
    exact = path.encode()
    return replace(delete, lower_bounds={**(delete.lower_bounds or {}), DELETE_FILE_PATH_ID: exact},
                   upper_bounds={**(delete.upper_bounds or {}), DELETE_FILE_PATH_ID: exact})


def test_a_position_delete_is_planned_only_against_files_its_bounds_may_name(mem):
    """Goal: planning attaches a position delete only to data files its file_path bounds may
    enclose (Iceberg-Java's delete index does the same), so a compaction of a lone file
    whose partition holds a delete of another, removed file is a no-op (5.4; the model's
    rewrite plans nothing there). Method: a delete of file A's row, then A removed; B's
    task has no delete; rewriting leaves the head where it was."""
    table = mem.create()
    table.append(rows([1, 2]))
    [a] = [t.data_file.file_path for t in table.plan_files()]
    table.append(rows([3]))
    [b] = [t.data_file.file_path for t in table.plan_files() if t.data_file.file_path != a]
    delete = _naming_exactly(position_delete_file(table, [(a, 0)]), a)
    assert isinstance(table.add_delete_files([delete], [a]), Committed)
    by_path = {t.data_file.file_path: t for t in table.plan_files()}
    assert by_path[a].position_deletes == [delete] and by_path[b].position_deletes == []
    assert isinstance(table.delete_files([a]), Committed)
    head = table.current_snapshot().snapshot_id
    outcome = table.rewrite_files()
    assert isinstance(outcome, Committed) and outcome.attempts == 0, outcome
    table.refresh()
    assert table.current_snapshot().snapshot_id == head and ids_of(table.scan()) == [3]


def test_a_lone_file_is_compacted_only_when_a_delete_removes_some_of_its_rows(mem):
    """Goal: a compaction rewrites a partition's lone file when deletes remove rows of it,
    and not when the deletes that may apply (truncated bounds, an equality delete) remove
    none. Method: an equality delete matching nothing leaves the rewrite a no-op; one
    matching a row makes it rewrite the file without that row."""
    table = mem.create()
    table.append(rows([1, 2]))
    table.add_delete_files([equality_delete_file(table, "id", [9])])
    assert table.rewrite_files().attempts == 0
    table.add_delete_files([equality_delete_file(table, "id", [2])])
    outcome = table.rewrite_files()
    assert isinstance(outcome, Committed) and outcome.snapshot_id is not None
    [task] = table.plan_files()
    assert not task.equality_deletes and ids_of(table.scan()) == [1]


def test_an_overwrite_removes_a_file_whose_rows_were_all_deleted(mem):
    """Goal: a file every row of which a delete file deleted is removed by an overwrite whose
    filter may select it (as a partition overwrite removes every file of the partition), so
    the snapshot is an "overwrite", not an "append" an incremental reader would take
    (the seed gate's seed 1: P10). Method: one partitioned table, the only row of partition 'a' deleted by position; overwrite of
    cat = 'a'."""
    table = mem.create(partition="cat")
    table.append(rows([1], cat="a"))
    table.append(rows([2], cat="b"))
    [a] = [t.data_file for t in table.plan_files() if t.data_file.partition == ("a",)]
    assert isinstance(table.add_delete_files([position_delete_file(table, [(a.file_path, 0)], ("a",))],
                                             [a.file_path]), Committed)
    assert isinstance(table.overwrite(rows([3], cat="a"), "cat = 'a'"), Committed)
    summary = table.current_snapshot().summary
    assert summary["operation"] == "overwrite" and summary["deleted-data-files"] == "1", summary
    assert a.file_path not in {t.data_file.file_path for t in table.plan_files()}
    assert ids_of(table.scan()) == [2, 3]


def test_a_position_delete_applies_to_a_data_file_spelled_another_way(tmp_path):
    """Goal: a position delete finds its data file however each engine spelled the local
    path (Hadoop and Spark write `file:/x`, icefloe and pyiceberg `file:///x`; spec
    "Position Delete Files": file_path is the data file's location). Method: one row delta
    adds a data file listed as `file:/...` and a position delete of its second row naming
    it `file:///...`; the scan drops that row, and the delete is planned against the file."""
    import dataclasses
    from table_helpers import local_stack
    stack = local_stack(tmp_path)
    try:
        table = stack.create()
        table.append(rows([1]))
        added = data_file(table, rows([7, 8, 9]))
        assert added.file_path.startswith("file:///")
        foreign = dataclasses.replace(added, file_path="file:/" + added.file_path.removeprefix("file:///"))
        delete = position_delete_file(table, [(added.file_path, 1)])
        assert isinstance(table.new_commit(P.RowDelta([delete], [foreign])).run(), Committed)
        table.refresh()
        [task] = [t for t in table.plan_files() if t.data_file.file_path == foreign.file_path]
        assert task.position_deletes == [delete]
        assert ids_of(table.scan()) == [1, 7, 9]
    finally:
        stack.catalog.close()
