"""The random search: a Hypothesis state machine draws programs, conformance.suite.lockstep runs
them on the model and an engine (tests in the Hypothesis idiom, docs/conformance.md).

`ConformanceMachine`'s rules are declared once, statically: one rule per family of steps
(writers beginning operations, writer progress, swap faults, faults that stop a writer,
deliveries of delayed swaps, maintenance, readers). Each rule's precondition is "a step
of this family is enabled for the model and allowed by the engine's capabilities"; its
body draws one such step. Every step goes through `Lockstep.apply`, which mirrors it and
compares observations; teardown ends the program as every run does (`Lockstep.finish`:
liveness, the history checker, every retained snapshot read). `machine_class` binds the
machine to one engine and store (class attributes, no rule is added). A failure shrinks
with Hypothesis' own shrinker (every health check on), and the executed steps are kept as a program (a list of
labels, valid Python) that replays outside Hypothesis (conformance.runs.replay).
"""
from __future__ import annotations

import unittest

from hypothesis import Phase, seed as hypothesis_seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from icefloe.conformance import adapter as A
from icefloe.conformance.suite.profiles import Profile, bounds_for
from icefloe.conformance.suite.readers import DRAWN_READS
from icefloe.conformance.suite.runs import Failure, new_lockstep
from icefloe.conformance.suite.stats import rule_of
from icefloe.conformance.violation import AGREEMENT, AdapterError, Violation

# The step families the rules draw from (rule_of names).
BEGIN = ("Begin",)
PROGRESS = ("write", "Swap", "Retry", "Resolve")
SWAP_FAULTS = ("SwapFails", "AckLost", "SwapDelayed")
STOPS = ("WriteFails", "Crash")
IN_FLIGHT = ("Deliver", "Drop")
MAINTENANCE = ("RemoveOrphans",)
# Heal is not drawn: the liveness phase (teardown) heals, which ends the safety phase.


def fault_mixes(faults: tuple) -> list:
    """The fault kinds one program may inject: all of them, or one kind alone (so a kind
    that is enabled in few phases is not crowded out by those enabled in every phase)."""
    return [tuple(faults)] + [(k,) for k in faults] if faults else [()]


def _interest(h) -> tuple:
    """Which judged history the report shows for a passing run: the most varied one."""
    return len({o.kind for o in h.operations}), len({o.outcome for o in h.operations}), len(h.operations)


class ConformanceMachine(RuleBasedStateMachine):
    # Bound per run by machine_class.
    engine = backends = store = profile = bounds = stats = sink = None
    seed = 0

    def __init__(self):
        super().__init__()
        self.failed = self.cut = False
        stats, sink = self.stats, self.sink
        stats.examples += 1
        stats.backends[self.store] += 1
        stats.writers = max(stats.writers, self.profile.writers)
        try:
            self.lock = new_lockstep(self.engine, self.backends, self.store, self.bounds, self.seed, stats)
        except A.EngineSpecError:
            raise                     # a setup error, not a finding
        except Violation as v:        # the engine could not even set up the table
            v.at(-1, ("Bootstrap", 0))
            sink.failures_seen += 1
            sink.failure = Failure(self.store, [], v, self.seed, 0, self.bounds)
            raise
        if sink.coverage is not None:
            self.lock.observers.append(sink.coverage.watch(self.bounds))
        if sink.on_example is not None:
            sink.on_example(stats)

    # -- how every rule runs a step --------------------------------------------------------

    def _labels(self, families) -> list:
        out = [lab for lab in self.lock.readers.labels() if lab[0] in families]
        return out + [lab for lab in sorted(self.lock.enabled()) if rule_of(lab) in families]

    def _draw(self, data, families, name) -> None:
        self._apply(data.draw(st.sampled_from(self._labels(families)), label=name))

    def _apply(self, label) -> None:
        if self.sink.out_of_time():
            # Hypothesis re-raises a skip at once, with no shrinking (search() stops there)
            self.cut = True
            raise BudgetSpent("the run's time budget ran out")
        try:
            self.lock.apply(label)
        except BaseException as e:
            self.failed = True
            self._record(e)
            raise

    def _record(self, e) -> None:
        if isinstance(e, AdapterError):          # not a property's violation: its own verdict
            e.program = e.program if e.program is not None else list(self.lock.program)
            e.store = e.store or self.store
            self.sink.extra.setdefault("adapter_error", e)
            return
        v = e if isinstance(e, Violation) else Violation(AGREEMENT, f"{type(e).__name__}: {e}")
        v.at(len(self.lock.program) - 1, self.lock.program[-1] if self.lock.program else None)
        self.sink.failures_seen += 1
        catalog = None if self.store != "s3" else "sqlite" if self.lock.ctx.catalog_uri else "s3"
        self.sink.failure = Failure(self.store, list(self.lock.program), v, self.seed, self.lock.ctx.seed,
                                    self.bounds, "search", catalog)

    # -- the rules ---------------------------------------------------------------------------

    @initialize(data=st.data())
    def choose_faults(self, data):
        """The swarm choice of the fault kinds this program injects."""
        if self.bounds.faults:
            self._apply(("Faults", 0, data.draw(st.sampled_from(fault_mixes(self.bounds.faults)), label="faults")))

    @precondition(lambda self: bool(self._labels(BEGIN)))
    @rule(data=st.data())
    def begin(self, data):
        self._draw(data, BEGIN, "begin")

    @precondition(lambda self: bool(self._labels(PROGRESS)))
    @rule(data=st.data())
    def progress(self, data):
        self._draw(data, PROGRESS, "progress")

    @precondition(lambda self: bool(self._labels(SWAP_FAULTS)))
    @rule(data=st.data())
    def swap_fault(self, data):
        self._draw(data, SWAP_FAULTS, "swap fault")

    @precondition(lambda self: bool(self._labels(STOPS)))
    @rule(data=st.data())
    def stop(self, data):
        self._draw(data, STOPS, "write failure or crash")

    @precondition(lambda self: bool(self._labels(IN_FLIGHT)))
    @rule(data=st.data())
    def in_flight(self, data):
        self._draw(data, IN_FLIGHT, "delayed swap")

    @precondition(lambda self: bool(self.lock.transport_labels()))
    @rule(data=st.data())
    def transport(self, data):
        """A transport fault (S3 request or answer lost, SQL COMMIT failing), where the
        engine's store or catalog can meet one (conformance.suite.transport)."""
        self._apply(data.draw(st.sampled_from(self.lock.transport_labels()), label="transport fault"))

    @precondition(lambda self: bool(self._labels(MAINTENANCE)))
    @rule()
    def remove_orphans(self):
        self._apply(("RemoveOrphans", 0))

    @precondition(lambda self: bool(self._labels(DRAWN_READS)))
    @rule(data=st.data())
    def read(self, data):
        self._draw(data, DRAWN_READS, "read")

    def teardown(self):
        try:
            if not self.failed and not self.cut:
                self.lock.finish()
                h, kept = self.lock.last_history, self.sink.extra.get("history")
                if kept is None or _interest(h) > _interest(kept[0]):
                    self.sink.extra["history"] = (h, self.lock.last_history_verdict)
                    self.sink.extra["history_example"] = (f"example {self.stats.examples} of the run (random "
                                                          f"search, {self.store} store, {len(self.lock.program)} steps)")
        except BaseException as e:
            self._record(e)
            raise
        finally:
            self.lock.close()


class BudgetSpent(unittest.SkipTest):
    """The run's time budget ran out in the middle of the random search (Hypothesis stops at
    a skip at once, with no shrinking)."""


def machine_class(engine, backends, store: str, profile: Profile, seed: int, stats, sink) -> type:
    """ConformanceMachine bound to one engine on one store (class attributes only)."""
    name = f"Conformance_{engine.name}_{store}".replace("-", "_").replace(":", "_")
    return type(name, (ConformanceMachine,), dict(
        engine=engine, backends=backends, store=store, profile=profile, bounds=bounds_for(engine, profile),
        seed=seed, stats=stats, sink=sink))


def hypothesis_settings(examples: int, steps: int) -> settings:
    # Every health check is on. deadline=None: a step runs a real engine (storage, catalog,
    # reads), whose time is not the test's to bound; the profile bounds the run instead.
    return settings(max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
                    derandomize=False, print_blob=False, report_multiple_bugs=False,
                    suppress_health_check=[], phases=(Phase.explicit, Phase.generate, Phase.shrink))


def search(engine, profile: Profile, seed: int, backends, store: str, examples: int, stats, sink) -> Failure | None:
    """Hypothesis' random search on one store; its shrunk failure, if any."""
    cls = hypothesis_seed(seed)(machine_class(engine, backends, store, profile, seed, stats, sink))
    before = stats.examples
    try:
        run_state_machine_as_test(cls, settings=hypothesis_settings(examples, profile.steps))
    except BaseException as e:  # noqa: BLE001 - the failure is in the sink
        if "adapter_error" in sink.extra:
            raise sink.extra["adapter_error"] from None
        if sink.failure is not None:
            return sink.failure          # (if the budget ran out while shrinking: the smallest found yet)
        if not _budget_spent(e):
            raise
        done = max(0, stats.examples - before - 1)
        sink.cut = f"{examples - done} of {examples} random examples on the {store} store"
        return None
    return None


def _budget_spent(e: BaseException | None) -> bool:
    """Whether the search ended because the budget ran out: our stop itself, or the error
    Hypothesis raises in its place when the stop came after a draw that an earlier example
    had drawn beyond (its data tree then calls the example flaky: an artefact of the stop,
    not of the engine)."""
    seen = 0
    while e is not None and seen < 8:
        if isinstance(e, BudgetSpent):
            return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False
