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
    from icefloe.conformance import report as R, suite
    from icefloe.conformance.profiles import MEMORY, PROFILES, S3

    profile = PROFILES[args.profile]
    caps = engine.capabilities
    total = (profile.examples_memory if caps.mode == A.STEPPING and MEMORY in caps.stores else 0) + \
        (profile.examples_s3 if S3 in caps.stores else 0)
    progress = Progress(total, not args.no_progress and sys.stderr.isatty())
    print(f"icefloe conform: engine {engine.name}{' (variant ' + args.variant + ')' if args.variant else ''}, "
          f"profile {profile.name}, seed {args.seed}; interleaving {caps.interleaving}")
    try:
        result = suite.run_suite(engine, args.engine if not args.variant else "icefloe", profile, args.seed,
                                 args.variant, on_example=progress)
    except A.EngineSpecError as e:
        progress.end()
        print(f"icefloe conform: setup error: {e}", file=sys.stderr)
        return EXIT_USAGE
    progress.end()
    print(R.report_text(result))
    where = R.write_report(result, args.report)
    failure = result.failure
    print(f"report: {where}/ (verdict.json, report.md{', program.py' if failure else ''}"
          f"{', versions.dot, versions.png' if result.history is not None else ''})")
    if failure is not None:
        print(f"VIOLATED: {', '.join(result.violated)}")
        return EXIT_VIOLATION
    if result.vacuity:
        print(f"VACUOUS: {'; '.join(result.vacuity)}")
        return EXIT_VIOLATION
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
