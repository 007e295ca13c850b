"""One conformance run against one engine (what `icefloe conform` and the pytest plugin
both call): the directed programs that cover every transition class of the model
(conformance.coverage.directed, no seed involved), the v3 phase (conformance.v3.phase:
families dvs and lineage on a format v3 table, no seed), then Hypothesis' random search on each store
the engine supports (conformance.suite.machine, seeded), then the verdict as a RunResult.

A failure stops the run; it is replayed once more to record the engine's history at the
failure, so the report can show it and name what the history checker finds there too.
"""
from __future__ import annotations

import gc
import time
from contextlib import contextmanager

from icefloe.conformance import adapter as A
from icefloe.conformance.coverage import families as C
from icefloe.conformance.coverage import directed
from icefloe.conformance.suite import machine
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.suite.histories import ANOMALY_PROPERTY
from icefloe.conformance.suite.profiles import MEMORY, REST, S3, Profile, bounds_for, expected_rules
from icefloe.conformance.suite.runs import Failure, Sink, new_lockstep, shrink
from icefloe.conformance.suite.stats import Stats
from icefloe.conformance.v3 import phase as v3_phase
from icefloe.conformance.violation import AGREEMENT, AdapterError, InvalidProgram, Violation
from icefloe.model.checks import history as H


# Failures found by the checks that run no model program (their `found_by`): nothing to replay.
NO_MODEL_PROGRAM = {"wire": "the REST server's answers at the wire (conformance.rest.wire)",
                    "api": "icefloe's table API on each store (conformance.coverage.reflife)"}


def search_plan(engine, profile: Profile, stores=None) -> list:
    """[(store, examples)] of the random search."""
    caps = engine.capabilities
    out = []
    if caps.mode == A.STEPPING and MEMORY in caps.stores:
        out.append((MEMORY, profile.examples_memory))
    if S3 in caps.stores and not caps.rest:
        out.append((S3, profile.examples_s3 if caps.mode == A.STEPPING
                    else profile.examples_s3 + profile.examples_memory // 10))
    if REST in caps.stores:
        out.append((REST, profile.examples_s3 + profile.examples_memory // 10))
    return [(s, n) for s, n in out if n > 0 and (stores is None or s in stores)]


def directed_store(engine) -> str:
    caps = engine.capabilities
    if caps.rest:
        return REST
    return MEMORY if caps.mode == A.STEPPING and MEMORY in caps.stores else S3


def run(engine, profile: Profile, seed: int, backends: Backends, stats: Stats, sink: Sink,
        stores=None) -> Failure | None:
    """The directed phase, then the random search; the first failure (shrunk), or None."""
    if profile.directed:
        the_plan = sink.extra.get("plan") or directed.plan(engine, profile)
        sink.extra["plan"] = the_plan
        store = directed_store(engine)
        if stores is None or store in stores:
            failure = directed.run(engine, the_plan, store, seed, backends, stats, sink)
            if failure is not None:
                return failure
        if (stores is None or v3_phase.store_for(engine) in stores) and \
                (not profile.families or set(profile.families) & set(v3_phase.FAMILY_NAMES)):
            failure = _run_v3(engine, profile, backends, stats, sink)
            if failure is not None:
                return failure
    sink.extra["search_from"] = stats.copy()
    shard = sink.extra.get("shard")
    if shard is not None and shard[0] != shard[1]:
        return None                          # the random search runs in the last shard only
    for store, examples in search_plan(engine, profile, stores):
        if sink.cut or sink.out_of_time():
            sink.cut = sink.cut or f"the random search on the {store} store"
            return None
        failure = machine.search(engine, profile, seed, backends, store, examples, stats, sink)
        if failure is not None:
            # Hypothesis' shrinker works on its draws and may stop early (its own limits, the
            # budget); delta debugging over the labels then drops the steps that don't matter
            # (reads first), bounded as for a directed failure.
            return shrink(engine, failure, backends)
    return None


def _run_v3(engine, profile: Profile, backends: Backends, stats: Stats, sink: Sink) -> Failure | None:
    """The v3 phase (conformance.v3.phase): families dvs and lineage on the engine's v3 table."""
    plans = sink.extra.get("v3_plan") or v3_phase.plan(engine)
    if profile.families:
        plans = [p for p in plans if p.family.name in profile.families]
    sink.extra["v3_plan"] = plans
    covered = sink.extra.setdefault("v3_covered", v3_phase.new_covered())
    return v3_phase.run(engine, plans, backends, stats, sink, covered)


def replay_history(engine, failure: Failure, backends):
    """Replay the failing program to record the engine's history at the failure."""
    lock = new_lockstep(engine, backends, failure.store, failure.bounds, failure.seed, Stats(), failure.ctx_seed,
                        failure.catalog)
    try:
        try:
            for label in failure.program:
                lock.apply(tuple(label))
        except (Violation, InvalidProgram):
            pass
        try:
            h = lock.history()
        except Exception as e:  # noqa: BLE001 - the flaw destroyed the chain: P8 as well
            v = failure.violation
            v.properties = set(v.properties) | {"P8 NoDanglingRefs"}
            v.message += f" (and the engine's metadata chain cannot be read: {type(e).__name__})"
            return None, None
        return h, H.check_history(h, engine.capabilities.isolation)
    finally:
        lock.close()


def name_anomalies(failure: Failure, verdict) -> None:
    """Add the properties the history checker finds broken at the failure to those the
    failing step named (an A0 divergence is often a P2 lost commit, say, underneath)."""
    if verdict is None or not verdict.anomalies:
        return
    v = failure.violation
    v.properties = set(v.properties) | {ANOMALY_PROPERTY.get(a.name, AGREEMENT) for a in verdict.anomalies}


def vacuity(stats: Stats, engine, profile: Profile) -> list:
    """Why a random search proved too little (the guard of a profile without directed
    programs, and of the deep profile's search)."""
    b = bounds_for(engine, profile)
    out = []
    if stats.retries == 0:
        out.append("no commit retried after a conflict")
    for kind in b.faults:
        if stats.faults.get(kind, 0) == 0:
            out.append(f"no {kind} fault injected")
    if {A.ACK_LOST, A.SWAP_DELAYED} & set(b.faults):
        if stats.unknown_resolved_committed == 0:
            out.append("no unknown outcome resolved as committed")
        if stats.unknown_resolved_not_committed == 0:
            out.append("no unknown outcome resolved as not committed")
    for name in expected_rules(engine, profile):
        if stats.rules.get(name, 0) == 0:
            out.append(f"rule {name} never ran")
    return out


def unchecked(engine) -> tuple:
    """Properties this engine's capabilities leave unobserved (their verdict is unknown)."""
    caps = engine.capabilities
    out = []
    if A.READ_AT not in caps.reads:
        out.append("P7 TimeTravelImmutable")
    if A.READ_INCREMENTAL not in caps.reads:
        out.append("P10 IncrementalComplete")
    if not ({A.EXPIRE, A.ORPHANS} & set(caps.operations)):
        out.append("P9 CleanupSafe")
    return tuple(out) + v3_phase.unchecked(engine)


# Young-generation collections between two full ones while a run's heap is frozen (CPython's
# default is 10: with the old objects frozen, the "a quarter more long-lived objects" rule no
# longer holds full collections back, and they came every ~10).
FULL_COLLECTION_EVERY = 100


@contextmanager
def frozen_heap():
    """The objects alive when a run starts (the plan, the model's memos, imported modules)
    kept out of the cyclic GC's full collections until it ends, when they are thawed and the
    thresholds restored; what the run makes is collected as before. Each full collection
    walked them all again: in ci's first 300 directed programs, 5 full collections took 4.2
    of 35.2 s of CPU; frozen, 2.2 s (20 collections); frozen with FULL_COLLECTION_EVERY,
    1.0 s (2) (issue 32)."""
    thresholds = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(thresholds[0], thresholds[1], max(thresholds[2], FULL_COLLECTION_EVERY))
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def run_suite(engine, spec: str, profile: Profile, seed: int = 0, variant: str | None = None,
              on_example=None, stores=None, plan=None, shard=None):
    """A whole run, as a report.RunResult (`plan`: the directed plan, if made already)."""
    with frozen_heap():
        return _run_suite(engine, spec, profile, seed, variant, on_example, stores, plan, shard)


def _run_suite(engine, spec: str, profile: Profile, seed: int, variant: str | None, on_example, stores, plan,
               shard):
    from icefloe.conformance.report import result as R
    stats, backends = Stats(), Backends()
    sink = Sink(on_example=on_example, coverage=C.Tracker(C.FAMILIES))
    if plan is not None:
        sink.extra["plan"] = plan
    if shard is not None:                    # (K, N): this run's share of the directed programs
        sink.extra["shard"] = shard
    started = time.monotonic()
    if profile.seconds_max is not None:
        sink.deadline = started + profile.seconds_max
    try:
        adapter_error = None
        try:
            failure = run(engine, profile, seed, backends, stats, sink, stores)
        except AdapterError as e:            # its own verdict: no property is judged
            failure, adapter_error = None, e
        history = verdict = None
        example = ""
        if failure is not None and failure.found_by in NO_MODEL_PROGRAM:   # checks, not a program to replay
            example = NO_MODEL_PROGRAM[failure.found_by]
        elif failure is not None and failure.found_by == v3_phase.FOUND_BY:
            example = f"the v3 program that failed ({len(failure.program)} steps, {failure.store} store)"
        elif failure is not None:
            history, verdict = replay_history(engine, failure, backends)
            name_anomalies(failure, verdict)
            example = f"the shrunk counterexample ({len(failure.program)} steps, {failure.store} store)"
        elif "history" in sink.extra:
            history, verdict = sink.extra["history"]
            example = sink.extra.get("history_example", "")
    finally:
        backends.close()
    the_plan = sink.extra.get("plan")
    coverage = the_plan.coverage(sink.coverage) if the_plan is not None else {}
    v3_plans = sink.extra.get("v3_plan")
    if v3_plans is not None:
        coverage.update(v3_phase.coverage(v3_plans, sink.extra["v3_covered"]))
    vacuous = []
    if failure is None and adapter_error is None and sink.cut:
        vacuous.append(f"cut short: the profile's time budget of {profile.seconds_max:.0f} s ran out with "
                       f"{sink.cut} not run (icefloe conform --time-budget)")
    if failure is None and adapter_error is None:
        if the_plan is not None and shard is None:   # a shard's coverage is judged by the merge
            vacuous += [f"class {c} of {f} not exercised" for f, c in the_plan.missed(sink.coverage)][:10]
        if v3_plans is not None:
            vacuous += [f"class {c} of {f} not exercised" for f, c in
                        v3_phase.missed(v3_plans, sink.extra["v3_covered"])][:10]
        if the_plan is None or profile.search_guard:
            searched = stats.since(sink.extra["search_from"]) if "search_from" in sink.extra else stats
            vacuous += [f"random search: {why}" if the_plan is not None else why
                        for why in vacuity(searched, engine, profile)]
    return R.RunResult(
        engine=spec, engine_name=engine.name, variant=variant, profile=profile.name, seed=seed, stats=stats,
        interleaving=engine.capabilities.interleaving, capabilities=engine.capabilities.to_json(),
        expected_rules=expected_rules(engine, profile),
        failure=failure, vacuity=vacuous, history=history, history_verdict=verdict,
        elapsed_s=time.monotonic() - started, unchecked=unchecked(engine), commit=R.git_commit(),
        coverage=coverage, history_example=example, adapter_error=adapter_error, shard=shard,
        coverage_classes=the_plan.classes(sink.coverage) if shard is not None and the_plan is not None else {})
