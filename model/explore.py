"""Exhaustive breadth-first explorer of the commit protocol (spec/PROTOCOL.md).

    python -m icefloe.model.explore --writers 3 --ops 2
    python -m icefloe.model.explore --variant no-revalidate
    python -m icefloe.model.explore --list-variants

Every interleaving of the writers' phases, faults and maintenance within the bounds
below is explored; every property of spec/PROPERTIES.md is checked in every
reachable state (L1/L2 in every final state). Visited states are kept as 64-bit
fingerprints with a parent pointer each, so millions fit in memory; a violation is
reported with the shortest counterexample (breadth-first), replayed from the
initial state as a numbered trace.

Exit codes: 0 every property holds; 1 a property is violated (named in the output);
2 usage or setup error, or the --max-states budget ran out (verdict unknown).
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from contextlib import contextmanager

from icefloe.model import variants
from icefloe.model.search import (  # noqa: F401 - Result, replay and the bound are re-exported
    Result, _expand, _Level, collision_bound, replay, safety_checker,
)
from icefloe.model.state import FAULT_KINDS, OP_KINDS
from icefloe.model.v3 import V3_KINDS

EXIT_HOLDS, EXIT_VIOLATED, EXIT_USAGE = 0, 1, 2


def explore(spec, max_states: int | None = None, collect: bool = False,
            progress=None, exact: bool = False, workers: int = 1) -> Result:
    """Breadth-first search of every state reachable from spec.initial().

    States are de-duplicated by 64-bit fingerprint (`hash`), with the collision bound
    reported (`Result.collision_bound`), or exactly (`exact=True`: the states themselves
    are the keys; more memory). `workers` > 1 splits every level between forked
    processes, each owning the states whose fingerprint falls in its share
    (model/explore_parallel.py); it needs neither `collect` nor `exact`."""
    if workers > 1:
        if collect or exact:
            raise ValueError("a parallel search neither collects states nor de-duplicates exactly")
        from icefloe.model.explore_parallel import explore_parallel
        return explore_parallel(spec, workers, max_states, progress)
    t0 = time.monotonic()
    res = Result(spec.name, "holds")
    check_safety = safety_checker(spec)
    key_of = (lambda s: s) if exact else hash
    parents: dict = {}
    reachable = [] if collect else None
    frontier = []
    violation = None
    for s0 in spec.initial():
        k = key_of(s0)
        if k in parents:
            continue
        parents[k] = (None, None)
        frontier.append((k, s0))
        if collect:
            reachable.append(s0)
        why = check_safety(s0)
        if why:
            violation = (why, k)
            break
    event_actions = getattr(spec, "EVENT_ACTIONS", None)
    next_frontier: list = []
    labels: dict = {}       # one object per distinct label: millions of parent pointers share them

    def on_new(key, parent_key, label, state) -> bool:
        parents[key] = (parent_key, labels.setdefault(label, label))
        next_frontier.append((key, state))
        if collect:
            reachable.append(state)
        return True

    depth = 0
    while frontier and violation is None:
        next_frontier = []
        level = _Level()
        _expand(spec, frontier, key_of, lambda k, _: k not in parents, on_new, check_safety, spec.terminal,
                event_actions, level)
        res.transitions += level.transitions
        res.final_states += level.final_states
        res.coverage.update(level.coverage)
        res.events.update(level.events)
        violation = level.violation
        if violation is None and max_states is not None and len(parents) > max_states:
            res.verdict = "unknown"
            res.message = f"stopped after {max_states} states (--max-states)"
            break
        if next_frontier and violation is None:
            depth += 1
        frontier = next_frontier
        if progress:
            progress(depth, len(parents), len(frontier), time.monotonic() - t0)
    res.states, res.depth, res.seconds = len(parents), depth, time.monotonic() - t0
    res.exact, res.collision_bound = exact, 0.0 if exact else collision_bound(res.states)
    res.reachable = reachable
    if violation is not None:
        (res.property, res.message), k = violation
        res.verdict = "violated"
        res.trace = replay(spec, lambda key: parents[key], k, key_of)
        res.depth = len(res.trace) - 1
    return res


def format_label(label: tuple) -> str:
    name, who, *rest = label
    actor = f"w{who}" if who else "environment"
    return f"{name}({actor}{', ' + ', '.join(map(str, rest)) if rest else ''})"


def report(res: Result, spec, out=None) -> None:
    out = out or sys.stdout
    p = lambda *a: print(*a, file=out)  # noqa: E731
    b = spec.bounds
    p(f"spec: {spec.name}")
    p(f"bounds: {b}")
    p(f"states: {res.states}  transitions: {res.transitions}  depth: {res.depth}  "
      f"final states: {res.final_states}  time: {res.seconds:.1f} s"
      f"  ({res.states / max(res.seconds, 1e-9):,.0f} states/s, {res.workers} process"
      f"{'es' if res.workers > 1 else ''})")
    p("de-duplication: " + ("exact (the states themselves)" if res.exact else
                            f"64-bit fingerprints; P(two states merged) <= {res.collision_bound:.1e}"))
    p("coverage (transitions per action):")
    for name, n in sorted(res.coverage.items()):
        p(f"  {name:<16} {n:>10}")
    if res.events:
        p("events:")
        for name, n in sorted(res.events.items()):
            p(f"  {name:<36} {n:>10}")
    if res.verdict == "holds":
        props = list(spec.safety) + list(spec.terminal)
        p(f"verdict: all {len(props)} properties hold: {', '.join(props)}")
    elif res.verdict == "unknown":
        p(f"verdict: unknown: {res.message}")
    else:
        p(f"VIOLATION of {res.property}: {res.message}")
        p(f"shortest counterexample ({len(res.trace) - 1} steps):")
        for i, (label, state) in enumerate(res.trace):
            head = "initial" if label is None else format_label(label)
            p(f"  {i:>3}. {head}")
            p(f"       {spec.describe(state)}")


def _csv(text: str, allowed: tuple, what: str) -> tuple:
    if text in ("", "none"):
        return ()
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [x for x in items if x not in allowed]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown {what} {bad}; choose from {', '.join(allowed)}")
    return items


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m icefloe.model.explore",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "Bounds: the state space is finite because every one of these is bounded:\n"
            "  writers (--writers), operations per writer (--ops), operation kinds\n"
            "  (--kinds), attempts per operation (--attempts = commit.retry.num-retries+1),\n"
            "  faults allowed (--faults) and how many in all (--fault-budget),\n"
            "  orphan-removal runs (--orphan-runs; --orphan-age: by age, also while writers\n"
            "  work), partitions (--partitions), refs (--refs).\n"
            "  The table starts with two snapshots.\n"
            "Faults: write_fail (a storage write fails), swap_fail (the swap is rejected\n"
            "  before any effect), ack_lost (the swap applies, its acknowledgement is lost),\n"
            "  swap_delayed (the request is in flight and lands later or never), crash\n"
            "  (a writer dies between two phases). After the budget is spent, faults stop.\n"
            "Exit codes: 0 all properties hold, 1 a property is violated, 2 usage/setup\n"
            "  error or the --max-states budget ran out."))
    ap.add_argument("--writers", type=int, default=None, help="concurrent writers (default 2)")
    ap.add_argument("--ops", type=int, default=None, help="operations per writer (default 1)")
    ap.add_argument("--kinds", default=None,
                    help=f"operation kinds, comma-separated (default: the six of one partition without"
                         f" deletes or refs; all: {','.join(OP_KINDS)})")
    ap.add_argument("--faults", default=None,
                    help=f"fault kinds allowed, comma-separated or 'none' (default all: {','.join(FAULT_KINDS)})")
    ap.add_argument("--fault-budget", type=int, default=None, help="faults in all (default 1)")
    ap.add_argument("--attempts", type=int, default=None, help="attempts per operation (default 2)")
    ap.add_argument("--isolation", choices=("serializable", "snapshot"), default=None)
    ap.add_argument("--orphan-runs", type=int, default=None, help="orphan-removal runs (default 0)")
    ap.add_argument("--orphan-age", action="store_true",
                    help="AgeFiles while quiet; orphan removal may then run while writers work, deleting "
                         "only files older than the threshold (spec 12.3)")
    ap.add_argument("--partitions", type=int, choices=(1, 2), default=None,
                    help="partitions of the table (default 1); partition-scoped kinds pick one")
    ap.add_argument("--refs", action="store_true",
                    help="branch b and tag t: appends may commit to the branch; kinds tag, fast_forward")
    ap.add_argument("--workload", choices=("any", "round-robin"), default=None,
                    help="any: every operation picks any kind (default below 3 writers x 2 ops);"
                         " round-robin: a fixed kind per operation (default from 6 operations on)")
    ap.add_argument("--no-por", action="store_true",
                    help="explore every interleaving of private write steps too (no partial-order reduction)")
    ap.add_argument("--roles", default=None,
                    help=f"format v3 model (--variant v3-*): one operation kind per writer, comma-separated"
                         f" ({','.join(V3_KINDS)})")
    ap.add_argument("--dv-policy", choices=("conflict", "merge"), default=None,
                    help="format v3 model: what a writer does with a DV added concurrently for its file")
    ap.add_argument("--data-files", type=int, choices=(1, 2), default=None,
                    help="format v3 model: data files of the initial table")
    ap.add_argument("--position-deletes", type=int, choices=(1, 2), default=None,
                    help="format v3 model: the table was upgraded from v2 with this many position delete files "
                         "on its data file (spec/PROTOCOL.md 19.8)")
    ap.add_argument("--variant", default="correct", help="a protocol variant (see --list-variants)")
    ap.add_argument("--list-variants", action="store_true", help="print the variants' names, one per line")
    ap.add_argument("--all-variants", action="store_true",
                    help="run every flawed variant on its own bounds; exit 0 iff each is caught")
    ap.add_argument("--max-states", type=int, default=None, help="give up (exit 2) past this many states")
    ap.add_argument("--workers", type=int, default=None,
                    help="processes sharing the search (default: one per core; 1: no fork)")
    ap.add_argument("--exact", action="store_true",
                    help="de-duplicate by the states themselves, not 64-bit fingerprints (one process, more memory)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    return ap


def overrides_from(args) -> dict:
    kw = {}
    if args.writers is not None:
        kw["writers"] = args.writers
    if args.ops is not None:
        kw["ops"] = args.ops
    if args.kinds is not None:
        kw["kinds"] = _csv(args.kinds, OP_KINDS, "operation kinds")
    if args.faults is not None:
        kw["faults"] = _csv(args.faults, FAULT_KINDS, "fault kinds")
    if args.fault_budget is not None:
        kw["fault_budget"] = args.fault_budget
    if args.attempts is not None:
        kw["attempts_max"] = args.attempts
    if args.isolation is not None:
        kw["isolation"] = args.isolation
    if args.orphan_runs is not None:
        kw["orphan_runs"] = args.orphan_runs
    if args.orphan_age:
        kw["orphan_age"] = True
    if args.partitions is not None:
        kw["partitions"] = args.partitions
    if args.refs:
        kw["refs"] = True
    if args.roles is not None:
        kw["roles"] = _csv(args.roles, V3_KINDS, "v3 operation kinds")
    if args.dv_policy is not None:
        kw["dv_policy"] = args.dv_policy
    if args.data_files is not None:
        kw["data_files"] = args.data_files
    if args.position_deletes is not None:
        kw["position_deletes"] = args.position_deletes
    kw["por"] = not args.no_por
    if args.workload is not None:
        kw["workload"] = args.workload
    elif (args.writers or 2) * (args.ops or 1) >= 6:
        kw["workload"] = "round-robin"
    return kw


def run_all_variants(max_states, as_json) -> int:
    failures = 0
    for name, v in variants.VARIANTS.items():
        if not v.breaks:
            continue
        spec = v.make()
        res = explore(spec, max_states=max_states)
        ok = res.verdict == "violated" and res.property in v.breaks
        failures += not ok
        print(f"{'caught' if ok else 'NOT CAUGHT'}: {name}: {res.property or res.verdict}"
              f" in {len(res.trace) - 1 if res.trace else '-'} steps ({res.states} states)")
    return EXIT_HOLDS if failures == 0 else EXIT_VIOLATED


@contextmanager
def _gc_paused_for_this_command():
    """The command owns its process: the search builds millions of immutable, acyclic
    tuples, which the cyclic garbage collector would re-scan (half the search's time,
    measured) and could never free. The collector is restored afterwards. The library
    function `explore` never touches it; forked workers pause it in their own process."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def main(argv=None) -> int:
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
        if args.list_variants:
            for name in variants.VARIANTS:
                print(name)
            return EXIT_HOLDS
        if args.all_variants:
            return run_all_variants(args.max_states, args.json)
        v = variants.get(args.variant)
        spec = v.make(**overrides_from(args))
    except (argparse.ArgumentTypeError, KeyError, AssertionError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    progress = None if args.json else (
        lambda d, n, f, t: print(f"  depth {d:>3}: {n:>10,} states, frontier {f:>9,}, {t:7.1f} s",
                                 file=sys.stderr, flush=True))
    if args.workers is not None and args.workers < 1:
        print("error: --workers must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    from icefloe.model.explore_parallel import default_workers
    workers = 1 if args.exact else (args.workers or default_workers())
    with _gc_paused_for_this_command():
        res = explore(spec, max_states=args.max_states, progress=progress, exact=args.exact, workers=workers)
    if args.json:
        print(json.dumps(res.to_json(), indent=2))
    else:
        report(res, spec)
    return {"holds": EXIT_HOLDS, "violated": EXIT_VIOLATED}.get(res.verdict, EXIT_USAGE)


if __name__ == "__main__":
    sys.exit(main())
