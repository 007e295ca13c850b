"""`icefloe conform`: the conformance suite against one engine (the main job; issue 5).

    icefloe conform [--engine module:factory|pyiceberg] [--variant NAME] [--list-variants]
                    [--profile ci|deep] [--seed N] [--report DIR] [--time-budget SECONDS]
                    [--shard K/N]
    icefloe conform merge [--report DIR] SHARD_REPORT_DIR...

Default: icefloe's own engine, on the in-memory store for most examples and on moto S3
(started here, on 127.0.0.1) with SQLite or the S3 catalog for the rest. Prints a line
per phase (and on a terminal a progress bar), the summary table (property x verdict,
with the counts), writes the report directory (report.html, report.md, verdict.json,
the version graph; for a failure the replayable program.py) and ends on one line:
`OK: ...` or `FAILED: ...`. Exit 0: every property holds and the run was not vacuous;
1: a property is violated (named) or the run proved too little (it was vacuous, or the
profile's time budget cut it short: ci 1500 s, deep 4 h), or the adapter raised where its
contract says it returns (verdict "adapter error", its traceback in the report); 2: usage or
setup error.

`--shard K/N` runs every N-th directed program from the K-th (the random search in shard N
only) and writes the classes it covered into verdict.json; a shard's exit code judges its own
programs. `icefloe conform merge` joins the N shards' report directories into one verdict:
the same coverage and the same exit code as the run unsharded (report/merge.py).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import registry

REPORT_DIR_DEFAULT = "reports/conform"
EXIT_OK, EXIT_VIOLATION, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def parse(argv) -> argparse.Namespace:
    p = _Parser(prog="icefloe conform", description="Run the conformance suite against an engine.")
    p.add_argument("--engine", default=registry.DEFAULT_ENGINE,
                   help="module:factory, or a shortcut: " + ", ".join(sorted(registry.ENGINE_SHORTCUTS)))
    p.add_argument("--variant", help="a flawed variant (negative control) instead of --engine")
    p.add_argument("--list-variants", action="store_true", help="print the variants' names and exit")
    p.add_argument("--profile", default="ci", choices=("ci", "ci-slow", "deep"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--report", default=REPORT_DIR_DEFAULT, help=f"report directory (default {REPORT_DIR_DEFAULT})")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--shard", type=shard_arg, metavar="K/N",
                   help="run the K-th of N shares of the directed programs (the random search in the last); "
                        "join the shards' reports with `icefloe conform merge`")
    p.add_argument("--time-budget", type=float, metavar="SECONDS",
                   help="wall-clock budget of the run (default: the profile's; 0: none); a run it cuts "
                        "short is reported so (exit 1), never as a pass")
    return p.parse_args(argv)


def shard_arg(text: str) -> tuple:
    k, sep, n = text.partition("/")
    if not sep or not k.isdigit() or not n.isdigit() or not 1 <= int(k) <= int(n):
        raise argparse.ArgumentTypeError(f"--shard wants K/N with 1 <= K <= N, not {text!r}")
    return int(k), int(n)


class Progress:
    """Where the run is: a line per phase (directed programs, then the random search on each
    store) and, on a terminal, a bar over every example of the run. The total counts the
    directed programs too, so the bar never sits at a full count while work remains."""
    WIDTH = 30

    def __init__(self, phases: list, bar: bool, out=None):
        self.phases = [(name, n) for name, n in phases if n > 0]
        self.total = max(sum(n for _, n in self.phases), 1)
        self.bar, self.out = bar, out or sys.stderr
        self.start, self.phase = time.monotonic(), -1

    def _phase_of(self, done: int) -> int:
        seen = 0
        for i, (_, n) in enumerate(self.phases):
            seen += n
            if done <= seen:
                return i
        return len(self.phases) - 1

    def __call__(self, stats):
        done = min(stats.examples, self.total)
        phase = self._phase_of(max(done, 1))
        if phase != self.phase and self.phases:
            self.phase = phase
            name, n = self.phases[phase]
            self._clear()
            print(f"phase {phase + 1}/{len(self.phases)}: {name}: {n} example(s)", file=sys.stdout, flush=True)
        if not self.bar:
            return
        bar = "#" * (self.WIDTH * done // self.total)
        rate = stats.steps / max(time.monotonic() - self.start, 1e-9)
        self.out.write(f"\r[{bar:<{self.WIDTH}}] {done}/{self.total} examples, {stats.steps} steps "
                       f"({rate:.0f} steps/s)")
        self.out.flush()

    def _clear(self):
        if self.bar:
            self.out.write("\r\033[K")
            self.out.flush()

    def end(self):
        self._clear()


def phases(engine, profile, the_plan, shard=None) -> list:
    """[(phase name, examples)] in the order the suite runs them (suite.run)."""
    from icefloe.conformance.suite import run as suite
    k, n = shard or (1, 1)
    out = []
    if the_plan is not None:
        out.append(("directed programs (every transition class of the model)"
                    + (f", shard {k}/{n}" if shard else ""), len(the_plan.programs[k - 1::n])))
    if k == n:
        out += [(f"random search on the {store} store", x) for store, x in suite.search_plan(engine, profile)]
    return out


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["merge"]:
        from icefloe.conformance.report import merge
        return merge.main(argv[1:])
    try:
        args = parse(argv)
    except UsageError as e:
        print(f"icefloe conform: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.list_variants:
        for name in registry.variant_names():
            print(name)
        return EXIT_OK
    try:
        engine = registry.load_variant(args.variant) if args.variant else registry.load_engine(args.engine)
    except A.EngineSpecError as e:
        print(f"icefloe conform: {e}", file=sys.stderr)
        return EXIT_USAGE
    return run(engine, args)


def run(engine, args) -> int:
    from icefloe.conformance.report import result as R
    from icefloe.conformance.report.write import write_report
    from icefloe.conformance.suite import run as suite
    from icefloe.conformance.suite.profiles import PROFILES

    profile = PROFILES[args.profile]
    if args.time_budget is not None:
        if args.time_budget < 0:
            print("icefloe conform: --time-budget must be 0 (none) or a number of seconds", file=sys.stderr)
            return EXIT_USAGE
        profile = replace(profile, seconds_max=args.time_budget or None)
    caps = engine.capabilities
    print(f"icefloe conform: engine {engine.name}{' (variant ' + args.variant + ')' if args.variant else ''}, "
          f"profile {profile.name}, seed {args.seed}; interleaving {caps.interleaving}", flush=True)
    the_plan = None
    if profile.directed:
        from icefloe.conformance.coverage import directed
        print("planning: a shortest program to every transition class of the model", flush=True)
        the_plan = directed.plan(engine, profile)
    progress = Progress(phases(engine, profile, the_plan, args.shard), not args.no_progress and sys.stderr.isatty())
    try:
        result = suite.run_suite(engine, args.engine if not args.variant else "icefloe", profile, args.seed,
                                 args.variant, on_example=progress, plan=the_plan, shard=args.shard)
    except A.EngineSpecError as e:
        progress.end()
        print(f"icefloe conform: setup error: {e}", file=sys.stderr)
        print(f"FAILED: setup error: {e}")
        return EXIT_USAGE
    progress.end()
    print(R.report_text(result))
    where = write_report(result, args.report)
    failure = result.failure
    print(f"report: {where}/ (report.html, report.md, verdict.json{', program.py' if failure else ''}"
          f"{', versions.dot, versions.png' if result.history is not None else ''})")
    print(result.overall_line())
    if args.shard is not None:
        print(f"shard {args.shard[0]}/{args.shard[1]}: its coverage is judged with the other shards' by "
              f"`icefloe conform merge`")
    return EXIT_OK if result.passed else EXIT_VIOLATION


if __name__ == "__main__":
    sys.exit(main())
