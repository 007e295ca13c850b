"""Model and engine in lockstep: one step of the program at a time (spec/PROTOCOL.md;
the model is icefloe.model.iceberg, whose action labels are the program's words).

A program is a list of labels. Model actions are the model's own labels (`("Begin", 1,
"append")`, `("WriteData", 1)`, `("Swap", 2)`, `("AckLost", 1)`, `("Deliver", 1, 2, 1)`,
`("Heal", 0)`, `("RemoveOrphans", 0)`, ...); readers add `("ReadCurrent", 0)`, `("ReadAt",
0, (w, k))` and `("ReadIncremental", 0, (w, k))` (model snapshot ids); a program may open
with `("Faults", 0, kinds)`, the fault kinds it injects (a swarm choice). `Lockstep.apply`
applies a label to the model and the same step to the engine, then compares what each
observed; any disagreement raises `Violation` naming the property it breaks ("A0
ModelAgreement" when the engine simply did something else than the model). `converge`
heals the faults and drives every writer to its end (liveness); `judge_history` runs the
history checker (icefloe.model.checks.history) over the engine's recorded history.

Stepping engines are stepped phase by phase. Black-box engines run a commit whole in a
worker thread: `("Begin", w, kind)` starts it, held at a proxy gate on its metadata write
(the model then stands in METADATA); a later `("WriteMetadata", w)` releases the gate and waits
for the commit, while the model runs that writer's remaining non-fault actions.
"""
from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field, replace

from icefloe.conformance import adapter as A
from icefloe.model import checks, iceberg
from icefloe.model.checks import history as H
from icefloe.model.state import (
    CONFLICT, APPEND, COMMITTED, CRASHED, DATA, DONE, PLAN, LIST, MANIFESTS, METADATA, NOOP, RETRY,
    SWAP, UNKNOWN, UNKNOWN_OUTCOME, ancestors, mget, snap_of,
)

AGREEMENT = "A0 ModelAgreement"
PROPERTIES = (AGREEMENT, *checks.SAFETY_CHECKS, *checks.TERMINAL_CHECKS)
PHASES = {DATA: A.DATA, MANIFESTS: A.MANIFESTS, LIST: A.LIST, METADATA: A.METADATA, SWAP: A.SWAP,
          RETRY: A.RETRY, UNKNOWN: A.UNKNOWN}
FAULT_LABELS = {"WriteFails": A.WRITE_FAIL, "SwapFails": A.SWAP_FAIL, "AckLost": A.ACK_LOST,
                "SwapDelayed": A.SWAP_DELAYED, "Crash": A.CRASH}
WRITE_LABELS = ("WriteData", "WriteManifests", "WriteManifestList", "WriteMetadata")
READ_LABELS = ("ReadCurrent", "ReadAt", "ReadIncremental")
# The history checker's anomalies, by the property of spec/PROPERTIES.md each breaks.
ANOMALY_PROPERTY = {
    "forked history": "P1 LinearHistory", "lost commit": "P2 NoLostCommit",
    "failed commit landed": "P4 ReadersSeeCommitted", "duplicate commit": "P3 NoDuplicateCommit",
    "dirty read": "P4 ReadersSeeCommitted", "lost update": "P6 Isolation", "G0": "P6 Isolation",
    "G1c": "P6 Isolation", "G-single": "P6 Isolation", "G2": "P6 Isolation",
}
STEP_TO_PHASES_MAX = 8
LIVENESS_STEPS_MAX = 200
BLACK_BOX_WAIT_S = 60.0
GATE_ARRIVE_S = 30.0
GATE_POLL_S = 0.05


class Violation(AssertionError):
    """A property broken at one step, with what the model and the engine observed."""

    def __init__(self, prop: str, message: str, model=None, engine=None):
        super().__init__(f"{prop}: {message}")
        self.prop, self.message, self.model, self.engine = prop, message, model, engine
        self.step_index: int | None = None
        self.label = None
        self.verdict: H.Verdict | None = None
        self.properties: set = {prop}


def row_id(fid) -> str:
    return f"{fid[0]}.{fid[1]}"


@dataclass
class Stats:
    """What a run did (summed over examples): the report's counts and the non-vacuity proof."""
    examples: int = 0
    steps: int = 0
    rules: Counter = field(default_factory=Counter)
    faults: Counter = field(default_factory=Counter)
    commits: int = 0
    conflicts: int = 0
    retries: int = 0                   # commits that needed more than one attempt
    unknown_resolved_committed: int = 0       # a Resolve found the attempt landed
    unknown_resolved_not_committed: int = 0   # a Resolve found it had not (retry or fail)
    noops: int = 0
    crashed: int = 0
    early_aborts: int = 0              # the engine aborted sooner than the model (allowed)
    reads: int = 0
    backends: Counter = field(default_factory=Counter)
    writers: int = 0

    def to_json(self) -> dict:
        return {"examples": self.examples, "steps": self.steps, "writers": self.writers,
                "faults": dict(self.faults), "commits": self.commits, "conflicts": self.conflicts,
                "retries": self.retries, "unknown_resolved_committed": self.unknown_resolved_committed,
                "unknown_resolved_not_committed": self.unknown_resolved_not_committed,
                "noops": self.noops, "crashed": self.crashed, "early_aborts": self.early_aborts, "reads": self.reads,
                "backends": dict(self.backends), "rules": dict(sorted(self.rules.items()))}


def rule_of(label) -> str:
    """The rule family a label belongs to (the per-rule step counts)."""
    name = label[0]
    return {"WriteData": "write", "WriteManifests": "write", "WriteManifestList": "write",
            "WriteMetadata": "write"}.get(name, name)


@dataclass
class OpRecord:
    w: int
    k: int
    kind: str
    spec: A.OpSpec
    commit: object = None
    start_snapshot_id: int | None = None
    saw_unknown: bool = False
    result: str | None = None            # model result once ended
    outcome: object = None               # engine outcome once ended
    thread: threading.Thread | None = None
    gate: object = None
    box: dict = field(default_factory=dict)


class Lockstep:
    def __init__(self, engine, ctx: A.TableContext, bounds: iceberg.Bounds, stats: Stats | None = None,
                 proxy=None):
        self.engine, self.ctx, self.bounds = engine, ctx, bounds
        self.caps: A.Capabilities = engine.capabilities
        self.black_box = self.caps.mode == A.BLACK_BOX
        self.stats = stats or Stats()
        self.hooks = ctx.faults
        self.proxy = proxy
        self.program: list = []
        self.model = iceberg.initial_state(bounds)
        self.snapshot_id: dict = {}          # model SnapId -> engine snapshot id
        self.kind_of: dict = {(0, 1): APPEND, (0, 2): APPEND}
        self.ops: dict = {}                  # (w, k) -> OpRecord
        self.active: dict = {}               # w -> OpRecord in progress
        self.parked: dict = {}               # (w, k, attempt) -> deliver callable
        self.reads: list = []
        self.observed_time_travel: dict = {}
        self.last_history: H.History | None = None
        self.last_history_verdict: H.Verdict | None = None
        self.table = engine.create_table(ctx)
        for k in (1, 2):
            out = self._run_whole(0, A.OpSpec(A.APPEND, f"0.{k}", rows=(row_id((0, k)),)))
            if not isinstance(out, A.Committed) or out.snapshot_id is None:
                raise Violation(AGREEMENT, f"the bootstrap append 0.{k} did not commit: {out}")
            self.snapshot_id[(0, k)] = out.snapshot_id

    # -- the program ----------------------------------------------------------------------

    def enabled(self) -> dict:
        """label -> next model state, for every step the engine's capabilities allow."""
        out = {}
        for label, nxt in iceberg.successors(self.bounds, self.model):
            if label[0] in FAULT_LABELS and FAULT_LABELS[label[0]] not in self.caps.faults:
                continue
            if self.black_box and label[0] in ("WriteData", "WriteManifests", "WriteManifestList", "Swap",
                                               "Retry", "Resolve"):
                continue                      # inside a black-box commit
            if self.black_box and label[0] in FAULT_LABELS:
                continue                      # faults of black-box engines: see docs/conformance.md
            out[label] = nxt
        return out

    def reader_labels(self) -> list:
        meta = iceberg.current(self.model)
        out = [("ReadCurrent", 0)]
        if A.READ_AT in self.caps.reads:
            out += [("ReadAt", 0, s.id) for s in sorted(meta.snaps) if s.id in self.snapshot_id]
        if A.READ_INCREMENTAL in self.caps.reads:
            line = ancestors(meta, meta.head)
            out += [("ReadIncremental", 0, sid) for sid in line if sid in self.snapshot_id]
        return out

    def apply(self, label) -> None:
        if label[0] == "Faults":
            # ("Faults", 0, kinds): this program injects only these fault kinds (a swarm
            # choice made once, before the first step, so every kind gets programs of its own).
            assert not self.program, "Faults comes first"
            kinds = tuple(k for k in self.bounds.faults if k in label[2])
            self.bounds = replace(self.bounds, faults=kinds)
            self.program.append(label)
            return
        self.program.append(label)
        self.stats.steps += 1
        self.stats.rules[rule_of(label)] += 1
        try:
            if label[0] in READ_LABELS:
                self._read(label)
            else:
                self._step(label)
            self.check()
        except Violation as v:
            v.step_index, v.label = len(self.program) - 1, label
            raise

    # -- model actions mirrored on the engine ------------------------------------------------

    def _step(self, label) -> None:
        choices = self.enabled()
        if label not in choices:
            raise ValueError(f"step {label!r} is not enabled here (enabled: {sorted(choices)})")
        name, w = label[0], label[1]
        before = self.model
        wr = before.writers[w - 1] if w else None
        self.model = choices[label]
        if name in FAULT_LABELS:
            self.stats.faults[FAULT_LABELS[name]] += 1
        if name == "Begin":
            self._begin(w, label[2], before)
        elif self.black_box and name == "WriteMetadata":
            self._finish_black_box(w)
        elif name in WRITE_LABELS or name in ("Retry", "Resolve", "Swap"):
            self._engine_step(w)
        elif name in ("WriteFails", "SwapFails", "AckLost", "SwapDelayed"):
            kind = FAULT_LABELS[name]
            self.hooks.arm(w, kind)
            rec = self.active[w]
            rec.commit.step()
            if self.hooks.disarm(w) is not None:
                raise Violation(AGREEMENT, f"writer {w}: the engine made no request the {kind} fault could hit "
                                f"(phase {rec.commit.phase})", PHASES.get(wr.phase), rec.commit.phase)
            if name == "SwapDelayed":
                self.parked[(w, wr.k, wr.attempt)] = self.hooks.pop_parked(w)
            if name != "WriteFails":
                self._step_to(w)
        elif name == "Crash":
            rec = self.active.pop(w)
            rec.commit = None
        elif name in ("Deliver", "Drop"):
            deliver = self.parked.pop((w, label[2], label[3]))
            if name == "Deliver":
                deliver()
        elif name == "RemoveOrphans":
            self.table.remove_orphans(2 ** 62)
        elif name != "Heal":
            raise AssertionError(f"no mirror for {label}")
        if w and self.model.writers[w - 1].phase == UNKNOWN and w in self.active:
            self.active[w].saw_unknown = True
        if name == "Resolve":
            # An unknown swap outcome resolved: the attempt landed (the operation ends
            # committed here) or it did not (a next attempt, or the operation fails).
            if self.model.writers[w - 1].k != wr.k and self.model.outcomes[w - 1][wr.k - 1].res == COMMITTED:
                self.stats.unknown_resolved_committed += 1
            else:
                self.stats.unknown_resolved_not_committed += 1
        if w and self.model.writers[w - 1].k != wr.k:
            self._ended(w, wr.k)

    def _spec(self, w: int, kind: str, before) -> A.OpSpec:
        """The engine's operation for what the model planned (same rows, same target)."""
        k = before.writers[w - 1].k
        after = self.model.writers[w - 1]
        op_id = row_id((w, k))
        noop = after.k != k
        meta = iceberg.current(before)
        head = iceberg.head_snap(meta)
        content = dict(self.model.content)
        if kind == APPEND:
            return A.OpSpec(A.APPEND, op_id, rows=(op_id,))
        if kind == "overwrite":
            return A.OpSpec(A.OVERWRITE, op_id, rows=(op_id,), where=None)
        if kind == "delete":
            where = frozenset() if noop else frozenset(row_id(r) for f in after.files for r in content[f])
            return A.OpSpec(A.DELETE, op_id, where=where)
        if kind == "rewrite":
            return A.OpSpec(A.REWRITE, op_id, where=None)
        if kind == "rollback":
            target = head.id if noop else after.target
            return A.OpSpec(A.ROLLBACK, op_id, target_snapshot_id=self.snapshot_id[target])
        assert kind == "expire", kind
        return A.OpSpec(A.EXPIRE, op_id, retain_last=1)

    def _begin(self, w: int, kind: str, before) -> None:
        k = before.writers[w - 1].k
        spec = self._spec(w, kind, before)
        rec = OpRecord(w, k, kind, spec)
        self.ops[(w, k)] = rec
        self.kind_of[(w, k)] = kind
        self.active[w] = rec
        rec.start_snapshot_id = self.snapshot_id.get(iceberg.head_snap(iceberg.current(before)).id)
        rec.commit = self.table.begin(w, spec)
        if self.black_box:
            self._start_black_box(w, rec)
            return
        rec.commit.step()                                  # refresh and plan
        if rec.commit.snapshot_id is not None:
            self.snapshot_id[(w, k)] = rec.commit.snapshot_id
        rec.start_snapshot_id = rec.commit.starting_snapshot_id
        self._step_to(w)

    def _engine_step(self, w: int) -> None:
        rec = self.active[w]
        if rec.commit.done:
            raise Violation(AGREEMENT, f"writer {w}: the engine ended ({rec.commit.outcome}) where the model "
                            f"takes another step", self.model.writers[w - 1].phase, A.DONE)
        rec.commit.step()
        self._step_to(w)

    def _step_to(self, w: int) -> None:
        """Step writer w's commit until its phase is the model writer's phase."""
        wr = self.model.writers[w - 1]
        rec = self.active.get(w)
        if rec is None or rec.commit is None:
            return
        want = PHASES.get(wr.phase)
        for _ in range(STEP_TO_PHASES_MAX):
            if want is not None and rec.commit.phase == want:
                return
            if rec.commit.done:
                break
            rec.commit.step()
        if want is not None and rec.commit.done and self._aborts_anyway(w, rec):
            return
        if not (want is None and rec.commit.done):
            raise Violation(AGREEMENT, f"writer {w}: the model is in phase {wr.phase}, the engine in "
                            f"{rec.commit.phase}", wr.phase, rec.commit.phase)

    def _aborts_anyway(self, w: int, rec: OpRecord) -> bool:
        """The engine gave up (Conflict) before the model's writer ended. That is allowed
        when the model's writer, running alone from here, aborts too: the engine followed a
        legal schedule of the model, only faster (say, a concurrent expiry deleted the
        manifests an overwrite was rewriting, and its validation would fail anyway). The
        model takes those solo steps now, inside this step, so a replay is unchanged."""
        if not isinstance(rec.commit.outcome, A.Conflict):
            return False
        k, state = self.model.writers[w - 1].k, self.model
        for _ in range(LIVENESS_STEPS_MAX):
            wr = state.writers[w - 1]
            if wr.k != k:
                break
            mine = [nxt for lab, nxt in iceberg.successors(self.bounds, state)
                    if lab[1] == w and lab[0] in ("WriteData", "WriteManifests", "WriteManifestList", "WriteMetadata",
                                                  "Swap", "Retry", "Resolve")]
            if len(mine) != 1:
                return False
            state = mine[0]
        if state.outcomes[w - 1][k - 1].res != CONFLICT:
            return False
        self.model = state
        self.stats.early_aborts += 1
        return True

    def _ended(self, w: int, k: int) -> None:
        """The model ended operation (w, k): the engine's outcome must agree."""
        res = self.model.outcomes[w - 1][k - 1].res
        rec = self.ops[(w, k)]
        rec.result = res
        self.active.pop(w, None)
        if res == CRASHED:
            self.stats.crashed += 1
            return
        commit = rec.commit
        if self.black_box:
            out = rec.outcome
        else:
            if commit is None or not commit.done:
                raise Violation(AGREEMENT, f"op {row_id((w, k))}: the model ended it {res}, the engine has not "
                                f"(phase {None if commit is None else commit.phase})", res, "pending")
            out = commit.outcome
        rec.outcome = out
        expected = {COMMITTED: A.Committed, CONFLICT: A.Conflict, UNKNOWN_OUTCOME: A.Unknown, NOOP: A.Committed}[res]
        if not isinstance(out, expected):
            prop = "P5 ValidationSound" if isinstance(out, A.Committed) and res == CONFLICT else AGREEMENT
            raise Violation(prop, f"op {row_id((w, k))} ({rec.kind}): the model's outcome is {res}, the engine's "
                            f"{out}", res, out)
        if res == NOOP:
            self.stats.noops += 1
            if out.snapshot_id is not None and out.attempts != 0:
                raise Violation(AGREEMENT, f"op {row_id((w, k))}: a no-op for the model, the engine committed "
                                f"snapshot {out.snapshot_id}", res, out)
            return
        if out.snapshot_id is not None:
            self.snapshot_id.setdefault((w, k), out.snapshot_id)
        if res == COMMITTED:
            self.stats.commits += 1
            if out.attempts > 1:
                self.stats.retries += 1
        elif res == CONFLICT:
            self.stats.conflicts += 1

    # -- black-box commits ---------------------------------------------------------------

    def _run_whole(self, w: int, spec: A.OpSpec):
        commit = self.table.begin(w, spec)
        if isinstance(commit, A.SteppingCommit) and not hasattr(commit, "run"):
            for _ in range(64):
                if commit.done:
                    return commit.outcome
                commit.step()
            raise Violation("L2 OperationsTerminate", f"op {spec.op_id} did not end in 64 phases")
        return commit.run()

    def _start_black_box(self, w: int, rec: OpRecord) -> None:
        """Run the commit in a worker thread, held at its metadata write (the model is in
        METADATA); a no-op for the model must end without reaching the gate."""
        from icefloe.conformance.testing.proxy import Match
        gate = None
        if self.proxy is not None:
            gate = self.proxy.add_gate(Match(operation=frozenset({"PutObject", "ConditionalPutObject"}),
                                             key="*.metadata.json", client=self.ctx.access_key(w)))
        rec.gate = gate

        def run():
            try:
                rec.box["outcome"] = rec.commit.run()
            except BaseException as e:  # noqa: BLE001 - reported as the engine's observation
                rec.box["error"] = e
        rec.thread = threading.Thread(target=run, name=f"writer-{w}", daemon=True)
        rec.thread.start()
        wr = self.model.writers[w - 1]
        if wr.phase == DONE or wr.k != rec.k:        # the model found nothing to do
            self._join(w, rec)
            return
        waited = 0.0
        while gate is not None and not gate.wait_arrived(GATE_POLL_S) and rec.thread.is_alive():
            waited += GATE_POLL_S
            if waited >= GATE_ARRIVE_S:
                break
        if gate is not None and not gate.wait_arrived(0):
            self._join(w, rec)
            raise Violation(AGREEMENT, f"writer {w}: the engine never wrote its metadata "
                            f"(outcome {rec.outcome})", wr.phase, rec.outcome)
        # The model runs to METADATA: WriteData/WriteManifests/WriteManifestList happen inside the engine.
        self._model_solo(w, stop_at=(METADATA,))

    def _join(self, w: int, rec: OpRecord) -> None:
        if rec.gate is not None:
            rec.gate.release()
        rec.thread.join(BLACK_BOX_WAIT_S)
        if rec.thread.is_alive():
            raise Violation("L2 OperationsTerminate", f"writer {w}: the commit did not end within "
                            f"{BLACK_BOX_WAIT_S:.0f} s", "ended", "running")
        if "error" in rec.box:
            e = rec.box["error"]
            raise Violation(AGREEMENT, f"writer {w}: the engine's commit raised {type(e).__name__}: {e}",
                            "an outcome", repr(e))
        rec.outcome = rec.box.get("outcome")

    def _finish_black_box(self, w: int) -> None:
        rec = self.active[w]
        self._join(w, rec)
        if rec.outcome is not None and rec.outcome.snapshot_id is not None:
            self.snapshot_id.setdefault((w, rec.k), rec.outcome.snapshot_id)
        self._model_solo(w, stop_at=())

    def _model_solo(self, w: int, stop_at) -> None:
        """Advance the model's writer w by its non-fault actions (inside a black-box commit)."""
        k = self.model.writers[w - 1].k
        for _ in range(LIVENESS_STEPS_MAX):
            wr = self.model.writers[w - 1]
            if wr.k != k or wr.phase in stop_at:
                return
            mine = [(lab, nxt) for lab, nxt in iceberg.successors(self.bounds, self.model)
                    if lab[1] == w and lab[0] in ("WriteData", "WriteManifests", "WriteManifestList", "WriteMetadata",
                                                  "Swap", "Retry", "Resolve")]
            assert len(mine) == 1, mine
            self.model = mine[0][1]
        raise AssertionError("the model's writer did not finish")

    # -- readers -------------------------------------------------------------------------

    def _rows(self, files) -> tuple:
        content = dict(self.model.content)
        return tuple(sorted(row_id(r) for f in files for r in content[f]))

    def _appended(self, meta, sid) -> bool:
        """Whether an incremental (append) reader takes snapshot `sid`'s rows: an append,
        or an overwrite that removed nothing (Iceberg records that as an append)."""
        kind = self.kind_of.get(sid)
        if kind == APPEND:
            return True
        if kind != "overwrite":
            return False
        parent = snap_of(meta, snap_of(meta, sid).parent)
        return parent is not None and not parent.files

    def _read(self, label) -> None:
        self.stats.reads += 1
        meta = iceberg.current(self.model)
        name = label[0]
        try:
            if name == "ReadCurrent":
                got = self.table.read_current()
                want = self._rows(iceberg.head_snap(meta).files)
                prop = "P6 Isolation"
            elif name == "ReadAt":
                sid = label[2]
                snap = snap_of(meta, sid)
                got = self.table.read_at(self.snapshot_id[sid])
                want = self._rows(snap.files)
                first = self.observed_time_travel.setdefault(got.snapshot_id, got.rows)
                if first != got.rows:
                    raise Violation("P7 TimeTravelImmutable", f"snapshot {got.snapshot_id} read {got.rows}, "
                                    f"earlier {first}", first, got.rows)
                prop = "P7 TimeTravelImmutable"
            else:
                since = label[2]
                line = ancestors(meta, meta.head)
                between = line[: line.index(since)]
                got = self.table.read_incremental(self.snapshot_id[since])
                want = self._rows([s for s in between if self._appended(meta, s)])
                prop = "P10 IncrementalComplete"
        except Violation:
            raise
        except Exception as e:  # noqa: BLE001 - an engine that cannot read what it committed
            raise Violation("P8 NoDanglingRefs", f"{name} failed: {type(e).__name__}: {e}", "rows", repr(e)) from e
        if got.rows != want:
            raise Violation(prop, f"{name}{label[2:]}: the model's rows are {list(want)}, the engine's "
                            f"{list(got.rows)}", want, got.rows)
        if got.files is not None and name != "ReadIncremental":
            self.reads.append(H.Read(f"r{len(self.reads) + 1}", got.snapshot_id, got.files))

    # -- after every step --------------------------------------------------------------------

    def check(self) -> None:
        for name, fn in checks.SAFETY_CHECKS.items():
            why = fn(self.bounds, self.model)
            if why is not None:
                raise AssertionError(f"the model itself breaks {name}: {why}")
        meta = iceberg.current(self.model)
        try:
            got = self.table.read_current()
        except Exception as e:  # noqa: BLE001
            raise Violation("P8 NoDanglingRefs", f"reading the current snapshot failed: {type(e).__name__}: {e}",
                            "rows", repr(e)) from e
        want = self._rows(iceberg.head_snap(meta).files)
        if got.rows != want:
            raise Violation("P6 Isolation", f"current rows: the model's {list(want)}, the engine's {list(got.rows)}",
                            want, got.rows)
        if meta.head in self.snapshot_id and got.snapshot_id != self.snapshot_id[meta.head]:
            raise Violation(AGREEMENT, f"main's head: the model's {row_id(meta.head)} "
                            f"(snapshot {self.snapshot_id[meta.head]}), the engine's {got.snapshot_id}",
                            self.snapshot_id[meta.head], got.snapshot_id)
        if not self.black_box:
            for w, wr in enumerate(self.model.writers, start=1):
                rec = self.active.get(w)
                if wr.phase in (PLAN, DONE) or rec is None or rec.commit is None:
                    continue
                if rec.commit.phase != PHASES[wr.phase]:
                    raise Violation(AGREEMENT, f"writer {w}: the model is in {wr.phase}, the engine in "
                                    f"{rec.commit.phase}", wr.phase, rec.commit.phase)

    # -- liveness and the history --------------------------------------------------------------

    def converge(self) -> None:
        """Heal, then drive every writer to its end (non-fault steps, delayed swaps
        delivered); then the final-state properties and every retained snapshot's rows."""
        for _ in range(LIVENESS_STEPS_MAX):
            if iceberg.is_terminal(self.model):
                break
            choices = self.enabled()
            if ("Heal", 0) in choices:
                self.apply(("Heal", 0))
                continue
            order = [lab for lab in sorted(choices) if lab[0] not in FAULT_LABELS and lab[0] != "Drop"]
            if not order:
                raise Violation("L2 OperationsTerminate", f"no step left that is not a fault: {sorted(choices)}")
            busy = [lab for lab in order if lab[0] != "Begin"]
            self.apply(busy[0] if busy else order[0])
        else:
            raise Violation("L2 OperationsTerminate", f"the writers did not finish in {LIVENESS_STEPS_MAX} steps")
        for name, fn in checks.TERMINAL_CHECKS.items():
            why = fn(self.bounds, self.model)
            if why is not None:
                raise AssertionError(f"the model itself breaks {name}: {why}")
        for label in self.reader_labels():
            if label[0] == "ReadAt":
                self.apply(label)

    def history(self) -> H.History:
        th = self.table.history()
        snaps = th.snapshots
        operations = []
        observed = []
        main_line = set()
        sid = th.versions[-1].main if th.versions else None
        while sid is not None and sid not in main_line:
            main_line.add(sid)
            sid = snaps[sid].parent_id if sid in snaps else None
        for (w, k), rec in sorted(self.ops.items()):
            out = rec.outcome
            if rec.result is None:
                # Not ended for the model; if the engine ended it (a divergence), judge
                # what the engine claims, so the checker can name what it breaks.
                commit = rec.commit
                if commit is None or not hasattr(commit, "step") or not commit.done:
                    continue
                out = commit.outcome
                if out is not None and out.snapshot_id is not None:
                    self.snapshot_id.setdefault((w, k), out.snapshot_id)
            if rec.result == NOOP or out is None and rec.result != CRASHED:
                continue
            if rec.result == CRASHED and self.snapshot_id.get((w, k)) not in snaps:
                continue                 # crashed before any attempt of it landed
            outcome = {A.Committed: "committed", A.Conflict: "conflict", A.Unknown: "unknown"}.get(
                type(out), "unknown")
            sid = self.snapshot_id.get((w, k)) if rec.spec.kind not in (A.ROLLBACK, A.EXPIRE) else None
            rec_s = snaps.get(sid) if sid is not None else None
            added = rec_s.added_files if rec_s else frozenset()
            removed = rec_s.removed_files if rec_s else frozenset()
            if rec_s is not None and sid not in main_line:
                # Rolled back: its effect on the table was undone by a later rollback, so
                # it neither read for nor wrote to the transactions after it (the checker
                # still sees its snapshot for the lost / duplicate commit checks).
                added = removed = frozenset()
            location = getattr(out, "metadata_location", None)
            if location:
                observed.append(location)
            operations.append(H.Operation(
                row_id((w, k)), rec.kind, outcome, sid, location, rec.start_snapshot_id,
                H.ALL if rec.kind == "overwrite" else frozenset(),
                removed if rec.kind in ("delete", "rewrite") else frozenset(), added, removed))
        return H.History(th, tuple(operations), tuple(self.reads), {}, tuple(observed))

    def judge_history(self) -> H.Verdict:
        try:
            self.last_history = self.history()
        except Exception as e:  # noqa: BLE001 - a chain the engine cannot read back
            raise Violation("P8 NoDanglingRefs", f"the engine's history cannot be read: {type(e).__name__}: {e}",
                            "a readable metadata chain", repr(e)) from e
        verdict = self.last_history_verdict = H.check_history(self.last_history, self.caps.isolation)
        if verdict.anomalies:
            names = sorted({ANOMALY_PROPERTY.get(a.name, AGREEMENT) for a in verdict.anomalies})
            v = Violation(names[0], "the history checker: " + "; ".join(
                f"{a.name}: {a.explanation}" for a in verdict.anomalies))
            v.verdict, v.properties = verdict, set(names)
            raise v
        return verdict

    def close(self) -> None:
        for rec in list(self.active.values()):
            if rec.gate is not None:
                rec.gate.release()
            if rec.thread is not None:
                rec.thread.join(BLACK_BOX_WAIT_S)
        self.table.close()
