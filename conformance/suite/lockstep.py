"""Model and engine in lockstep: the step interpreter (spec/PROTOCOL.md; the model is
icefloe.model.iceberg, whose action labels are the program's words).

A program is a list of labels. Model actions are the model's own labels (`("Begin", 1,
"append")`, `("WriteData", 1)`, `("Swap", 2)`, `("AckLost", 1)`, `("Deliver", 1, 2, 1)`,
`("Heal", 0)`, `("AgeFiles", 0)`, `("RemoveOrphans", 0)`, ...); readers add `("ReadCurrent", 0)`, `("ReadAt",
0, (w, k))` and `("ReadIncremental", 0, (w, k))` (conformance.suite.readers); a program may open
with `("Faults", 0, kinds)`, the fault kinds it injects (a swarm choice). `Lockstep.apply`
first checks that the step is enabled for the model and allowed by the engine's
capabilities (else InvalidProgram), then applies it to the model and the same step to the
engine, and compares what each observed; any disagreement raises a Violation naming the
property it breaks ("A0 ModelAgreement" when the engine simply did something else than
the model). `converge` heals the faults and drives every writer to its end (liveness);
`judge_history` runs the history checker over the engine's recorded history
(conformance.suite.histories).

Stepping engines are stepped phase by phase here; black-box engines are driven by
conformance.suite.blackbox (at the S3 proxy) or conformance.rest.driver (a REST commit, held and
faulted at `icefloe serve`). Faults reach a stepping engine through the context's FaultHooks;
a delayed swap waits in `FaultHooks.parked` under the model's name for the request,
`(writer, operation, attempt)`, until a `Deliver` or `Drop` names it.

Orphan removal (spec/PROTOCOL.md 12.2) runs with a threshold in the future while no writer
works, and with `now - three days` while writers work: the engine's storage stamps files with
the program's StoreClock (conformance.suite.clock), which `AgeFiles` moves on by three days,
so the threshold falls between the files written before that step and those written after.
"""
from __future__ import annotations

from dataclasses import replace

from icefloe.conformance import adapter as A
from icefloe.conformance.suite import histories
from icefloe.conformance.suite.blackbox import BlackBoxDriver
from icefloe.conformance.suite.clock import StoreClock
from icefloe.conformance.rest.driver import COMMIT_FAULT, RestDriver
from icefloe.conformance.suite.divergence import check_retained, check_snapshot_ids, engine_failure
from icefloe.conformance.suite.hooks import FaultSwitchboard
from icefloe.conformance.suite.operations import OpRecord, bootstrap, op_spec
from icefloe.conformance.suite.readers import READ_LABELS, Readers, row_id
from icefloe.conformance.suite.stats import WRITE_ACTIONS, Stats, rule_of
from icefloe.conformance.suite.transport import TRANSPORT_LABELS, Transport
from icefloe.conformance.violation import AGREEMENT, AdapterError, InvalidProgram, Violation
from icefloe.conformance.suite.view import FAULT_OF_ACTION, REST, converge_choice, solo, view_of, visible
from icefloe.model import checks, iceberg
from icefloe.model.state import (APPEND, COMMITTED, CONFLICT, CRASHED, DONE, LIST, MANIFESTS, NOOP, PLAN, SWAP_DELAYED,
                                  WRITE_FAIL)

FAULTS = "Faults"
HISTORY = ("History", 0)      # the label a history checker finding is reported at
STEP_TO_PHASES_MAX = 8
# A writer's private steps change nothing a reader can see (as the model's partial-order
# reduction assumes), nor does time passing (AgeFiles): no re-read after them; a bug that
# breaks that shows at the next read.
PRIVATE_ACTIONS = WRITE_ACTIONS | {"Begin", "AgeFiles"}
MEMORY_WAREHOUSE = "memory://"     # the storage that stamps files with the suite's clock
THRESHOLD_FUTURE_MS = 2 ** 62      # orphan removal while no writer works: every file is older
LIVENESS_STEPS_MAX = 200


class Lockstep:
    def __init__(self, engine, ctx: A.TableContext, bounds: iceberg.Bounds, stats: Stats | None = None,
                 proxy=None, rest=None):
        self.engine, self.ctx, self.bounds = engine, ctx, bounds
        self.caps: A.Capabilities = engine.capabilities
        self.black_box = view_of(self.caps)           # False, True (S3 proxy) or REST
        self.stats = stats or Stats()
        self.hooks: FaultSwitchboard | None = ctx.faults
        self.proxy = proxy
        self.program: list = []
        self.model = iceberg.initial_state(bounds)
        self.snapshot_id: dict = {}          # model SnapId -> engine snapshot id
        self.kind_of: dict = {(0, 1): APPEND, (0, 2): APPEND}
        self.ops: dict = {}                  # (w, k) -> OpRecord
        self.active: dict = {}               # w -> OpRecord in progress
        self.readers = Readers(self)
        self.transport = Transport(self)
        self.observers: list = []            # callables (state, label, next state)
        self._enabled_key, self._enabled = None, {}
        self.handles_to_read: list = []      # writers whose operation just ended
        self.step_bases: tuple = ()          # each model writer's base when the current step began
        self.handle_floor: dict = {}         # w -> the base its last operation ended on (readers.check_handle)
        self.driver = RestDriver(self, rest) if self.black_box == REST else (BlackBoxDriver(self) if self.black_box
                                                                             else None)
        self.last_history = self.last_history_verdict = None
        self.left = None                     # runs.replay(lenient): where the engine left the program
        self.clock = StoreClock()            # the time the engine's storage stamps files with
        self.ctx, self.table = bootstrap(self, engine, replace(ctx, now_ms=self.clock.now_ms))

    # -- the program ----------------------------------------------------------------------

    def enabled(self) -> dict:
        """label -> next model state, for every model action a program may name here (none
        of a writer whose swap answer the transport holds). Memoized per model state (the
        random search asks once per rule per step)."""
        key = (self.model, self.bounds, frozenset(self.transport.held))
        if not (self._enabled_key and all(a is b for a, b in zip(self._enabled_key[:2], key[:2]))
                and self._enabled_key[2] == key[2]):      # identity: the key holds the state alive
            self._enabled = {label: nxt for label, nxt in iceberg.successors(self.bounds, self.model)
                             if visible(label, self.black_box) and not self.transport.busy(label[1])}
            self._enabled_key = key
        return self._enabled

    def transport_labels(self) -> list:      # transport faults, or a REST engine's commit faults
        return (self.driver.labels if self.black_box == REST else self.transport.labels)(self.enabled())

    def advance(self, label, nxt) -> None:
        """The model takes one transition (every model change goes through here, so the
        observers, the coverage tracker among them, see each one)."""
        before, self.model = self.model, nxt
        for observe in self.observers:
            observe(before, label, nxt)

    def apply(self, label) -> None:
        label = tuple(label)
        if label[0] == FAULTS:
            self._choose_faults(label)
            return
        if label[0] in READ_LABELS:
            if label not in self.readers.labels():
                raise InvalidProgram(label, "is not a read this engine can make here")
            nxt = None
        elif label[0] in TRANSPORT_LABELS or label[0] == COMMIT_FAULT:
            if label not in self.transport_labels():
                raise InvalidProgram(label, "is not a transport fault this engine can meet here")
            nxt = TRANSPORT_LABELS
        else:
            choices = self.enabled()
            if label not in choices:
                raise InvalidProgram(label, f"is not enabled here (enabled: {sorted(choices)})")
            nxt = choices[label]
            if label[0] == "AgeFiles" and not self.ctx.warehouse.startswith(MEMORY_WAREHOUSE):
                raise InvalidProgram(label, "needs storage that stamps files with the suite's clock (memory)")
        self.program.append(label)
        self.stats.steps += 1
        self.stats.rules[rule_of(label)] += 1
        self.step_bases = tuple(wr.base for wr in self.model.writers)
        try:
            if nxt is None:
                self.readers.read(label)
            elif nxt is TRANSPORT_LABELS:
                (self.driver if label[0] == COMMIT_FAULT else self.transport).step(label)
            else:
                self._step(label, nxt)
            self.check(reads=label[0] not in PRIVATE_ACTIONS)
        except Violation as v:
            raise v.at(len(self.program) - 1, label)

    def _choose_faults(self, label) -> None:
        """("Faults", 0, kinds): this program injects only these fault kinds (a swarm
        choice made once, before the first step, so every kind gets programs of its own)."""
        if self.program:
            raise InvalidProgram(label, "must come first")
        kinds = tuple(k for k in self.bounds.faults if k in label[2])
        self.bounds = replace(self.bounds, faults=kinds)
        self.model = self.model._replace(faults_on=bool(kinds) and self.bounds.fault_budget > 0)
        self.program.append(label)

    # -- model actions mirrored on the engine ------------------------------------------------

    def _engine(self, w: int, fn, *args):
        """Call into the engine; what it raises is its observation here (its own assertion too)."""
        try:
            return fn(*args)
        except (Violation, InvalidProgram, AdapterError):
            raise
        except Exception as e:  # noqa: BLE001 - the engine's failure is a finding
            raise engine_failure(self, w, e) from e

    def _step(self, label, nxt) -> None:
        name, w = label[0], label[1]
        before = self.model
        wr = before.writers[w - 1] if w else None
        self.advance(label, nxt)
        fault = FAULT_OF_ACTION.get(name)
        if fault is not None:
            self.stats.faults[fault] += 1
        if name == "Begin":
            self._begin(w, label[2], before, label[3:])
        elif self.black_box == REST and name in RestDriver.RELEASES + ("Deliver", "Drop"):
            self.driver.mirror(label, before)
        elif self.black_box and name == "WriteMetadata":
            self.driver.finish(w)
        elif name in WRITE_ACTIONS or name in ("Retry", "Resolve", "Swap"):
            self._engine_step(w)
        elif fault == "crash":
            self.active.pop(w).commit = None
        elif fault is not None:
            self._fault(w, name, fault, wr)
        elif name in ("Deliver", "Drop"):
            request = label[1:]
            take = self.hooks.parked.deliver if name == "Deliver" else self.hooks.parked.drop
            self._engine(0, take, request)
        elif name == "AgeFiles":
            self.clock.age()
        elif name == "RemoveOrphans":
            self.readers.invalidate()
            # the model's choice: every unreachable file while quiet, else only the aged ones
            older_than_ms = THRESHOLD_FUTURE_MS if iceberg.quiet(before) else self.clock.older_than_ms()
            self._engine(0, self.table.remove_orphans, older_than_ms)
        elif name != "Heal":
            raise AssertionError(f"no mirror for {label}")
        if name == "Resolve":
            # An unknown swap outcome resolved: the attempt landed (the operation ends
            # committed here) or it did not (a next attempt, or the operation fails).
            ended = self.model.writers[w - 1].k != wr.k
            if ended and self.model.outcomes[w - 1][wr.k - 1].res == COMMITTED:
                self.stats.unknown_resolved_committed += 1
            else:
                self.stats.unknown_resolved_not_committed += 1
        if w and self.model.writers[w - 1].k != wr.k:
            self._ended(w, wr.k)

    def _fault(self, w: int, name: str, kind: str, wr) -> None:
        """A hooked fault: armed for the writer's next request, which this step makes."""
        request = (w, wr.k, wr.attempt)
        self.hooks.arm(w, kind, request)
        rec = self.active[w]
        try:
            self._engine(w, rec.commit.step)
            if kind == WRITE_FAIL and wr.phase == MANIFESTS and wr.attempt > 1 \
                    and self.hooks.armed(w) == WRITE_FAIL and rec.commit.phase == LIST:
                # it kept the manifests it filtered (PROTOCOL 5.2): the failure meets its list write
                self._engine(w, rec.commit.step)
        finally:
            missed = self.hooks.disarm(w)
        if missed is not None:
            raise Violation(AGREEMENT, f"writer {w}: the engine made no request the {kind} fault could hit "
                            f"(phase {rec.commit.phase})", wr.phase, rec.commit.phase)
        if kind == SWAP_DELAYED and request not in self.hooks.parked:
            raise Violation(AGREEMENT, f"writer {w}: the engine did not park its delayed swap "
                            "(FaultHooks.park)", "a parked request", "none")
        if kind != WRITE_FAIL:
            self._step_to(w)

    def _begin(self, w: int, kind: str, before, choices=()) -> None:
        k = before.writers[w - 1].k
        spec = op_spec(self.model, self.snapshot_id, w, kind, before, choices)
        rec = OpRecord(w, k, kind, spec)
        self.ops[(w, k)] = rec
        self.kind_of[(w, k)] = kind
        self.active[w] = rec
        rec.start_snapshot_id = self.snapshot_id.get(iceberg.head_snap(iceberg.current(before)).id)
        rec.commit = self._engine(w, self.table.begin, w, spec)
        if self.black_box:
            self.driver.start(w, rec)
            return
        self._engine(w, rec.commit.step)                    # refresh and plan
        rec.planned_snapshot_id = rec.commit.snapshot_id
        if rec.commit.snapshot_id is not None:
            self.snapshot_id[(w, k)] = rec.commit.snapshot_id
        rec.start_snapshot_id = rec.commit.starting_snapshot_id
        self._step_to(w)

    def _engine_step(self, w: int) -> None:
        rec = self.active[w]
        if rec.commit.done:
            raise Violation(AGREEMENT, f"writer {w}: the engine ended ({rec.commit.outcome}) where the model "
                            f"takes another step", self.model.writers[w - 1].phase, A.DONE)
        self._engine(w, rec.commit.step)
        self._step_to(w)

    def _step_to(self, w: int) -> None:
        """Step writer w's commit until its phase is the model writer's phase."""
        wr = self.model.writers[w - 1]
        rec = self.active.get(w)
        if rec is None or rec.commit is None:
            return
        want = None if wr.k != rec.k else wr.phase       # None: the model ended the operation
        for _ in range(STEP_TO_PHASES_MAX):
            if want is not None and rec.commit.phase == want:
                break
            if rec.commit.done:
                break
            self._engine(w, rec.commit.step)
        if want is not None and rec.commit.phase == want:
            return
        if want is not None and rec.commit.done and self._aborts_anyway(w, rec):
            return
        if not (want is None and rec.commit.done):
            raise Violation(AGREEMENT, f"writer {w}: the model is in phase {wr.phase}, the engine in {rec.commit.phase}"
                            + (f", ended {rec.commit.outcome}" if rec.commit.done else ""), wr.phase, rec.commit.phase)

    def _aborts_anyway(self, w: int, rec: OpRecord) -> bool:
        """The engine gave up (Conflict) before the model's writer ended. That is allowed
        when the model's writer, running alone from here, aborts too: the engine followed a
        legal schedule of the model, only faster (say, a concurrent expiry deleted the
        manifests an overwrite was rewriting, and its validation would fail anyway). The
        model takes those solo steps now, inside this step, so a replay is unchanged."""
        if not isinstance(rec.commit.outcome, A.Conflict):
            return False
        path = solo(self.bounds, self.model, w)
        if not path or path[-1][1].outcomes[w - 1][rec.k - 1].res != CONFLICT:
            return False
        for label, nxt in path:
            self.advance(label, nxt)
        self.stats.early_aborts += 1
        return True

    def _ended(self, w: int, k: int) -> None:
        """The model ended operation (w, k): the engine's outcome must agree."""
        self.readers.invalidate()          # its cleanup (or an expiry's deletes) ran here
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
        expected = A.OUTCOME_TYPES[A.COMMITTED if res == NOOP else res]
        if not isinstance(out, expected):
            prop = "P5 ValidationSound" if isinstance(out, A.Committed) and res == CONFLICT else AGREEMENT
            raise Violation(prop, f"op {row_id((w, k))} ({rec.kind}): the model's outcome is {res}, the engine's "
                            f"{out}", res, out)
        if A.READ_HANDLE in self.caps.reads:
            self.handles_to_read.append(w)     # after the table's rows (check)
            # its base as the step that ended it began (an early abort's solo steps move it on)
            self.handle_floor[w] = self.step_bases[w - 1] if self.step_bases else None
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

    # -- after every step --------------------------------------------------------------------

    def check(self, reads: bool = True) -> None:
        """After a step: the model's own safety properties; unless the step was a writer's
        private write (`reads` False), the table's rows and main's head as the engine reads
        them; every in-flight writer's phase."""
        for name, fn in checks.SAFETY_CHECKS.items():
            why = fn(self.bounds, self.model)
            assert why is None, f"the model itself breaks {name}: {why}"
        if reads or self.handles_to_read:
            self.readers.check_rows()
            check_snapshot_ids(self)
            self.readers.check_head()
        while self.handles_to_read:
            self.readers.check_handle(self.handles_to_read.pop(0))
        if self.black_box:
            return
        for w, wr in enumerate(self.model.writers, start=1):
            rec = self.active.get(w)
            if wr.phase in (PLAN, DONE) or rec is None or rec.commit is None or self.transport.busy(w):
                continue
            if rec.commit.phase != wr.phase:
                raise Violation(AGREEMENT, f"writer {w}: the model is in {wr.phase}, the engine in "
                                f"{rec.commit.phase}", wr.phase, rec.commit.phase)

    # -- liveness and the history --------------------------------------------------------------

    def converge(self) -> None:
        """Heal, then drive every writer to its end (non-fault steps, delayed swaps
        delivered); then the final-state properties."""
        for w in sorted(self.transport.held):
            self.apply(("LoseAnswer", w))     # a held swap answer is lost first
        for _ in range(LIVENESS_STEPS_MAX):
            label = converge_choice(self.bounds, self.model, self.black_box)
            if label is None:
                break
            if not label:
                raise Violation("L2 OperationsTerminate", f"no step left that is not a fault: {sorted(self.enabled())}")
            self.apply(label)
        else:
            raise Violation("L2 OperationsTerminate", f"the writers did not finish in {LIVENESS_STEPS_MAX} steps")
        for name, fn in checks.TERMINAL_CHECKS.items():
            why = fn(self.bounds, self.model)
            assert why is None, f"the model itself breaks {name}: {why}"

    def read_retained(self) -> None:
        """The current rows and every retained snapshot's (P7, P8: nothing reachable was
        lost); incremental reads since main's oldest retained ancestor and since the head's
        parent (P10: every kind of commit in between, and the shortest span); the head's
        rows under a filter, every comparison (A0: planning pruned no file it needs)."""
        labels = self.readers.labels()
        since = [lab for lab in labels if lab[0] == "ReadIncremental"]   # newest first
        for label in ([("ReadCurrent", 0)] + [lab for lab in labels if lab[0] == "ReadAt"] + since[-1:] + since[1:2]
                      + [lab for lab in labels if lab[0] == "ReadFiltered"]):
            self.apply(label)

    def finish(self) -> None:
        """The end of a program: liveness, the history checker, every retained snapshot."""
        self.converge()
        try:
            self.judge_history()
            check_retained(self)
        except Violation as v:
            raise v.at(len(self.program) - 1, HISTORY)
        self.read_retained()

    def history(self):
        return histories.record(self)

    def judge_history(self):
        return histories.judge(self)

    def close(self) -> None:
        self.transport.close()
        if self.driver is not None:
            self.driver.close()
        self.table.close()
