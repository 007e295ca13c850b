"""Model vs implementation in lockstep (the first conformance test).

Goal: icefloe.impl follows icefloe.model step for step. Method: a Hypothesis
RuleBasedStateMachine draws one enabled action of the model at a time (writer phases,
faults, deliveries of delayed swaps), applies it to the model and the same step to the
implementation (two writers' PendingCommits on a MemoryStore and a real SQLite catalog,
faults injected around them), and compares what each observed: the writer's phase,
each operation's outcome, the rows of main's head, the retained snapshots. After every
step the model's properties hold (spec/PROPERTIES.md) and the implementation's chain is
linear with no dangling reference.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format import expressions
from icefloe.impl.format.types import NestedField, Schema, StringType
from icefloe.impl.io.faults import FaultInjectingStore
from icefloe.impl.io.memory import MemoryStore
from icefloe.impl.outcomes import Committed, Conflict, SwapRejected, SwapUnknown, Unknown
from icefloe.impl.table import commit as C
from icefloe.impl.table import operations as ops
from icefloe.impl.table import producer as P
from icefloe.impl.table.env import Env
from icefloe.impl.table.table import Table, create_table
from icefloe.model import checks, iceberg
from icefloe.model.state import (
    ABORTED, COMMITTED, CRASHED, DATA, DONE, IDLE, LIST, MANIFEST, META, NOOP, RETRY, SWAP,
    UNKNOWN, UNKNOWN_OUTCOME, snap_of,
)

BOUNDS = iceberg.Bounds(writers=2, ops=3, fault_budget=2, attempts_max=2)
PHASES = {DATA: C.DATA, MANIFEST: C.MANIFESTS, LIST: C.LIST, META: C.METADATA, SWAP: C.SWAP,
          RETRY: C.RETRY, UNKNOWN: C.UNKNOWN}
SCHEMA = Schema((NestedField(1, "id", StringType(), True),))
ROWS = pa.schema([pa.field("id", pa.string(), nullable=False)])


def row_id(fid) -> str:
    return f"{fid[0]}.{fid[1]}"


class ArmedPlan:
    """A fault plan for one writer's store: the next write fails before it is applied."""

    def __init__(self):
        self.fail_next_write = False

    def decide(self, kind: str, location: str):
        if kind == "put_if_absent" and self.fail_next_write:
            self.fail_next_write = False
            return "fail_before"
        return "pass"


class FaultingCatalog:
    """The real SQLite catalog with the model's swap faults armed one at a time."""

    def __init__(self, inner: SqlCatalog):
        self.inner, self.name = inner, inner.name
        self.armed: str | None = None
        self.parked: dict = {}          # (writer, op, attempt) -> (identifier, expected, new)
        self.armed_for: tuple | None = None

    def load(self, identifier):
        return self.inner.load(identifier)

    def create(self, identifier, location):
        return self.inner.create(identifier, location)

    def swap(self, identifier, expected, new):
        fault, self.armed = self.armed, None
        if fault == "swap_fail":
            return SwapRejected(expected, None, "injected: rejected before any effect")
        if fault == "ack_lost":
            self.inner.swap(identifier, expected, new)
            return SwapUnknown(expected, new, "injected: acknowledgement lost")
        if fault == "swap_delayed":
            assert self.armed_for not in self.parked
            self.parked[self.armed_for] = (identifier, expected, new)
            return SwapUnknown(expected, new, "injected: timed out, request in flight")
        return self.inner.swap(identifier, expected, new)


class ModelVsImpl(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.store = MemoryStore()
        sql = SqlCatalog(f"sqlite:///{Path(self.tmp.name) / 'catalog.db'}")
        self.catalog = FaultingCatalog(sql)
        self.env = Env.seeded(7)
        self.retry = C.RetryPolicy(num_retries=BOUNDS.attempts_max - 1, retry_wait_ms_min=0, retry_wait_ms_max=0)
        create_table(sql, "db.t", SCHEMA, location="memory://warehouse/db/t", io=self.store, env=self.env)
        self.table = Table(self.catalog, "db.t", self.store, self.env, self.retry)
        self.file_path = {}             # model FileId -> data file location
        self.snapshot_id = {}           # model SnapId -> implementation snapshot id
        for k in (1, 2):
            before = set(self._live_paths())
            assert isinstance(self.table.append(self._rows((0, k))), Committed)
            (path,) = set(self._live_paths()) - before
            self.file_path[(0, k)] = path
            self.snapshot_id[(0, k)] = self.table.current_snapshot().snapshot_id
        self.model = iceberg.initial_state(BOUNDS)
        self.plans = {w: ArmedPlan() for w in (1, 2)}
        self.io = {w: FaultInjectingStore(self.store, self.plans[w]) for w in (1, 2)}
        self.pending: dict = {}         # writer -> PendingCommit

    def teardown(self):
        self.tmp.cleanup()

    # -- helpers --------------------------------------------------------------------------

    def _rows(self, fid) -> pa.Table:
        return pa.Table.from_pylist([{"id": row_id(fid)}], schema=ROWS)

    def _live_paths(self) -> list:
        self.table.refresh()
        return [t.data_file.file_path for t in self.table.plan_files()]

    def _operation(self, w: int, wr):
        """The implementation's operation for the model's plan (same files, same target)."""
        k = wr.k
        if wr.kind == "append":
            return P.FastAppend(self._rows((w, k)))
        if wr.kind == "overwrite":
            return P.DeleteWhere(self._true(), self._rows((w, k)), isolation=BOUNDS.isolation)
        if wr.kind == "delete":
            return P.DeleteFiles([self.file_path[f] for f in sorted(wr.files)])
        if wr.kind == "rewrite":
            return P.RewriteFiles([self.file_path[f] for f in sorted(wr.files)])
        if wr.kind == "rollback":
            return ops.SetRef("main", self.snapshot_id[wr.target], must_be_ancestor=True)
        if wr.kind == "expire":
            return ops.ExpireSnapshots(older_than_ms=2 ** 62, retain_last=1)
        raise AssertionError(wr.kind)

    @staticmethod
    def _true():
        return expressions.parse("true")

    def _step_impl_to(self, w: int) -> None:
        """Step writer w's PendingCommit until its phase is the model writer's phase."""
        wr = self.model.writers[w - 1]
        pc = self.pending.get(w)
        if pc is None:
            return
        want = PHASES.get(wr.phase)
        for _ in range(8):
            if want is not None and pc.phase == want:
                return
            if pc.done:
                break
            pc.step()
        assert want is None and pc.done, f"w{w}: model phase {wr.phase}, implementation {pc.phase}"

    def _finish(self, w: int, k: int) -> None:
        """The model ended operation (w, k): the implementation's outcome must agree."""
        res = self.model.outcomes[w - 1][k - 1].res
        pc = self.pending.pop(w, None)
        if res == CRASHED:
            return
        assert pc is not None and pc.done, (w, k, res)
        out = pc.outcome
        expected = {COMMITTED: Committed, ABORTED: Conflict, UNKNOWN_OUTCOME: Unknown, NOOP: Committed}[res]
        assert isinstance(out, expected), f"op ({w}, {k}): model {res}, implementation {out}"
        if res == NOOP:
            assert out.snapshot_id is None and out.attempts == 0

    # -- the one rule: an enabled action of the model, mirrored -----------------------------

    @precondition(lambda self: not iceberg.is_terminal(self.model))
    @rule(data=st.data())
    def step(self, data):
        choices = dict(iceberg.successors(BOUNDS, self.model))
        assert len(choices) == len(list(iceberg.successors(BOUNDS, self.model))), "ambiguous labels"
        label = data.draw(st.sampled_from(sorted(choices)), label="action")
        before = self.model
        name, w = label[0], label[1]
        wr = before.writers[w - 1] if w else None
        self.model = choices[label]
        if name == "Begin":
            after = self.model.writers[w - 1]
            op = self._operation(w, after) if after.k == wr.k else self._noop_operation(label[2], before)
            pc = C.PendingCommit(self.catalog, self.table.identifier, self.io[w], op, self.env, self.retry)
            self.pending[w] = pc
            pc.step()                                 # refresh and plan
            if pc.snapshot_id is not None:
                self.snapshot_id[(w, wr.k)] = pc.snapshot_id
            self._step_impl_to(w)
        elif name in ("WriteData", "WriteManifest", "WriteList", "WriteMeta", "Retry", "Resolve"):
            self.pending[w].step()
            self._step_impl_to(w)
        elif name == "WriteFails":
            self.plans[w].fail_next_write = True
            self.pending[w].step()
            assert self.pending[w].done and not self.plans[w].fail_next_write
        elif name in ("Swap", "SwapFails", "AckLost", "SwapDelayed"):
            pc = self.pending[w]
            fault = {"SwapFails": "swap_fail", "AckLost": "ack_lost", "SwapDelayed": "swap_delayed"}.get(name)
            self.catalog.armed, self.catalog.armed_for = fault, (w, wr.k, pc.attempt)
            pc.step()
            self._step_impl_to(w)
        elif name == "Crash":
            self.pending[w] = None
        elif name in ("Deliver", "Drop"):
            identifier, expected, new = self.catalog.parked.pop((w, label[2], label[3]))
            if name == "Deliver":
                self.catalog.inner.swap(identifier, expected, new)
        elif name == "Heal":
            pass
        else:
            raise AssertionError(f"no mirror for {label}")
        pc = self.pending.get(w) if w else None
        if pc is not None and (w, wr.k) not in self.file_path:
            data_files = [p for p in pc.written if p.endswith(".parquet")]
            if data_files:
                self.file_path[(w, wr.k)] = data_files[0]
        if w and self.model.writers[w - 1].k != wr.k:
            self._finish(w, wr.k)

    def _noop_operation(self, kind, state):
        """The implementation's operation where the model found nothing to do at plan time."""
        head = iceberg.head_snap(iceberg.current(state))
        if kind == "delete":
            return P.DeleteFiles([])
        if kind == "rewrite":
            return P.RewriteFiles([self.file_path[f] for f in sorted(head.files)])
        if kind == "rollback":
            return ops.SetRef("main", self.snapshot_id[head.id], must_be_ancestor=True)
        if kind == "expire":
            return ops.ExpireSnapshots(older_than_ms=2 ** 62, retain_last=1)
        raise AssertionError(kind)

    @precondition(lambda self: iceberg.is_terminal(self.model))
    @rule()
    def finished(self):
        """Every operation has ended: the liveness properties' final-state forms hold, and
        no implementation commit is still pending."""
        for name, fn in checks.TERMINAL_CHECKS.items():
            assert fn(BOUNDS, self.model) is None, name
        assert not self.pending and not self.catalog.parked

    # -- what both observed ----------------------------------------------------------------

    @invariant()
    def same_rows_and_snapshots(self):
        meta = iceberg.current(self.model)
        head = snap_of(meta, meta.head)
        content = dict(self.model.content)
        want = sorted(row_id(r) for f in head.files for r in content[f])
        self.table.refresh()
        got = sorted(self.table.scan().column("id").to_pylist())
        assert got == want, f"rows: model {want}, implementation {got}"
        assert len(self.table.metadata.snapshots) == len(meta.snaps)
        if meta.head in self.snapshot_id:
            assert self.table.current_snapshot().snapshot_id == self.snapshot_id[meta.head]

    @invariant()
    def model_properties_hold(self):
        for name, fn in checks.SAFETY_CHECKS.items():
            assert fn(BOUNDS, self.model) is None, name

    @invariant()
    def implementation_chain_is_linear_and_complete(self):
        m = self.table.refresh().metadata
        for snap in m.snapshots:
            assert self.store.stat(snap.manifest_list), snap.manifest_list
        for t in self.table.plan_files():
            assert self.store.stat(t.data_file.file_path)
        log = [e.metadata_file for e in m.metadata_log]
        assert len(log) == len(set(log)), "a metadata file appears twice in the log"

    @invariant()
    def phases_agree(self):
        for w, wr in enumerate(self.model.writers, start=1):
            pc = self.pending.get(w)
            if wr.phase in (IDLE, DONE) or pc is None:
                continue
            assert pc.phase == PHASES[wr.phase], f"w{w}: model {wr.phase}, implementation {pc.phase}"


TestModelVsImpl = ModelVsImpl.TestCase
TestModelVsImpl.settings = settings(settings.default, stateful_step_count=60)
