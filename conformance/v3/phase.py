"""The v3 phase of a run (after the directed phase of conformance.coverage, before the random
search): every class of the `dvs` and `lineage` families (conformance.v3.families) reached
on the engine's v3 table by a directed program, no seed involved, each on a fresh table,
ended by its liveness phase (conformance.v3.lockstep). What the engine's capabilities put
out of reach is listed with the reason, never failed: no format v3, a v3 operation it lacks,
no _row_id reads, or commits it cannot expose phase by phase (a black-box engine).

`plan(engine)` searches the families' instances at the engine's declared DV policy,
`run(...)` executes the programs and records the classes each executed model step
completed (coverage measured on the engine, as for the v2 families), `coverage(...)` and
`missed(...)` are the verdict's; `replay(engine, labels, bounds)` reruns one program.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from icefloe.conformance import adapter as A
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.suite.profiles import MEMORY, REST, S3
from icefloe.conformance.suite.runs import Failure
from icefloe.conformance.v3 import families as F
from icefloe.conformance.v3.lockstep import V3Lockstep
from icefloe.conformance.violation import Violation
from icefloe.model import v3 as V

FOUND_BY = "v3"                      # Failure.found_by of a failure this phase found
FAMILY_NAMES = F.FAMILY_NAMES


@dataclass
class V3FamilyPlan:
    family: F.Family
    total: frozenset                  # the model's classes at the engine's DV policy
    reachable: frozenset              # those this engine can be driven to
    programs: list
    why_not: dict = field(default_factory=dict)   # class -> why this engine cannot reach it


def _out_of_reach(caps: A.Capabilities, family: F.Family) -> str | None:
    """Why none of the family's classes is reachable (None: some may be)."""
    if 3 not in caps.format_versions or not caps.v3_operations:
        return "format v3 not supported (capabilities format_versions, v3_operations)"
    if caps.mode != A.STEPPING:
        return "the v3 phase steps a commit phase by phase (a stepping engine)"
    if family.name == "lineage" and not caps.row_lineage:
        return "no _row_id reads (capability row_lineage=False)"
    return None


def plan(engine) -> list:
    caps = engine.capabilities
    policy = caps.dv_policy or A.DV_CONFLICT
    plans = []
    for family in F.FAMILIES:
        instances = family.bounds(policy)
        total = F.witnesses(family, instances)
        why = _out_of_reach(caps, family)
        if why is None:
            usable = [b for b in instances if set(b.roles) <= set(caps.v3_operations)
                      and (not b.upgraded or caps.v3_upgrade)]
            mine = F.witnesses(family, usable)
            programs = F.cover(family, mine)
            lacking = "operation " + ", ".join(sorted({k for b in instances for k in b.roles}
                                                      - set(caps.v3_operations))) + " not supported on v3"
            why_not = {c: lacking if set(total[c].bounds.roles) - set(caps.v3_operations) or caps.v3_upgrade
                       else "no table upgraded from v2 with position deletes (capability v3_upgrade)"
                       for c in set(total) - set(mine)}
        else:
            mine, programs, why_not = {}, [], {c: why for c in total}
        plans.append(V3FamilyPlan(family, frozenset(total), frozenset(mine) & frozenset(total), programs, why_not))
    return plans


def store_for(engine) -> str:
    caps = engine.capabilities
    if caps.rest:
        return REST
    return MEMORY if MEMORY in caps.stores else S3


def run(engine, plans: list, backends: Backends, stats, sink, covered: dict) -> Failure | None:
    """Every program of `plans` on the engine; the first failure (a directed program is a
    shortest path to its class: cut at the failing step, not shrunk further)."""
    pairs = [(fp.family, p) for fp in plans for p in fp.programs]
    store = store_for(engine)
    for i, (family, program) in enumerate(pairs):
        if sink.out_of_time():
            sink.cut = sink.cut or f"{len(pairs) - i} of {len(pairs)} v3 programs"  # an earlier cut is named first
            return None
        stats.examples += 1
        stats.backends[f"{store} (v3)"] += 1
        stats.writers = max(stats.writers, program.bounds.writers)
        try:
            replay(engine, program.labels, program.bounds, backends, store, stats, covered)
        except Violation as v:
            sink.failures_seen += 1
            labels = list(v.program or program.labels)
            if v.step_index is not None:
                labels = labels[: v.step_index + 1]
            return Failure(store, labels, v, 0, 0, program.bounds, FOUND_BY)
        if sink.on_example is not None:
            sink.on_example(stats)
    return None


def replay(engine, labels, bounds: V.V3Bounds, backends: Backends | None = None, store: str = MEMORY,
           stats=None, covered: dict | None = None) -> V3Lockstep:
    """Run one v3 program (and its liveness phase) on a fresh v3 table of the engine; raises
    the Violation it finds (with `.program`, the steps as run)."""
    own = backends is None
    backends = backends or Backends()
    lock = None
    try:
        ctx = backends.context(engine, store, 0, bounds.attempts_max)
        lock = V3Lockstep(engine, ctx, bounds, stats)
        if covered is not None:
            lock.observers.extend(_watch(covered, bounds))
        for label in labels:
            lock.apply(tuple(label))
        lock.finish()
        return lock
    except Violation as v:
        v.program = list(lock.program) if lock is not None else list(labels)
        raise
    finally:
        if lock is not None:
            lock.close()
        if own:
            backends.close()


def _watch(covered: dict, bounds: V.V3Bounds) -> list:
    """One observer per family: the classes each executed model step completes."""
    out = []
    for family in F.FAMILIES:
        tags = {"t": frozenset()}

        def observe(s, label, t, family=family, tags=tags):
            tags["t"], done = family.observe(bounds, tags["t"], s, label, t)
            covered[family.name].update(done)
        out.append(observe)
    return out


def new_covered() -> dict:
    return defaultdict(set)


def coverage(plans: list, covered: dict) -> dict:
    """verdict.json's coverage entries of the v3 families (the v2 families' shape)."""
    out = {}
    for fp in plans:
        got = covered[fp.family.name] & fp.total
        entry = {"covered": len(got), "total": len(fp.total)}
        if fp.why_not:
            reasons: dict = {}
            for why in fp.why_not.values():
                reasons[why] = reasons.get(why, 0) + 1
            entry["unreachable"] = len(fp.why_not)
            entry["why_unreachable"] = dict(sorted(reasons.items()))
        gap = fp.reachable - got
        if gap:
            entry["missed"] = [list(c) for c in sorted(gap, key=repr)[:10]]
        out[fp.family.name] = entry
    return out


def missed(plans: list, covered: dict) -> list:
    """(family, class) reachable and not exercised (none, unless the phase was cut short)."""
    return [(fp.family.name, c) for fp in plans for c in sorted(fp.reachable - covered[fp.family.name], key=repr)]


def unchecked(engine) -> tuple:
    """The v3 properties this engine's capabilities leave unobserved."""
    caps = engine.capabilities
    if not caps.v3 or caps.mode != A.STEPPING:
        return ("P11 OneLiveDV", "P12 DeletedRowsStayDeleted", "P13 RowIdsUnique", "P14 NextRowIdExact")
    if not caps.row_lineage:
        return ("P13 RowIdsUnique",)
    return ()
