"""The directed phase of a run: every transition class of the model (conformance.coverage.base),
each reached on the engine by a program derived from the model's state graph, run before
any random search and with no seed involved.

`plan(engine, profile)` searches each family's instance twice: with every operation and
fault (the model's classes: the coverage totals) and as the engine can be driven (its
capabilities, stepping or black-box). A class of the first set the engine cannot reach
is reported with the reason. `run` executes the selected programs (each on a fresh
table, ended as every program is: liveness, history checker, retained snapshots read)
and records what each covered; the first violation is shrunk and returned.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from icefloe.conformance import adapter as A
from icefloe.conformance.coverage import families as C
from icefloe.conformance.coverage import cache as graph_cache
from icefloe.conformance.rest import coverage as rest_coverage
from icefloe.conformance.rest import wire
from icefloe.conformance.coverage import races, reflife
from icefloe.conformance.coverage import transport as TC
from icefloe.conformance.suite.profiles import MEMORY, REST, REST_FAULTS, S3, Profile, bounds_for, model_bounds
from icefloe.conformance.suite.runs import Failure, replay, shrink
from icefloe.conformance.suite.stats import Stats
from icefloe.conformance.suite.view import view_of
from icefloe.conformance.violation import AGREEMENT, AdapterError, Violation


@dataclass
class FamilyPlan:
    family: C.Family
    total: frozenset                  # the model's classes at the family's bounds
    reachable: frozenset              # those this engine can be driven to
    programs: list                    # Programs that together reach every reachable class
    why_not: dict = field(default_factory=dict)   # class -> why this engine cannot reach it
    targets: dict = field(default_factory=dict)   # program -> the class it was made for
    left: dict = field(default_factory=dict)      # class -> where the engine left its program

    def missed(self, covered) -> frozenset:
        return self.reachable - covered - set(self.left)


@dataclass
class Plan:
    families: list

    @property
    def programs(self) -> list:
        return [p for f in self.families for p in f.programs]

    def coverage(self, tracker: C.Tracker) -> dict:
        """verdict.json's coverage: per family, classes exercised on the engine / classes in
        the model, and how many (and why) the engine cannot reach."""
        out = {}
        for f in self.families:
            covered = tracker.covered[f.family.name] & f.total
            entry = {"covered": len(covered), "total": len(f.total)}
            why_not = {**f.why_not, **{c: why for c, why in f.left.items() if c not in covered}}
            if why_not:
                reasons: dict = {}
                for why in why_not.values():
                    reasons[why] = reasons.get(why, 0) + 1
                entry["unreachable"] = len(why_not)
                entry["why_unreachable"] = dict(sorted(reasons.items()))
            missed = f.missed(covered)
            if missed:
                entry["missed"] = [list(c) for c in sorted(missed, key=repr)[:10]]
            out[f.family.name] = entry
        return out

    def classes(self, tracker: C.Tracker) -> dict:
        """Per family, the classes (as repr strings) the engine can reach, those this run
        covered and those its engine left: what `icefloe conform merge` joins across shards."""
        out = {}
        for f in self.families:
            covered = tracker.covered[f.family.name] & f.total
            out[f.family.name] = {"reachable": sorted(map(repr, f.reachable)), "covered": sorted(map(repr, covered)),
                                  "left": sorted(map(repr, f.left))}
        return out

    def missed(self, tracker: C.Tracker) -> list:
        """Reachable classes the run did not exercise (none, by construction, unless the
        directed phase was cut short)."""
        return [(f.family.name, c) for f in self.families
                for c in sorted(f.missed(tracker.covered[f.family.name]), key=repr)]


def _why(cls, caps: A.Capabilities) -> str:
    words = set(x for x in cls if isinstance(x, str)) | {y for x in cls if isinstance(x, tuple) for y in x}
    for op in A.COMMIT_OPERATIONS:
        if op in words and op not in caps.operations:
            return f"operation {op} not supported"
    if caps.partitions < 2 and "other partition" in words:
        return "one partition (capability partitions=1)"
    if not caps.refs and any(w.endswith("@" + A.BRANCH) for w in words):
        return "no commits to a branch (capability refs=False)"
    if caps.commit_attempts_max == 1 and "next attempt" in words:
        return "the engine does not retry a rejected commit (capability commit_attempts_max=1)"
    injectable = caps.faults | (set(REST_FAULTS) if caps.rest else set())
    for fault in A.FAULT_KINDS:
        if fault in words and fault not in injectable:
            return f"fault {fault} not injectable" + (" at a REST commit" if caps.rest else "")
    if caps.rest and words & {A.ACK_LOST, A.SWAP_DELAYED}:
        return "the engine ends an unknown commit Unknown without resolving it (its caller resolves, 9.6)"
    if caps.mode == A.BLACK_BOX:
        return "a black-box commit cannot be interleaved phase by phase"
    return "not reachable with this engine's capabilities"


def plan(engine, profile: Profile) -> Plan:
    caps = engine.capabilities
    black_box = view_of(caps)
    full, mine = model_bounds(engine, profile), bounds_for(engine, profile)
    families = []
    for family in C.FAMILIES:
        model = graph_cache.explore(family, family.bounds(full), False)
        engine_view = graph_cache.explore(family, family.bounds(mine), black_box)
        reachable = engine_view.classes & model.classes
        programs = graph_cache.cover(engine_view, black_box) if reachable else []
        why_not = {c: "operation orphans not supported" if isinstance(family, C.Orphans) and A.ORPHANS not in
                   caps.operations else _why(c, caps) for c in model.classes - reachable}
        targets = {p: c for c, p in engine_view.witnesses.items() if p in set(programs)}
        families.append(FamilyPlan(family, model.classes, reachable, programs, why_not, targets))
        if family.name == "faults":
            families.append(_transport_plan(engine, caps, family, full, mine, model, engine_view))
            if caps.rest:
                families.append(_rest_plan(engine_view))
    rivals = next(f for f in C.FAMILIES if f.name == "rivals")
    families.append(_races_plan(caps, graph_cache.explore(rivals, rivals.bounds(mine), black_box), mine))
    if judges_server(engine):
        families.append(_wire_plan())
    if drives_icefloe_api(engine):
        families.append(_reflife_plan())
    if profile.families:
        families = [f for f in families if f.family.name in profile.families]
    return Plan(families)


def _races_plan(caps, rivals_view, mine) -> FamilyPlan:
    """The races family (conformance.coverage.races): races directed on S3 with the S3
    catalog and with SQLite, and on PostgreSQL where the machine has it, for a stepping
    engine (a black-box commit cannot be held at its swap)."""
    total = races.total_classes()
    wheres, why = [], {}
    stepping = caps.mode == A.STEPPING
    for where, (store, catalog) in races.WHERE.items():
        if not stepping:
            why[where] = "a black-box commit cannot be interleaved phase by phase"
        elif store not in caps.stores:
            why[where] = f"store {store} not supported"
        elif catalog == "postgres" and A.TRANSPORT_SQL not in caps.transport:
            why[where] = "the engine declares no SQL catalog (transport sql)"
        elif catalog == "postgres" and races.postgres_available() is not None:
            why[where] = races.postgres_available()
        else:
            wheres.append(where)
    programs = races.programs(rivals_view, mine, tuple(wheres), A.TRANSPORT_S3 in caps.transport) if stepping else {}
    reachable = frozenset(programs) & total
    why_not = {c: why.get(c[0]) or ("the S3 requests of this engine cannot be held" if c[1] == races.HELD2 else
                                    _why(c, caps)) for c in total - reachable}
    return FamilyPlan(races.FAMILY, total, reachable, [programs[c] for c in sorted(reachable, key=repr)], why_not,
                      {p: c for c, p in programs.items()})


def drives_icefloe_api(engine) -> bool:
    """Whether a run drives icefloe's own table API (the ref-lifecycle family: ref creation
    and retention per ref, which the model and the adapter protocol do not have): for
    icefloe itself, the stepping reference, and its variants."""
    return engine.capabilities.mode == A.STEPPING and engine.name.startswith("icefloe")


def _reflife_plan() -> FamilyPlan:
    """The ref-lifecycle family (conformance.coverage.reflife): its programs run at every
    place this machine has (PostgreSQL only where a server can be started)."""
    total = reflife.classes()
    why = races.postgres_available()
    wheres = tuple(w for w in reflife.WHERES if w != reflife.POSTGRES or why is None)
    reachable = reflife.classes(wheres)
    return FamilyPlan(C.Family(reflife.FAMILY_NAME, reflife.FAMILY_DESCRIPTION), total, reachable, [],
                      {c: why for c in total - reachable})


def run_reflife(the_plan: Plan, backends, stats: Stats, sink) -> Failure | None:
    """The ref-lifecycle family's programs against icefloe's API; a problem fails the run
    (P5 where a ref's creation raced, P9 where expiry dropped what a ref's retention keeps)."""
    plan_of = next((f for f in the_plan.families if f.family.name == reflife.FAMILY_NAME), None)
    if plan_of is None:
        return None
    wheres = tuple(sorted({c[0] for c in plan_of.reachable}, key=reflife.WHERES.index))
    covered, problems = reflife.judge(backends, wheres)
    stats.examples += 1
    if sink.coverage is not None:
        sink.coverage.covered[reflife.FAMILY_NAME].update(covered)
    if not problems:
        return None
    prop = "P9 CleanupSafe" if all(", retention," in p for p in problems) else "P5 ValidationSound"
    v = Violation(prop, "icefloe's table API (conformance.coverage.reflife): " + "; ".join(problems))
    v.at(0, ("RefLifecycle", problems[0].split(":")[0]))
    v.program = [("RefLifecycle", p.split(":")[0]) for p in problems]
    sink.failures_seen += 1
    return Failure(MEMORY, list(v.program), v, 0, 0, None, "api")


def judges_server(engine) -> bool:
    """Whether a run judges `icefloe serve` at the wire (conformance.rest.wire): for icefloe
    itself (the reference whose server it is: its variants too) and for every engine whose
    commits go through that server (a REST engine relies on its answers)."""
    return engine.capabilities.rest or engine.name.startswith("icefloe")


def _wire_plan() -> FamilyPlan:
    """The rest-wire family: the strict client's checks, every class reachable (no program
    of the model: the checks run against the server before the directed programs)."""
    total = wire.classes()
    return FamilyPlan(C.Family(wire.FAMILY_NAME, wire.FAMILY_DESCRIPTION), total, total, [])


def run_wire(the_plan: Plan, backends, stats: Stats, sink) -> Failure | None:
    """The rest-wire family's checks against the run's `icefloe serve`; a problem fails the
    run at once (P5 where a refused commit changed the table, else A0: the server's answer
    is not the REST spec's). Its program is the checks' names (no model program replays it)."""
    if not any(f.family.name == wire.FAMILY_NAME for f in the_plan.families):
        return None
    if sink.out_of_time():
        sink.cut = sink.cut or "the rest-wire checks and the directed programs"
        return None
    server = backends.rest()
    covered, problems = wire.judge(server.url, server.service)
    stats.examples += 1
    stats.backends[REST] += 1
    if sink.coverage is not None:
        sink.coverage.covered[wire.FAMILY_NAME].update(covered)
    if not problems:
        return None
    applied = any(getattr(p, "applied", False) for p in problems)
    v = Violation("P5 ValidationSound" if applied else AGREEMENT,
                  "icefloe serve at the wire (conformance.rest.wire): " + "; ".join(problems))
    v.at(0, ("Wire", problems[0].split(":")[0]))
    v.program = [("Wire", p.split(":")[0]) for p in problems]
    sink.failures_seen += 1
    return Failure(REST, list(v.program), v, 0, 0, None, "wire")


def _transport_plan(engine, caps, family, full, mine, model_faults, engine_faults) -> FamilyPlan:
    """The transport family: every transport fault at every phase it can hit, for the
    layers the engine's capabilities and stores allow (directed programs built from the
    faults family's, conformance.coverage.transport)."""
    layers = []
    if A.TRANSPORT_SQL in caps.transport and MEMORY in caps.stores:
        layers.append("sql")
    if A.TRANSPORT_S3 in caps.transport and S3 in caps.stores:
        layers.append("s3")
    total = frozenset(TC.transport_programs(model_faults, TC.transport_classes(full.kinds, ("sql", "s3"), full.faults)))
    programs = TC.transport_programs(engine_faults, TC.transport_classes(mine.kinds, tuple(layers), mine.faults))
    reachable = frozenset(programs) & total
    why_not = {c: ("transport " + c[0] + " not faultable" if c[0] not in layers else _why(c, caps))
               for c in total - reachable}
    return FamilyPlan(C.Family(TC.TRANSPORT, TC.TRANSPORT_DESCRIPTION), total, reachable,
                      [programs[c] for c in sorted(reachable, key=repr)], why_not)


def _rest_plan(engine_faults) -> FamilyPlan:
    """The rest family (conformance.rest.coverage): each commit fault kind and status at the
    REST commit endpoint, for an engine whose swap is a REST commit."""
    total = frozenset(rest_coverage.classes())
    programs = rest_coverage.programs(engine_faults)
    return FamilyPlan(rest_coverage.FAMILY, total, frozenset(programs) & total,
                      [programs[c] for c in sorted(programs, key=repr)],
                      {c: "no append reaches its commit here" for c in total - set(programs)},
                      {p: c for c, p in programs.items()})


def run(engine, the_plan: Plan, store: str, seed: int, backends, stats: Stats, sink) -> Failure | None:
    """Every directed program on the engine, in order; the first failure, shrunk."""
    tracker = sink.coverage
    failure = run_wire(the_plan, backends, stats, sink)     # impl/serve alone: first, a few seconds
    if failure is not None:
        return failure
    pairs = [(f, p) for f in the_plan.families for p in f.programs]
    # the races first (a handful of programs, each on the store it names), then the rest
    ordered = sorted(pairs, key=lambda fp: (fp[0].family.name != races.FAMILY.name,
                                            fp[1].store is not None and fp[1].store != store))
    shard = sink.extra.get("shard")
    if shard is not None:                   # --shard K/N: every N-th program from the K-th
        k, n = shard
        ordered = [fp for i, fp in enumerate(ordered) if i % n == k - 1]
    for i, (family, program) in enumerate(ordered):
        if sink.out_of_time():
            sink.cut = sink.cut or f"{len(ordered) - i} of {len(ordered)} directed programs"
            return None
        watch = [tracker.watch(program.bounds)] if tracker is not None else []
        race = races.Observer() if family.family.name == races.FAMILY.name else None
        if race is not None:
            watch.append(race)
        where = program.store or store
        stats.examples += 1
        stats.backends[where] += 1
        stats.writers = max(stats.writers, program.bounds.writers)  # as the random phase counts its examples
        try:
            lock = replay(engine, program.labels, bounds=program.bounds, store=where, seed=0, backends=backends,
                          stats=stats, observers=watch, ctx_seed=0, catalog=program.catalog, lenient=True)
            if lock.left is not None and program in family.targets:
                family.left[family.targets[program]] = lock.left
            if race is not None and tracker is not None and race.covered(program.cls):
                tracker.covered[races.FAMILY.name].add(program.cls)
        except AdapterError as e:               # its own verdict, with the program it happened in
            e.program = e.program if e.program is not None else list(program.labels)
            e.store = e.store or where
            raise
        except Violation as v:
            sink.failures_seen += 1
            failure = Failure(where, list(v.program or program.labels), v, 0, 0, program.bounds, "directed",
                              program.catalog)
            return shrink(engine, failure, backends)
        if sink.on_example is not None:
            sink.on_example(stats)
    # After the model's programs, so that a bug they find is named by them (a catalog's lost
    # commit, say, which the ref-lifecycle programs would meet first on SQLite).
    if sink.out_of_time():
        sink.cut = sink.cut or "the ref-lifecycle programs"
        return None
    return run_reflife(the_plan, backends, stats, sink)
