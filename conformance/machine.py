"""The conformance state machine: Hypothesis draws programs, conformance.lockstep runs
them on the model and an engine (tests in the Hypothesis idiom, docs/conformance.md).

`machine_class(...)` builds a RuleBasedStateMachine for one engine and one storage
backend. Its rules are families of steps (writer phases, faults, deliveries, maintenance,
readers); each rule's precondition is "a step of this family is enabled for the model and
allowed by the engine's capabilities", and its body draws one such step. Every step goes
through `Lockstep.apply`, which mirrors it and compares observations; teardown heals and
requires convergence (liveness), then judges the engine's recorded history. The executed
steps are kept as a program (a list of labels, valid Python) so that a shrunk failure
replays outside Hypothesis: `replay(engine, program, ...)`.

`Backends` starts what a run needs once (moto S3 on 127.0.0.1, a FaultProxy in front of it
for black-box engines, a temporary directory for SQLite catalogs) and hands each example
a fresh `TableContext`.
"""
from __future__ import annotations

import itertools
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, seed as hypothesis_seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test,
)

from icefloe.conformance import adapter as A
from icefloe.conformance.lockstep import FAULT_OF_ACTION, Lockstep
from icefloe.conformance.readers import READ_LABELS
from icefloe.conformance.stats import Stats, rule_of
from icefloe.conformance.violation import AGREEMENT, InvalidProgram, Violation
from icefloe.model import iceberg
from icefloe.model.state import OP_KINDS

MEMORY, S3 = "memory", "s3"
SHRINK_REPLAYS_MAX = 400
SHRINK_SECONDS_MAX = 90.0


@dataclass(frozen=True)
class Profile:
    name: str
    examples_memory: int
    examples_s3: int
    steps: int
    writers: int = 2
    ops: int = 3
    fault_budget: int = 2
    attempts_max: int = 2


PROFILES = {
    "ci": Profile("ci", examples_memory=60, examples_s3=6, steps=40, fault_budget=3),
    "deep": Profile("deep", examples_memory=600, examples_s3=40, steps=80, writers=3, ops=4,
                    fault_budget=3, attempts_max=3),
}

# Rule families, in the order the report lists them.
RULES = ("Begin", "write", "Swap", "Retry", "Resolve", "WriteFails", "SwapFails", "AckLost",
         "SwapDelayed", "Crash", "Deliver", "Drop", "Heal", "RemoveOrphans", "ReadCurrent", "ReadAt",
         "ReadIncremental")


# Hypothesis rules -> the step families each draws from. Hypothesis chooses among the
# enabled rules with a bias that depends on their order, so the rare ones (faults,
# enabled only in some phases) come first; writer progress and readers are grouped.
# Heal is left to the liveness phase (teardown), where it ends the safety phase.
HYPOTHESIS_RULES = {
    "a_swap_fault": ("SwapFails", "AckLost", "SwapDelayed"), "b_inflight": ("Deliver", "Drop"),
    "c_stop": ("WriteFails", "Crash"), "d_maintenance": ("RemoveOrphans",), "e_begin": ("Begin",),
    "f_progress": ("write", "Swap", "Retry", "Resolve"),
    "g_read": ("ReadCurrent", "ReadAt", "ReadIncremental"),
}


def bounds_for(engine, profile: Profile) -> iceberg.Bounds:
    caps = engine.capabilities
    kinds = tuple(k for k in OP_KINDS if k in caps.operations)
    faults = tuple(f for f in A.FAULT_KINDS if f in caps.faults)
    if caps.mode == A.BLACK_BOX:
        faults = ()
    return iceberg.Bounds(writers=profile.writers, ops=profile.ops, kinds=kinds, faults=faults,
                          fault_budget=profile.fault_budget if faults else 0,
                          attempts_max=profile.attempts_max, isolation=caps.isolation,
                          orphan_runs=1 if A.ORPHANS in caps.operations else 0)


def _interest(h) -> tuple:
    """Which judged history the report shows for a passing run: the most varied one."""
    return len({o.kind for o in h.operations}), len({o.outcome for o in h.operations}), len(h.operations)


def fault_mixes(faults: tuple) -> list:
    """The fault kinds one program may inject: all of them, or one kind alone (so a kind
    that is enabled in few phases is not crowded out by those enabled in every phase)."""
    return [tuple(faults)] + [(k,) for k in faults]


def expected_rules(engine, profile: Profile) -> tuple:
    """The rule families the engine's capabilities allow (each must run in a ci run)."""
    caps = engine.capabilities
    b = bounds_for(engine, profile)
    out = ["Begin", "write", "ReadCurrent"]
    if caps.mode == A.STEPPING:
        out += ["Swap", "Retry"]
        if A.ACK_LOST in b.faults or A.SWAP_DELAYED in b.faults:
            out.append("Resolve")
        out += [name for name, kind in FAULT_OF_ACTION.items() if kind in b.faults]
        if A.SWAP_DELAYED in b.faults:
            out += ["Deliver", "Drop"]
    if b.orphan_runs:
        out.append("RemoveOrphans")
    if A.READ_AT in caps.reads:
        out.append("ReadAt")
    if A.READ_INCREMENTAL in caps.reads:
        out.append("ReadIncremental")
    return tuple(r for r in RULES if r in out)


class Backends:
    """Storage and catalogs for a run: started lazily, stopped by `close()`."""

    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="icefloe-conform-")
        self.moto = None
        self.proxy = None
        self.counter = itertools.count(1)

    def s3(self):
        if self.moto is None:
            from icefloe.conformance.testing.moto_server import MotoS3Server
            self.moto = MotoS3Server().start()
        return self.moto

    def fault_proxy(self):
        if self.proxy is None:
            from icefloe.conformance.testing.proxy import FaultProxy
            self.proxy = FaultProxy(self.s3().endpoint_url).start()
        return self.proxy

    def context(self, engine, store: str, seed: int, attempts_max: int) -> A.TableContext:
        n = next(self.counter)
        workdir = Path(self.tmp.name) / f"ex{n}"
        workdir.mkdir()
        hooks = A.FaultHooks()
        keys = {w: f"w{w}" for w in range(0, 8)}
        catalog = f"sqlite:///{workdir / 'catalog.db'}"
        if store == MEMORY:
            return A.TableContext(warehouse="memory://warehouse", catalog_uri=catalog, faults=hooks,
                                  commit_attempts_max=attempts_max, seed=seed + n, workdir=str(workdir),
                                  access_keys=keys)
        from icefloe.conformance.testing.moto_server import DEFAULT_SECRET_KEY
        black_box = engine.capabilities.mode == A.BLACK_BOX
        endpoint = self.fault_proxy().endpoint_url if black_box else self.s3().endpoint_url
        if not black_box and n % 2:
            catalog = None          # every other S3 example keeps its pointer in the S3 catalog
        return A.TableContext(warehouse=f"s3://{self.s3().bucket}/conform/ex{n}", catalog_uri=catalog,
                              s3_endpoint=endpoint, access_keys=keys, secret_key=DEFAULT_SECRET_KEY,
                              faults=hooks, commit_attempts_max=attempts_max, seed=seed + n,
                              workdir=str(workdir))

    def close(self):
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        if self.moto is not None:
            self.moto.stop()
            self.moto = None
        self.tmp.cleanup()


@dataclass
class Failure:
    """The last failing program Hypothesis ran (after shrinking: the minimal one)."""
    store: str
    program: list
    violation: Violation
    seed: int
    ctx_seed: int = 0


@dataclass
class Sink:
    failure: Failure | None = None
    failures_seen: int = 0
    on_example: object = None          # callable(stats) for progress
    extra: dict = field(default_factory=dict)


def new_lockstep(engine, backends: Backends, store: str, profile: Profile, seed: int, stats: Stats,
                 ctx_seed: int | None = None) -> Lockstep:
    ctx = backends.context(engine, store, seed, profile.attempts_max)
    if ctx_seed is not None:
        ctx.seed = ctx_seed
    proxy = backends.proxy if store == S3 and engine.capabilities.mode == A.BLACK_BOX else None
    if proxy is not None:
        proxy.clear()
    return Lockstep(engine, ctx, bounds_for(engine, profile), stats, proxy)


def machine_class(engine, backends: Backends, store: str, profile: Profile, seed: int, stats: Stats,
                  sink: Sink):
    """A RuleBasedStateMachine class for this engine on this backend."""

    class Conformance(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.failed = False
            stats.examples += 1
            stats.backends[store] += 1
            stats.writers = max(stats.writers, profile.writers)
            try:
                self.lock = new_lockstep(engine, backends, store, profile, seed, stats)
            except A.EngineSpecError:
                raise                     # a setup error, not a finding
            except Violation as v:        # the engine could not even set up the table
                v.step_index, v.label = -1, ("Bootstrap", 0)
                sink.failures_seen += 1
                sink.failure = Failure(store, [], v, seed)
                raise
            if sink.on_example is not None:
                sink.on_example(stats)

        def _apply(self, label):
            try:
                self.lock.apply(label)
            except BaseException as e:
                self.failed = True
                self._record(e)
                raise

        def _record(self, e):
            v = e if isinstance(e, Violation) else Violation(AGREEMENT, f"{type(e).__name__}: {e}")
            if v.step_index is None:
                v.step_index = len(self.lock.program) - 1
            sink.failures_seen += 1
            sink.failure = Failure(store, list(self.lock.program), v, seed, self.lock.ctx.seed)

        if bounds_for(engine, profile).faults:
            mixes = fault_mixes(bounds_for(engine, profile).faults)

            @initialize(kinds=st.sampled_from(mixes))
            def choose_faults(self, kinds):
                self._apply(("Faults", 0, kinds))

        def teardown(self):
            try:
                if not self.failed:
                    self.lock.converge()
                    try:
                        self.lock.judge_history()
                    except Violation as v:
                        v.step_index, v.label = len(self.lock.program) - 1, ("History", 0)
                        raise
                    h = self.lock.last_history
                    kept = sink.extra.get("history")
                    if kept is None or _interest(h) > _interest(kept[0]):
                        sink.extra["history"] = (h, self.lock.last_history_verdict)
            except BaseException as e:
                self._record(e)
                raise
            finally:
                self.lock.close()

    def family(name, members):
        def labels(self):
            out = [lab for lab in self.lock.reader_labels() if lab[0] in members]
            return out + [lab for lab in sorted(self.lock.enabled()) if rule_of(lab) in members]

        @precondition(lambda self: bool(labels(self)))
        @rule(data=st.data())
        def step(self, data):
            label = data.draw(st.sampled_from(labels(self)), label=name)
            self._apply(label)
        step.__name__ = f"step_{name}"
        return step

    allowed = set(expected_rules(engine, profile))
    for name, members in HYPOTHESIS_RULES.items():
        members = tuple(m for m in members if m in allowed)
        if members:
            setattr(Conformance, f"step_{name}", family(name, members))
    Conformance.__name__ = Conformance.__qualname__ = f"Conformance_{engine.name}_{store}".replace("-", "_")
    return Conformance


def hypothesis_settings(examples: int, steps: int) -> settings:
    return settings(max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
                    derandomize=False, print_blob=False,
                    suppress_health_check=list(HealthCheck),
                    phases=(Phase.explicit, Phase.generate))   # shrinking: shrink() below


def run(engine, profile: Profile, seed: int, backends: Backends, stats: Stats, sink: Sink,
        stores=None) -> Failure | None:
    """Run the profile's examples on each backend the engine supports; stop at the first
    failing backend and return its (shrunk) failure."""
    caps = engine.capabilities
    plan = []
    if caps.mode == A.STEPPING and MEMORY in caps.stores:
        plan.append((MEMORY, profile.examples_memory))
    if S3 in caps.stores:
        plan.append((S3, profile.examples_s3 if caps.mode == A.STEPPING
                     else profile.examples_s3 + profile.examples_memory // 10))
    if stores is not None:
        plan = [(s, n) for s, n in plan if s in stores]
    for store, examples in plan:
        if examples <= 0:
            continue
        cls = machine_class(engine, backends, store, profile, seed, stats, sink)
        cls = hypothesis_seed(seed)(cls)
        try:
            run_state_machine_as_test(cls, settings=hypothesis_settings(examples, profile.steps))
        except BaseException:  # noqa: BLE001 - the failure is in the sink
            if sink.failure is None:
                raise
            return shrink(engine, sink.failure, profile, backends)
    return None


def _fails(engine, program, failure: Failure, profile, backends) -> Violation | None:
    """The violation `program` finds, if it is one of the same property; else None."""
    try:
        replay(engine, program, profile=profile, store=failure.store, seed=failure.seed,
               backends=backends, ctx_seed=failure.ctx_seed)
    except Violation as v:
        return v if v.prop == failure.violation.prop else None
    except InvalidProgram:
        return None                  # not a valid program for the model (a step not enabled)
    return None


def shrink(engine, failure: Failure, profile: Profile, backends: Backends,
           replays_max: int = SHRINK_REPLAYS_MAX, seconds_max: float = SHRINK_SECONDS_MAX) -> Failure:
    """Delta debugging over the program's steps: cut after the failing step, then drop
    chunks (halves, quarters, ... single steps) while the same property still fails.
    Bounded by `replays_max` replays and `seconds_max`; the result replays as it is."""
    program = list(failure.program)
    if failure.violation.step_index is not None:
        program = program[: failure.violation.step_index + 1]
    best = _fails(engine, program, failure, profile, backends)
    replays = 1
    if best is None:                      # the cut lost it (a teardown finding): keep it whole
        program = list(failure.program)
        best = _fails(engine, program, failure, profile, backends)
        replays += 1
        if best is None:
            return failure                # not reproducible outside Hypothesis: report as found
    deadline = time.monotonic() + seconds_max
    quiet = [lab for lab in program if lab[0] not in READ_LABELS]
    if quiet != program:                  # readers first: usually not needed, cheap to drop
        found = _fails(engine, quiet, failure, profile, backends)
        replays += 1
        if found is not None:
            program, best = quiet, found
    chunk = max(1, len(program) // 2)
    while chunk >= 1 and replays < replays_max and time.monotonic() < deadline:
        i, progressed = 0, False
        while i < len(program) and replays < replays_max and time.monotonic() < deadline:
            candidate = program[:i] + program[i + chunk:]
            found = _fails(engine, candidate, failure, profile, backends) if candidate else None
            replays += 1
            if found is not None:
                program, best, progressed = candidate, found, True
            else:
                i += chunk
        if not progressed:
            chunk //= 2
    # The program as run up to the failing step, liveness steps included (replays alone).
    executed = getattr(best, "program", program)
    if best.step_index is not None:
        executed = executed[: best.step_index + 1]
    return Failure(failure.store, list(executed), best, failure.seed, failure.ctx_seed)


def replay(engine, program, *, profile: Profile | None = None, store: str = MEMORY, seed: int = 0,
           backends: Backends | None = None, ctx_seed: int | None = None,
           converge: bool = True) -> Lockstep:
    """Run a program (a list of labels) on a fresh model and engine; raises the Violation
    the program finds, else returns the Lockstep (history judged, writers converged)."""
    profile = profile or PROFILES["ci"]
    own = backends is None
    backends = backends or Backends()
    lock = None
    try:
        lock = new_lockstep(engine, backends, store, profile, seed, Stats(), ctx_seed)
        for label in program:
            lock.apply(tuple(label))
        if converge:
            lock.converge()
            try:
                lock.judge_history()
            except Violation as v:
                v.step_index, v.label = len(lock.program) - 1, ("History", 0)
                raise
        return lock
    except Violation as v:
        v.program = list(lock.program) if lock is not None else list(program)
        raise
    finally:
        if lock is not None:
            lock.close()
        if own:
            backends.close()
