"""Which shrinker for the random search: time to a minimal counterexample on every flawed
variant, Hypothesis' own shrinking against delta debugging over the program's steps
(conformance.runs.shrink), from the same seeds. Prints a Markdown table for
docs/conformance.md ("Shrinking").

    .venv/bin/python bench/bench_shrink.py [--seeds 0,1,2]

Both ways search with the directed phase off (it would find every variant first) and the
memory store only; "steps" is the length of the counterexample reported (as run up to the
failing step, liveness steps included).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace

from hypothesis import Phase

from icefloe.conformance.suite import machine
from icefloe.conformance.suite import runs
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.engines.flawed import VARIANTS
from icefloe.conformance.suite.profiles import MEMORY, PROFILES
from icefloe.conformance.suite.stats import Stats

PROFILE = replace(PROFILES["ci"], name="ci-search-only", directed=False, examples_s3=0)


def _once(name: str, seed: int, hypothesis_shrinks: bool) -> tuple[float, int, str] | None:
    settings_of = machine.hypothesis_settings
    if not hypothesis_shrinks:
        machine.hypothesis_settings = lambda e, s: settings_of(e, s).__class__(
            settings_of(e, s), phases=(Phase.explicit, Phase.generate))
    backends = Backends()
    started = time.monotonic()
    try:
        sink = runs.Sink()
        failure = machine.search(VARIANTS[name](), PROFILE, seed, backends, MEMORY, PROFILE.examples_memory,
                                 Stats(), sink)
        if failure is None:
            return None
        if not hypothesis_shrinks:
            failure = runs.shrink(VARIANTS[name](), failure, backends)
        return time.monotonic() - started, len(failure.program), failure.violation.prop
    finally:
        machine.hypothesis_settings = settings_of
        backends.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2")
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("| variant | Hypothesis: seconds (median) | steps (median) | delta debugging: seconds | steps | found |")
    print("|---|---|---|---|---|---|")
    for name in sorted(VARIANTS):
        rows = {True: [], False: []}
        for seed in seeds:
            for way in (True, False):
                got = _once(name, seed, way)
                if got is not None:
                    rows[way].append(got)
        found = f"{len(rows[True])}/{len(seeds)}, {len(rows[False])}/{len(seeds)}"

        def med(way, i):
            return f"{statistics.median(r[i] for r in rows[way]):.1f}" if rows[way] else "-"
        print(f"| {name} | {med(True, 0)} | {med(True, 1)} | {med(False, 0)} | {med(False, 1)} | {found} |",
              flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
