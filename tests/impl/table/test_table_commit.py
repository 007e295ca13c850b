"""The commit loop stepped phase by phase (spec/PROTOCOL.md 5, 6, 7): two writers are
interleaved explicitly on MemoryStore + MemoryCatalog; each test checks what an attempt
reuses, what a retry validates, and how the loop is bounded."""
from __future__ import annotations

import random

import pytest


from icefloe.impl.outcomes import CommitLoopExceeded, Committed, Conflict
from icefloe.impl.table import producer as P
from icefloe.impl.table.commit import (
    DATA, LIST, MANIFESTS, METADATA, PendingCommit, RETRY, RetryPolicy, SWAP,
)
from icefloe.impl.table.env import Env, backoff_wait_ms
from icefloe.impl.table.operations import SetRef
from icefloe.impl.table.table import Table

from table_helpers import ids_of, memory_stack, rival, rows, step_to


class FixedRandom(random.Random):
    def __init__(self, u: float):
        super().__init__(0)
        self.u = u

    def random(self):
        return self.u


def stored(mem, table) -> set:
    return {i.location for i in mem.io.list(table.location + "/")}


def test_backoff_is_full_jitter_between_min_and_doubling_cap():
    """6.2: with u at 0 and near 1 the waits span [min, min(max, min*2^k)] for each k."""
    low, high = Env(rng=FixedRandom(0.0)), Env(rng=FixedRandom(0.999999))
    for k, cap in [(1, 200), (2, 400), (4, 1600), (20, 60_000)]:
        assert backoff_wait_ms(low, k, 100, 60_000) == 100
        assert backoff_wait_ms(high, k, 100, 60_000) == cap


def test_retry_policy_defaults_are_icebergs():
    """6.1: num-retries 4 (5 attempts), 100 ms, 60 s, 30 min when no property is set."""
    policy = RetryPolicy.from_properties({})
    assert (policy.num_retries, policy.retry_wait_ms_min, policy.retry_wait_ms_max, policy.commit_timeout_ms_total) == (
        4, 100, 60_000, 1_800_000)
    assert policy.commit_attempts_max == 5


def test_fast_append_retry_writes_only_a_list_and_a_metadata_file(mem):
    """5.2: after a rejected swap an append keeps its snapshot id and manifest and writes
    exactly two objects (manifest list, metadata); the committed list names its manifest once."""
    table = mem.create()
    table.append(rows([1]))
    commit = table.new_commit(P.FastAppend(rows([2])))
    assert [commit.step() for _ in range(5)] == [DATA, MANIFESTS, LIST, METADATA, SWAP]
    snapshot_id, manifest = commit.snapshot_id, commit.operation.manifest
    rival(mem).append(rows([3]))
    assert commit.step() == RETRY
    assert commit.step() == LIST  # reconcile restarts an append at the manifest list
    puts = mem.io.counts["put_if_absent"]
    step_to(commit, SWAP)
    assert mem.io.counts["put_if_absent"] - puts == 2
    outcome = commit.run()
    assert outcome == Committed(snapshot_id, 2, commit.attempted[-1])
    table.refresh()
    paths = [m.manifest_path for m in table.tree.manifests(table.current_snapshot())]
    assert paths.count(manifest.manifest_path) == 1 and len(paths) == 3
    assert ids_of(table.scan()) == [1, 2, 3]
    assert table.current_snapshot().parent_snapshot_id == table.history()[1].snapshot_id


def test_a_commit_loop_past_its_bound_raises_a_typed_error_not_an_assertion(mem, monkeypatch):
    """6.3: the loop's bound holds under `python -O` too. Method: a commit whose steps never
    leave its phase (a stuck operation); run() must raise CommitLoopExceeded naming the phase,
    not an AssertionError (an assert is compiled away under -O and the loop would spin)."""
    table = mem.create()
    commit = table.new_commit(P.FastAppend(rows([1])))
    monkeypatch.setattr(commit, "step", lambda: commit.phase)
    with pytest.raises(CommitLoopExceeded, match="did not finish in .* steps"):
        commit.run()


def test_retried_append_takes_the_sequence_number_of_the_snapshot_that_lands(mem):
    """Goal: an append's files carry the data sequence number of the snapshot that commits
    them, never one fixed by the base its first attempt saw (1.6: inherited from the
    manifest list). Method: an append is stepped past its manifest; a rival appends, then
    commits an equality delete of the append's key; the append retries and lands: its file's
    data sequence number is its snapshot's, and its rows survive a delete committed before it."""
    from delete_writers import equality_delete_file
    table = mem.create()
    table.append(rows([1]))
    commit = table.new_commit(P.FastAppend(rows([7])))
    step_to(commit, SWAP)
    other = rival(mem)
    other.append(rows([2]))
    assert isinstance(other.add_delete_files([equality_delete_file(other, "id", [7])]), Committed)
    assert isinstance(commit.run(), Committed) and commit.attempt == 2
    table.refresh()
    head = table.current_snapshot()
    [task] = [t for t in table.plan_files() if t.data_file.file_path in {f.file_path for f in commit.operation.files}]
    assert task.data_sequence_number == head.sequence_number
    assert ids_of(table.scan()) == [1, 2, 7]


def test_waits_are_injected_and_jittered(mem):
    """The loop sleeps through the injected sleep, once per retry, within the jitter bounds."""
    waits = []
    table = mem.create(properties={"commit.retry.min-wait-ms": "100", "commit.retry.max-wait-ms": "60000"})
    table.env = Env.seeded(7, sleep_ms=waits.append)
    commit = table.new_commit(P.FastAppend(rows([1])))
    step_to(commit, SWAP)
    rival(mem).append(rows([2]))
    assert isinstance(commit.run(), Committed)
    assert len(waits) == 1 and 100 <= waits[0] <= 200


def test_total_timeout_ends_the_loop_in_conflict_and_cleans_up(mem):
    """6.3: when the next wait would pass commit.retry.total-timeout-ms the loop stops:
    Conflict, no sleep taken, everything written deleted."""
    now = [0]
    sleeps = []
    table = mem.create(properties={"commit.retry.min-wait-ms": "100", "commit.retry.max-wait-ms": "100",
                                   "commit.retry.total-timeout-ms": "50"})
    table.env = Env.seeded(3, monotonic_ms=lambda: now[0], sleep_ms=sleeps.append)
    before = stored(mem, table)
    commit = table.new_commit(P.FastAppend(rows([1])))
    step_to(commit, SWAP)
    rival(mem).append(rows([2]))
    outcome = commit.run()
    assert isinstance(outcome, Conflict) and "time" in outcome.reason and not sleeps
    t = rival(mem)
    assert stored(mem, table) - before == {t.metadata_location} | t.tree.reach(t.current_snapshot())


def test_overwrite_conflicts_with_a_concurrent_matching_append_only_under_serializable(mem):
    """7.3: a concurrent append of a row matching the filter fails a serializable delete;
    under snapshot isolation the delete commits and the new row survives."""
    for isolation, expect in [(P.SERIALIZABLE, Conflict), (P.SNAPSHOT, Committed)]:
        mem = memory_stack()
        table = mem.create()
        table.append(rows([1, 2], ["a", "b"]))
        commit = table.new_commit(P.DeleteWhere("cat = 'a'", None, isolation=isolation))
        step_to(commit, SWAP)
        rival(mem).append(rows([3], "a"))
        assert isinstance(commit.run(), expect), isolation
        assert ids_of(rival(mem).scan()) == ([1, 2, 3] if expect is Conflict else [2, 3])


def test_compaction_against_concurrent_delete_conflicts_without_resurrecting_rows(mem):
    """14.1 / apache/iceberg #10312: a compaction planned before a delete of one of its input
    files commits must fail validation; the deleted row stays deleted, its outputs are removed."""
    table = mem.create()
    table.append(rows([1, 2]))
    table.append(rows([3, 4]))
    compaction = table.new_commit(P.RewriteFiles())
    step_to(compaction, SWAP)
    written = list(compaction.written)
    assert isinstance(rival(mem).delete("id = 1"), Committed)
    outcome = compaction.run()
    assert isinstance(outcome, Conflict) and "FilesStillLive" in outcome.reason
    assert ids_of(rival(mem).scan()) == [2, 3, 4]
    assert not any(w in stored(mem, table) for w in written)


def test_compaction_against_concurrent_position_delete_conflicts(mem):
    """7.3 rewrite: a delete file added after the compaction read its inputs fails it."""
    from delete_writers import position_delete_file
    table = mem.create()
    table.append(rows([1, 2]))
    table.append(rows([3]))
    compaction = table.new_commit(P.RewriteFiles())
    step_to(compaction, SWAP)
    target = table.plan_files()[0].data_file.file_path
    other = rival(mem)
    delete = position_delete_file(other, [(target, 0)])
    assert isinstance(other.add_delete_files([delete], [target]), Committed)
    outcome = compaction.run()
    assert isinstance(outcome, Conflict) and "NoNewDeletesForFiles" in outcome.reason


def test_copy_on_write_against_concurrent_position_delete_conflicts(mem):
    """7.3 overwrite / delete by filter: a delete file added after it read a file it
    rewrites fails it (the deleted row would come back in the copy); a serializable
    overwrite also refuses one for a file it read. Method: step each to its swap, commit a
    position delete of row 1 from a rival, run it; row 1 stays deleted."""
    from delete_writers import position_delete_file
    for operation in (P.DeleteWhere("id = 2", None), P.DeleteWhere("cat = 'a'", rows([9], "a"))):
        mem = memory_stack()
        table = mem.create()
        table.append(rows([1, 2, 3], ["a", "a", "b"]))
        commit = table.new_commit(operation)
        step_to(commit, SWAP)
        target = table.plan_files()[0].data_file.file_path
        other = rival(mem)
        assert isinstance(other.add_delete_files([position_delete_file(other, [(target, 0)])], [target]), Committed)
        outcome = commit.run()
        assert isinstance(outcome, Conflict) and "NoNewDeletesForFiles" in outcome.reason, operation
        assert ids_of(rival(mem).scan()) == [2, 3]


def test_two_deletes_of_the_same_file_second_conflicts(mem):
    """7.3 delete files: the file must be live in every snapshot in between."""
    table = mem.create()
    table.append(rows([1]))
    path = table.plan_files()[0].data_file.file_path
    first = table.new_commit(P.DeleteFiles([path]))
    step_to(first, SWAP)
    assert isinstance(rival(mem).delete_files([path]), Committed)
    assert isinstance(first.run(), Conflict)


def test_delete_retry_refilters_only_manifests_added_since(mem):
    """5.2: a delete retried after a concurrent append reuses the manifest it already
    filtered; its second attempt writes just a manifest list and a metadata file."""
    table = mem.create()
    table.append(rows([1, 2]))
    commit = table.new_commit(P.DeleteFiles([table.plan_files()[0].data_file.file_path]))
    step_to(commit, SWAP)
    rival(mem).append(rows([5]))
    assert commit.step() == RETRY
    assert commit.step() == MANIFESTS
    puts = mem.io.counts["put_if_absent"]
    step_to(commit, SWAP)
    assert mem.io.counts["put_if_absent"] - puts == 2
    assert isinstance(commit.run(), Committed)
    assert ids_of(rival(mem).scan()) == [5]


def test_rollback_fails_when_the_ref_moved_or_the_target_expired(mem):
    """7.3 rollback: stricter than Java, a commit in between fails it."""
    table = mem.create()
    s1 = table.append(rows([1])).snapshot_id
    table.append(rows([2]))
    commit = table.new_commit(SetRef("main", s1, must_be_ancestor=True))
    step_to(commit, SWAP)
    rival(mem).append(rows([3]))
    outcome = commit.run()
    assert isinstance(outcome, Conflict) and "AssertRefSnapshotId" in outcome.reason
    assert ids_of(rival(mem).scan()) == [1, 2, 3]


def test_snapshot_parent_is_the_head_of_the_base_validated_against(mem):
    """7.4: the retried snapshot's parent is the head of the base of its last attempt."""
    table = mem.create()
    table.append(rows([1]))
    commit = table.new_commit(P.FastAppend(rows([2])))
    step_to(commit, SWAP)
    head = rival(mem).append(rows([3])).snapshot_id
    commit.run()
    t = rival(mem)
    assert t.current_snapshot().parent_snapshot_id == head


class FirstIdEnv(Env):
    """An environment whose first snapshot id is fixed (the rest is seeded)."""

    def __init__(self, seed: int, first_id: int):
        super().__init__(rng=random.Random(seed), sleep_ms=lambda ms: None)
        self.first_id = first_id

    def snapshot_id(self) -> int:
        value, self.first_id = self.first_id, None
        return value if value is not None else super().snapshot_id()


def test_snapshot_id_collision_with_another_writer_draws_a_new_id(mem):
    """1.5: two writers draw the same snapshot id; the second finds it taken in its
    refreshed base (and not by itself) and draws a new one: two distinct snapshots."""
    table = mem.create()
    first = Table(mem.catalog, "db.t", mem.io, FirstIdEnv(1, 777))
    second = Table(mem.catalog, "db.t", mem.io, FirstIdEnv(2, 777))
    commit = second.new_commit(P.FastAppend(rows([2])))
    commit.step()
    assert first.append(rows([1])).snapshot_id == commit.snapshot_id == 777
    outcome = commit.run()
    assert isinstance(outcome, Committed) and outcome.snapshot_id != 777 and outcome.attempts == 2
    table.refresh()
    assert ids_of(table.scan()) == [1, 2] and len({s.snapshot_id for s in table.history()}) == 2


def test_name_collision_is_a_conflict_that_deletes_nothing_of_the_other(mem):
    """1.4: writers with the same random source collide on a fresh name: the second ends
    Conflict ("name collision") and the first writer's object is untouched."""
    table = mem.create()
    first = Table(mem.catalog, "db.t", mem.io, Env.seeded(42, sleep_ms=lambda ms: None))
    second = Table(mem.catalog, "db.t", mem.io, Env.seeded(42, sleep_ms=lambda ms: None))
    assert isinstance(first.append(rows([1])), Committed)
    outcome = second.append(rows([2]))
    assert isinstance(outcome, Conflict) and "name collision" in outcome.reason
    table.refresh()
    assert ids_of(table.scan()) == [1]


def test_failed_cleanup_after_an_acknowledged_expiry_keeps_the_commit(mem):
    """An expiry whose file deletions fail still ends Committed: the swap was acknowledged."""
    from icefloe.conformance.testing.faulty_store import FaultInjectingStore, FaultRule, RulePlan
    table = mem.create()
    table.append(rows([1]))
    table.overwrite(rows([2]))
    faulty = FaultInjectingStore(mem.io, RulePlan([FaultRule("fail_before", "delete", times=None)]))
    writer = Table(mem.catalog, "db.t", faulty, mem.env())
    outcome, deleted = writer.expire_snapshots(older_than_ms=10 ** 15, retain_last=1)
    assert isinstance(outcome, Committed) and deleted == []
    assert ids_of(rival(mem).scan()) == [2] and len(rival(mem).metadata.snapshots) == 1


def test_rows_that_do_not_fit_the_schema_fail_the_operation_cleanly(mem):
    """Rows with a column the schema lacks: Table.append refuses them before writing
    (SchemaMismatch naming the column), and an operation that still tries to write them ends
    Conflict with nothing left behind, not half-done."""
    import pyarrow as pa
    from icefloe.impl.table.append_schema import SchemaMismatch
    table = mem.create()
    table.append(rows([1]))
    before = stored(mem, table)
    bad = pa.table({"id": [2], "cat": ["a"], "v": [2.0], "extra": [1]})
    with pytest.raises(SchemaMismatch, match="'extra'"):
        table.append(bad)
    outcome = table._run(P.FastAppend(bad))
    assert isinstance(outcome, Conflict) and "DataFileError" in outcome.reason
    assert stored(mem, table) == before


def test_commits_to_different_branches_serialize_without_conflict(mem):
    """8.2: a delete on a branch and an append on main race; the swap serializes them and the
    branch's validations, checked over the branch's ancestry, still hold."""
    table = mem.create()
    s1 = table.append(rows([1, 2], ["a", "b"])).snapshot_id
    table.create_branch("side", s1)
    commit = table.new_commit(P.DeleteWhere("cat = 'a'", None, ref="side"))
    step_to(commit, SWAP)
    rival(mem).append(rows([3], "a"))
    outcome = commit.run()
    assert isinstance(outcome, Committed) and outcome.attempts == 2
    t = rival(mem)
    assert ids_of(t.scan(ref="side")) == [2] and ids_of(t.scan()) == [1, 2, 3]
    assert t.metadata.ref_head("side").parent_snapshot_id == s1
