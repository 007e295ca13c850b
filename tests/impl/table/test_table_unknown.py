"""Unknown swap outcomes (spec/PROTOCOL.md 9 "Commit outcomes"; model: AckLost,
SwapDelayed, Deliver, Drop, Resolve, finish_failed) with MemoryCatalog's lost-ack and
delayed-swap hooks, stepped phase by phase. Each test checks that no snapshot is applied
twice and that nothing is deleted while an unknown attempt may still land."""
from __future__ import annotations

from icefloe.conformance.testing.faulty_store import FaultInjectingStore, FaultRule, RulePlan
from icefloe.impl.outcomes import Committed, Conflict, Unknown
from icefloe.impl.table import producer as P
from icefloe.impl.table.commit import LIST, PendingCommit, SWAP, RESOLVE, resolve_unknown
from icefloe.impl.table.table import Table

from table_helpers import ids_of, rival, rows, step_to


def exists(mem, location) -> bool:
    return any(i.location == location for i in mem.io.list(location))


def test_lost_ack_of_an_applied_swap_resolves_committed_without_a_second_attempt(mem):
    """AckLost then Resolve: the attempt is found in the chain; one snapshot, attempt 1."""
    table = mem.create()
    table.append(rows([1]))
    commit = table.new_commit(P.FastAppend(rows([2])))
    step_to(commit, SWAP)
    mem.catalog.lose_acknowledgements(1)
    assert commit.step() == RESOLVE
    outcome = commit.run()
    assert outcome == Committed(commit.snapshot_id, 1, commit.attempted[0])
    assert len(commit.attempted) == 1
    assert ids_of(rival(mem).scan()) == [1, 2]


def test_lost_ack_found_after_others_built_on_it(mem):
    """The landed attempt is found through the metadata log although others committed on
    top of it before the writer resolved (14.4's status check would declare it failed)."""
    table = mem.create()
    commit = table.new_commit(P.FastAppend(rows([1])))
    step_to(commit, SWAP)
    mem.catalog.lose_acknowledgements(1)
    commit.step()
    other = rival(mem)
    other.append(rows([2]))
    other.append(rows([3]))
    outcome = commit.run()
    assert isinstance(outcome, Committed) and outcome.metadata_location == commit.attempted[0]
    t = rival(mem)
    assert ids_of(t.scan()) == [1, 2, 3] and len(t.history()) == 3


def test_delayed_swap_landing_after_the_retry_is_not_applied_twice(mem):
    """SwapDelayed, Resolve (pointer still at the base: retry on it), Deliver (the old request
    lands), the new attempt is rejected, the next Resolve finds the old one: one snapshot."""
    table = mem.create()
    table.append(rows([1]))
    commit = table.new_commit(P.FastAppend(rows([2])))
    step_to(commit, SWAP)
    mem.catalog.delay_swaps(1)
    assert commit.step() == RESOLVE
    assert commit.step() == LIST      # not in the chain, pointer unchanged: attempt 2 on the same base
    step_to(commit, SWAP)
    [pending] = mem.catalog.pending
    mem.catalog.deliver(pending)      # attempt 1 lands now
    outcome = commit.run()
    assert outcome == Committed(commit.snapshot_id, 2, commit.attempted[0])
    t = rival(mem)
    assert ids_of(t.scan()) == [1, 2]
    assert [s.snapshot_id for s in t.history()].count(commit.snapshot_id) == 1
    assert len(t.history()) == 2


def test_delayed_swap_after_the_pointer_moved_can_never_land(mem):
    """3.4 (a): once the pointer left the delayed request's base, delivering it changes nothing."""
    table = mem.create()
    commit = table.new_commit(P.FastAppend(rows([1])))
    step_to(commit, SWAP)
    mem.catalog.delay_swaps(1)
    commit.step()
    rival(mem).append(rows([2]))
    assert isinstance(commit.run(), Committed)
    [pending] = mem.catalog.pending
    before = mem.catalog.load(table.identifier)
    mem.catalog.deliver(pending)
    assert mem.catalog.load(table.identifier) == before
    assert ids_of(rival(mem).scan()) == [1, 2]


def test_no_cleanup_while_the_pointer_is_the_base_of_an_unknown_attempt(mem):
    """9.5: attempts exhausted while the delayed request's base is still current ends
    Unknown and deletes nothing; the request then lands and resolve_unknown says Committed."""
    table = mem.create(properties={"commit.retry.num-retries": "0"})
    table.append(rows([1]))
    commit = table.new_commit(P.FastAppend(rows([2])))
    step_to(commit, SWAP)
    mem.catalog.delay_swaps(1)
    outcome = commit.run()
    assert isinstance(outcome, Unknown) and outcome.attempted_locations == tuple(commit.attempted)
    assert all(exists(mem, w) for w in commit.written)
    [pending] = mem.catalog.pending
    mem.catalog.deliver(pending)
    resolved = resolve_unknown(mem.catalog, table.identifier, mem.io, outcome)
    assert resolved == Committed(commit.snapshot_id, 1, commit.attempted[0])
    assert ids_of(rival(mem).scan()) == [1, 2]


def test_unknown_resolves_to_conflict_once_the_pointer_moved_on(mem):
    """9.6: a dropped request, then another commit: no attempt in the chain and the pointer
    is no attempt's base, so the Unknown resolves to Conflict."""
    table = mem.create(properties={"commit.retry.num-retries": "0"})
    commit = table.new_commit(P.FastAppend(rows([1])))
    step_to(commit, SWAP)
    mem.catalog.delay_swaps(1)
    outcome = commit.run()
    assert isinstance(outcome, Unknown)
    assert resolve_unknown(mem.catalog, table.identifier, mem.io, outcome) == outcome
    mem.catalog.drop_pending(mem.catalog.pending[0])
    rival(mem).append(rows([2]))
    assert isinstance(resolve_unknown(mem.catalog, table.identifier, mem.io, outcome), Conflict)


def test_cleanup_after_every_unknown_base_was_left_behind(mem):
    """9.5: attempts exhausted after the pointer moved off the unknown attempt's base is a
    definite failure: Conflict, and the operation's objects are deleted."""
    table = mem.create(properties={"commit.retry.num-retries": "0"})
    commit = table.new_commit(P.FastAppend(rows([1])))
    step_to(commit, SWAP)
    mem.catalog.delay_swaps(1)
    commit.step()
    rival(mem).append(rows([2]))
    outcome = commit.run()
    assert isinstance(outcome, Conflict)
    assert not any(exists(mem, w) for w in commit.written)
    mem.catalog.deliver(mem.catalog.pending[0])  # rejected: its base is gone
    assert ids_of(rival(mem).scan()) == [2]


def test_write_failure_after_a_delayed_attempt_landed_is_unknown(mem):
    """17 (REGRESSIONS #4): attempt 1 delayed, attempt 2 on the same base, attempt 1 lands,
    attempt 2's manifest-list write fails: Unknown, nothing deleted, the table stays readable."""
    faulty = FaultInjectingStore(mem.io, RulePlan([FaultRule("fail_before", "put_if_absent", "*/snap-*-2-*.avro")]))
    table = mem.create()
    table.append(rows([1]))
    writer = Table(mem.catalog, "db.t", faulty, mem.env())
    commit = writer.new_commit(P.FastAppend(rows([2])))
    step_to(commit, SWAP)
    mem.catalog.delay_swaps(1)
    commit.step()
    assert commit.step() == LIST
    mem.catalog.deliver(mem.catalog.pending[0])
    outcome = commit.run()
    assert isinstance(outcome, Unknown) and "chain" in outcome.reason
    assert all(exists(mem, w) for w in commit.written)
    assert ids_of(rival(mem).scan()) == [1, 2]


def test_rejected_swap_then_lost_ack_commits_exactly_once(mem):
    """Retry then Resolve share one step: a rejection, a retry whose ack is lost, one snapshot."""
    table = mem.create()
    commit = table.new_commit(P.FastAppend(rows([1])))
    step_to(commit, SWAP)
    rival(mem).append(rows([2]))
    commit.step()
    commit.step()
    step_to(commit, SWAP)
    mem.catalog.lose_acknowledgements(1)
    outcome = commit.run()
    assert outcome == Committed(commit.snapshot_id, 2, commit.attempted[1])
    assert ids_of(rival(mem).scan()) == [1, 2] and len(rival(mem).history()) == 2


def test_chain_walk_reads_older_files_when_the_metadata_log_is_trimmed(mem):
    """9.7: with write.metadata.previous-versions-max = 1, the landed attempt is no longer
    in the pointer's log after others committed on top; the walk continues in older files."""
    table = mem.create(properties={"write.metadata.previous-versions-max": "1"})
    table.append(rows([1]))
    commit = table.new_commit(P.FastAppend(rows([2])))
    step_to(commit, SWAP)
    mem.catalog.lose_acknowledgements(1)
    commit.step()
    other = rival(mem)
    for i in range(3, 6):
        other.append(rows([i]))
    assert len(other.metadata.metadata_log) == 1
    gets = mem.io.counts["get"]
    outcome = commit.run()
    assert outcome == Committed(commit.snapshot_id, 1, commit.attempted[0])
    assert mem.io.counts["get"] - gets >= 3  # the pointer's file plus older ones
    assert ids_of(rival(mem).scan()) == [1, 2, 3, 4, 5]
