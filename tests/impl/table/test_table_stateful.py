"""Two writers interleaved phase by phase under lost acknowledgements and delayed swaps
(spec/PROTOCOL.md 5, 9, 11; PROPERTIES P1 LinearHistory, P3 NoDuplicateCommit, P8
NoDanglingRefs, P9 CleanupSafe): a Hypothesis state machine whose rules are writer phases,
swap faults and the delivery or loss of delayed requests; invariants checked after every
step on MemoryStore + MemoryCatalog."""
from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from icefloe.impl.outcomes import Committed, Conflict, Unknown
from icefloe.impl.table import operations as ops
from icefloe.impl.table import producer as P
from icefloe.impl.table.commit import PLAN, SWAP
from icefloe.impl.table.table import Table

from table_helpers import ids_of, memory_stack, rows

WRITERS = 2
KINDS = ("append", "delete", "compact", "rollback", "expire")


class TwoWriters(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.mem = memory_stack()
        self.table = self.mem.create(properties={"commit.retry.num-retries": "2"})
        self.table.append(rows([0]))
        self.commits = [None] * WRITERS
        self.next_id = 1
        self.appended: dict[int, int] = {}       # commit index -> appended id
        self.finished: list[tuple] = []           # (commit, outcome)
        self.conflicted_ids: set[int] = set()

    def reader(self) -> Table:
        return Table(self.mem.catalog, "db.t", self.mem.io)

    @precondition(lambda self: None in self.commits)
    @rule(w=st.integers(0, WRITERS - 1), kind=st.sampled_from(KINDS))
    def begin(self, w, kind):
        if self.commits[w] is not None:
            return
        table = Table(self.mem.catalog, "db.t", self.mem.io, self.mem.env())
        if kind == "append":
            op = P.FastAppend(rows([self.next_id]))
            self.next_id += 1
        elif kind == "delete":
            live = ids_of(table.scan())
            op = P.DeleteWhere(f"id = {live[0] if live else -1}")
        elif kind == "compact":
            op = P.RewriteFiles()
        elif kind == "rollback":
            head = table.current_snapshot()
            if head is None or head.parent_snapshot_id is None:
                return
            op = ops.SetRef("main", head.parent_snapshot_id, must_be_ancestor=True)
        else:
            op = ops.ExpireSnapshots(older_than_ms=10 ** 15, retain_last=1)
        self.commits[w] = table.new_commit(op)
        if kind == "append":
            self.appended[id(self.commits[w])] = self.next_id - 1

    @precondition(lambda self: any(c is not None and c.phase != SWAP for c in self.commits))
    @rule(w=st.integers(0, WRITERS - 1))
    def step(self, w):
        c = self.commits[w]
        if c is None or c.phase == SWAP:
            return
        try:
            c.step()
        except ValueError:
            assert c.phase == PLAN  # a rollback target expired before it planned: refused
            self.commits[w] = None
            return
        self._maybe_finish(w)

    @precondition(lambda self: any(c is not None and c.phase == SWAP for c in self.commits))
    @rule(w=st.integers(0, WRITERS - 1), fault=st.sampled_from(["none", "none", "lose_ack", "delay"]))
    def swap(self, w, fault):
        c = self.commits[w]
        if c is None or c.phase != SWAP:
            return
        if fault == "lose_ack":
            self.mem.catalog.lose_acknowledgements(1)
        elif fault == "delay":
            self.mem.catalog.delay_swaps(1)
        c.step()
        self._maybe_finish(w)

    @precondition(lambda self: bool(self.mem.catalog.pending))
    @rule(deliver=st.booleans())
    def settle_pending(self, deliver):
        pending = self.mem.catalog.pending[0]
        if deliver:
            self.mem.catalog.deliver(pending)
        else:
            self.mem.catalog.drop_pending(pending)

    def _maybe_finish(self, w):
        c = self.commits[w]
        if not c.done:
            return
        outcome = c.outcome
        self.finished.append((c, outcome))
        stored = {i.location for i in self.mem.io.list(self.table.location + "/")}
        if isinstance(outcome, Unknown):
            assert set(c.written) <= stored, "an Unknown deleted what it wrote (P9)"
        if isinstance(outcome, Conflict):
            assert not (set(c.written) & stored), "a Conflict left objects behind"
            if id(c) in self.appended:
                self.conflicted_ids.add(self.appended[id(c)])
        self.commits[w] = None

    @invariant()
    def readers_see_one_committed_linear_history(self):
        t = self.reader()
        history = t.history()
        assert all(b.parent_snapshot_id == a.snapshot_id for a, b in zip(history, history[1:]))
        seen = ids_of(t.scan())  # P8: every object a retained snapshot reaches is readable
        assert len(seen) == len(set(seen)), f"an append applied twice: {seen}"
        assert not (set(seen) & self.conflicted_ids), "rows of a Conflict are visible"
        for snap in t.metadata.snapshots:
            t.scan(snapshot_id=snap.snapshot_id)

    @invariant()
    def at_most_one_attempt_of_an_operation_in_the_chain(self):
        t = self.reader()
        chain = {t.metadata_location} | {e.metadata_file for e in t.metadata.metadata_log}
        for c, outcome in self.finished + [(c, None) for c in self.commits if c is not None]:
            landed = chain & set(c.attempted)
            assert len(landed) <= 1, "two attempts of one operation landed (P3)"
            if isinstance(outcome, Committed) and outcome.attempts:
                assert outcome.metadata_location in chain


TwoWriters.TestCase.settings = settings(max_examples=30, stateful_step_count=25, deadline=None)
test_two_writers_with_swap_faults = TwoWriters.TestCase
