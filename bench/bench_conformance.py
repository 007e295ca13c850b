"""Conformance suite throughput: steps/s and examples/s of `icefloe conform` on its profiles
(icefloe.conformance.machine), per store, with the run's verdict."""
from __future__ import annotations

import time
from dataclasses import replace

from icefloe.conformance import adapter as A, suite
from icefloe.conformance.backends import Backends
from icefloe.conformance.profiles import MEMORY, PROFILES, S3
from icefloe.conformance.runs import Sink
from icefloe.conformance.stats import Stats

TITLE = "Conformance suite throughput: the deep profile (steps/s, examples/s)"
SEED = 0


def _measure(engine, profile, store: str):
    stats, backends, sink = Stats(), Backends(), Sink()
    started = time.monotonic()
    try:
        failure = suite.run(engine, profile, SEED, backends, stats, sink, stores=(store,))
    finally:
        backends.close()
    return stats, time.monotonic() - started, failure


def run(quick: bool) -> str:
    profile = PROFILES["ci" if quick else "deep"]
    if quick:
        profile = replace(profile, examples_memory=10, examples_s3=2)
    engine = A.load_engine("icefloe")
    rows = []
    for store in (MEMORY, S3):
        stats, seconds, failure = _measure(engine, profile, store)
        verdict = "every property holds" if failure is None else f"VIOLATED: {failure.violation.prop}"
        rows.append(f"| icefloe | {store} | {stats.examples} | {stats.steps} | {seconds:.1f} | "
                    f"{stats.steps / seconds:.1f} | {stats.examples / seconds:.2f} | {verdict} |")
    return "\n".join([
        f"Profile `{profile.name}`: {profile.writers} writers x {profile.ops} operations, up to "
        f"{profile.steps} steps per program, fault budget {profile.fault_budget}, "
        f"{profile.attempts_max} attempts per commit; seed {SEED}. Each step is applied to the model and "
        "to the engine and compared, including a read of the current rows; each program ends with the",
        "liveness phase and the history checker. The S3 rows use moto on 127.0.0.1 (SQLite and S3",
        "catalogs alternating). Hypothesis' shrinking is not included (no failure). There is no",
        "peer here: the suite's cost per step is the harness's, not a commit path's.",
        "",
        "| engine | store | examples | steps | seconds | steps/s | examples/s | verdict |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
    ])
