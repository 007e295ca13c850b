"""`icefloe conform`: the conformance suite against one engine (the main job; issue 5).

    icefloe conform [--engine module:factory|pyiceberg] [--variant NAME] [--list-variants]
                    [--profile ci|deep] [--seed N] [--report DIR]

Default: icefloe's own engine, on the in-memory store for most examples and on moto S3
(started here, on 127.0.0.1) with SQLite or the S3 catalog for the rest. Prints a
progress bar, the summary table (property x verdict, with the counts) and writes the
report directory (verdict.json always; report.md, the version graph; for a failure the
replayable program.py). Exit 0: every property holds and the run was not vacuous;
1: a property is violated (named) or the run proved too little; 2: usage or setup error.
"""
from __future__ import annotations

import argparse
import sys
import time

from icefloe.conformance import adapter as A

REPORT_DIR_DEFAULT = "reports/conform"
EXIT_OK, EXIT_VIOLATION, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def parse(argv) -> argparse.Namespace:
    p = _Parser(prog="icefloe conform", description="Run the conformance suite against an engine.")
    p.add_argument("--engine", default=A.DEFAULT_ENGINE,
                   help="module:factory, or a shortcut: " + ", ".join(sorted(A.ENGINE_SHORTCUTS)))
    p.add_argument("--variant", help="a flawed variant (negative control) instead of --engine")
    p.add_argument("--list-variants", action="store_true", help="print the variants' names and exit")
    p.add_argument("--profile", default="ci", choices=("ci", "deep"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--report", default=REPORT_DIR_DEFAULT, help=f"report directory (default {REPORT_DIR_DEFAULT})")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p.parse_args(argv)


def vacuity(stats, engine, expected_rules, bounds) -> list:
    """Why the run proved too little (the ci profile fails on any of these)."""
    out = []
    if stats.retries == 0:
        out.append("no commit retried after a conflict")
    for kind in bounds.faults:
        if stats.faults.get(kind, 0) == 0:
            out.append(f"no {kind} fault injected")
    if {A.ACK_LOST, A.SWAP_DELAYED} & set(bounds.faults):
        if stats.unknown_resolved_committed == 0:
            out.append("no unknown outcome resolved as committed")
        if stats.unknown_resolved_not_committed == 0:
            out.append("no unknown outcome resolved as not committed")
    for name in expected_rules:
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
    return tuple(out)


class Progress:
    WIDTH = 30

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.start = max(total, 1), enabled, time.monotonic()

    def __call__(self, stats):
        if not self.enabled:
            return
        done = min(stats.examples, self.total)
        bar = "#" * (self.WIDTH * done // self.total)
        rate = stats.steps / max(time.monotonic() - self.start, 1e-9)
        sys.stderr.write(f"\r[{bar:<{self.WIDTH}}] {done}/{self.total} examples, {stats.steps} steps "
                         f"({rate:.0f} steps/s)")
        sys.stderr.flush()

    def end(self):
        if self.enabled:
            sys.stderr.write("\n")


def replay_history(engine, failure, profile, backends):
    """Replay the shrunk program to record the engine's history at the failure."""
    from icefloe.conformance import machine as M
    from icefloe.conformance.stats import Stats
    from icefloe.conformance.violation import InvalidProgram, Violation
    from icefloe.model.checks import history as H
    lock = M.new_lockstep(engine, backends, failure.store, profile, failure.seed, Stats(), failure.ctx_seed)
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
            v.properties = set(getattr(v, "properties", {v.prop})) | {"P8 NoDanglingRefs"}
            v.message += f" (and the engine's metadata chain cannot be read: {type(e).__name__})"
            return None, None
        return h, H.check_history(h, engine.capabilities.isolation)
    finally:
        lock.close()


def name_anomalies(failure, verdict) -> None:
    """Add the properties the history checker finds broken at the failure to those the
    failing step named (an A0 divergence is often a P2 lost commit, say, underneath)."""
    from icefloe.conformance.histories import ANOMALY_PROPERTY
    from icefloe.conformance.violation import AGREEMENT
    if verdict is None or not verdict.anomalies:
        return
    v = failure.violation
    v.properties = set(getattr(v, "properties", {v.prop})) | {
        ANOMALY_PROPERTY.get(a.name, AGREEMENT) for a in verdict.anomalies}


def main(argv=None) -> int:
    try:
        args = parse(list(sys.argv[1:] if argv is None else argv))
    except UsageError as e:
        print(f"icefloe conform: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.list_variants:
        for name in A.variant_names():
            print(name)
        return EXIT_OK
    try:
        engine = A.load_variant(args.variant) if args.variant else A.load_engine(args.engine)
    except A.EngineSpecError as e:
        print(f"icefloe conform: {e}", file=sys.stderr)
        return EXIT_USAGE
    return run(engine, args)


def run(engine, args) -> int:
    from icefloe.conformance import machine as M, report as R
    from icefloe.conformance.stats import Stats

    profile = M.PROFILES[args.profile]
    stats, backends = Stats(), M.Backends()
    caps = engine.capabilities
    total = (profile.examples_memory if caps.mode == A.STEPPING and M.MEMORY in caps.stores else 0) + \
        (profile.examples_s3 if M.S3 in caps.stores else 0)
    progress = Progress(total, not args.no_progress and sys.stderr.isatty())
    sink = M.Sink(on_example=progress)
    started = time.monotonic()
    print(f"icefloe conform: engine {engine.name}{' (variant ' + args.variant + ')' if args.variant else ''}, "
          f"profile {profile.name}, seed {args.seed}; interleaving {caps.interleaving}")
    try:
        failure = M.run(engine, profile, args.seed, backends, stats, sink)
        history = verdict = None
        if failure is not None:
            history, verdict = replay_history(engine, failure, profile, backends)
            name_anomalies(failure, verdict)
        elif "history" in sink.extra:
            history, verdict = sink.extra["history"]
    except A.EngineSpecError as e:
        progress.end()
        print(f"icefloe conform: setup error: {e}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        backends.close()
    progress.end()
    bounds = M.bounds_for(engine, profile)
    expected = M.expected_rules(engine, profile)
    result = R.RunResult(
        engine=args.engine if not args.variant else "icefloe", engine_name=engine.name, variant=args.variant,
        profile=profile.name, seed=args.seed, stats=stats, interleaving=caps.interleaving,
        expected_rules=expected, failure=failure,
        vacuity=vacuity(stats, engine, expected, bounds) if failure is None and profile.name == "ci" else [],
        history=history, history_verdict=verdict, elapsed_s=time.monotonic() - started,
        unchecked=unchecked(engine), commit=R.git_commit())
    print(R.report_text(result))
    where = R.write_report(result, args.report)
    print(f"report: {where}/ (verdict.json, report.md{', program.py' if failure else ''}"
          f"{', versions.dot, versions.png' if history is not None else ''})")
    if failure is not None:
        print(f"VIOLATED: {', '.join(result.violated)}")
        return EXIT_VIOLATION
    if result.vacuity:
        print(f"VACUOUS: {'; '.join(result.vacuity)}")
        return EXIT_VIOLATION
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
