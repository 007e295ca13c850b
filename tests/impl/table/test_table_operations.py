"""Every table operation on both real stacks (LocalStore + SqlCatalog on SQLite, MemoryStore
+ MemoryCatalog): each test commits through the public Table API and checks the rows read
back, the snapshot history and the refs."""
from __future__ import annotations

import pytest

from icefloe.impl.catalog.base import TableAlreadyExists
from icefloe.impl.outcomes import Committed, Conflict, require_committed, CommitConflictError
from icefloe.impl.table.env import metadata_version
from icefloe.impl.table.table import Table, create_table

from table_helpers import SCHEMA, ids_of, rows


def test_create_append_scan_round_trip(stack):
    """Create, two appends, a fresh handle: same rows, linear history, v2 names and numbers."""
    table = stack.create(partition="cat")
    first = require_committed(table.append(rows([1, 2, 3], ["a", "b", "a"])))
    second = require_committed(table.append(rows([4], "c")))
    again = Table(stack.catalog, "db.t", stack.io)
    assert ids_of(again.scan()) == [1, 2, 3, 4]
    assert [s.snapshot_id for s in again.history()] == [first.snapshot_id, second.snapshot_id]
    assert [s.sequence_number for s in again.history()] == [1, 2]
    assert metadata_version(again.metadata_location) == 2
    assert again.metadata.metadata_log[-1].metadata_file == first.metadata_location
    assert again.scan("cat = 'a'").column("id").to_pylist() in ([1, 3], [3, 1])
    assert again.scan(columns=["id"]).column_names == ["id"]


def test_create_twice_is_refused_and_leaves_nothing(stack):
    """A second create of the same identifier raises TableAlreadyExists; its file is deleted."""
    stack.create()
    with pytest.raises(TableAlreadyExists):
        create_table(stack.catalog, "db.t", SCHEMA, None, f"{stack.root}/db/t2", io=stack.io, env=stack.env())
    assert not list(stack.io.list(f"{stack.root}/db/t2/"))


def test_empty_append_is_a_noop(stack):
    """Appending no rows writes nothing: Committed with zero attempts at the current location."""
    table = stack.create()
    puts = stack.io.counts["put_if_absent"]
    outcome = table.append(rows([]))
    assert outcome == Committed(None, 0, table.metadata_location)
    assert stack.io.counts["put_if_absent"] == puts


def test_time_travel_by_id_timestamp_and_tag(stack):
    """Older snapshots read by id, by timestamp (snapshot log) and through a tag."""
    table = stack.create()
    s1 = table.append(rows([1])).snapshot_id
    table.append(rows([2]))
    require_committed(table.create_tag("v1", s1))
    ts = table.snapshot_by_id(s1).timestamp_ms
    assert ids_of(table.scan(snapshot_id=s1)) == [1]
    assert ids_of(table.scan(as_of_ms=ts)) == [1]
    assert ids_of(table.scan(ref="v1")) == [1]
    assert ids_of(table.scan()) == [1, 2]
    assert table.refs["v1"].type == "tag"
    with pytest.raises(ValueError):
        table.scan(as_of_ms=ts - 1)


def test_delete_by_filter_whole_files_and_copy_on_write(stack):
    """A delete removes whole files that match entirely and rewrites partly matching ones."""
    table = stack.create(partition="cat")
    table.append(rows([1, 2, 3, 4], ["a", "a", "b", "b"]))
    before = {t.data_file.file_path for t in table.plan_files()}
    require_committed(table.delete("cat = 'a' or id = 3"))
    assert ids_of(table.scan()) == [4]
    after = {t.data_file.file_path for t in table.plan_files()}
    assert len(after) == 1 and not (after & before)  # the 'b' file was rewritten
    assert table.current_snapshot().summary["deleted-data-files"] == "2"
    assert table.current_snapshot().summary["total-records"] == "1"


def test_delete_matching_nothing_is_a_noop(stack):
    """A delete whose filter matches no row commits nothing."""
    table = stack.create()
    table.append(rows([1]))
    assert table.delete("id > 100").attempts == 0
    assert len(table.history()) == 1


def test_overwrite_by_filter(stack):
    """Overwrite replaces the matching rows and adds the new ones in one snapshot."""
    table = stack.create(partition="cat")
    table.append(rows([1, 2, 3], ["a", "b", "b"]))
    require_committed(table.overwrite(rows([20, 21], "b"), "cat = 'b'"))
    assert ids_of(table.scan()) == [1, 20, 21]
    assert table.current_snapshot().operation == "overwrite"
    require_committed(table.overwrite(rows([7])))  # no filter: everything
    assert ids_of(table.scan()) == [7]


def test_delete_named_files(stack):
    """delete_files removes exactly the named live files."""
    table = stack.create()
    table.append(rows([1]))
    table.append(rows([2]))
    victim = table.tree.changes(table.history()[0]).added_data[0].data_file.file_path
    require_committed(table.delete_files([victim]))
    assert ids_of(table.scan()) == [2]
    assert table.current_snapshot().operation == "delete"


def test_rewrite_files_compacts_per_partition(stack):
    """Compaction turns many files per partition into one, rows unchanged, operation replace."""
    table = stack.create(partition="cat")
    for i in range(3):
        table.append(rows([i, 10 + i], ["a", "b"]))
    assert len(table.plan_files()) == 6
    require_committed(table.rewrite_files())
    assert len(table.plan_files()) == 2
    assert ids_of(table.scan()) == [0, 1, 2, 10, 11, 12]
    assert table.current_snapshot().operation == "replace"
    assert table.rewrite_files().attempts == 0  # nothing left to compact


def test_rollback_and_set_current_snapshot(stack):
    """Rollback moves main to an ancestor; set-current to any retained snapshot; a rollback
    to a non-ancestor is refused."""
    table = stack.create()
    s1 = table.append(rows([1])).snapshot_id
    s2 = table.append(rows([2])).snapshot_id
    require_committed(table.rollback_to(s1))
    assert ids_of(table.scan()) == [1]
    with pytest.raises(ValueError):
        table.rollback_to(s2)
    require_committed(table.set_current_snapshot(s2))
    assert ids_of(table.scan()) == [1, 2]
    assert [e.snapshot_id for e in table.metadata.snapshot_log] == [s1, s2, s1, s2]


def test_branches_are_independent(stack):
    """Appends to a branch leave main alone; the branch's ancestry starts from its base."""
    table = stack.create()
    s1 = table.append(rows([1])).snapshot_id
    require_committed(table.create_branch("audit", s1))
    require_committed(table.append(rows([2]), branch="audit"))
    require_committed(table.append(rows([3])))
    assert ids_of(table.scan()) == [1, 3]
    assert ids_of(table.scan(ref="audit")) == [1, 2]
    assert table.history("audit")[0].snapshot_id == s1
    require_committed(table.replace_branch("audit", table.current_snapshot().snapshot_id))
    assert ids_of(table.scan(ref="audit")) == [1, 3]
    require_committed(table.remove_ref("audit"))
    assert "audit" not in table.refs


def test_set_properties(stack):
    """Properties are set and removed by a metadata-only commit."""
    table = stack.create(properties={"x": "1"})
    require_committed(table.set_properties({"y": "2"}, removals=["x"]))
    assert table.metadata.properties["y"] == "2" and "x" not in table.metadata.properties


def test_incremental_append_scan(stack):
    """The incremental read returns the rows of appends after a snapshot, and reports a gap
    after a rollback past it."""
    from icefloe.impl.table.scan import IncrementalGap
    table = stack.create()
    s1 = table.append(rows([1])).snapshot_id
    table.append(rows([2]))
    table.delete("id = 1")
    s4 = table.append(rows([3])).snapshot_id
    assert ids_of(table.incremental_append_scan(s1)) == [2, 3]
    assert ids_of(table.incremental_append_scan(None, s1)) == [1]
    table.rollback_to(s1)
    with pytest.raises(IncrementalGap):
        table.incremental_append_scan(s4)


def test_require_committed_raises_the_distinct_conflict(stack):
    """A Conflict outcome becomes CommitConflictError through require_committed."""
    with pytest.raises(CommitConflictError):
        require_committed(Conflict("x", 1))
