"""Conformance suite throughput: steps/s and examples/s of `icefloe conform` on its deep
profile, per store and per phase (the directed programs, conformance.coverage.directed; Hypothesis'
random search, conformance.suite.machine), with the verdict and the search's vacuity guard."""
from __future__ import annotations

import os
import time
from dataclasses import replace

from icefloe.conformance.engines import registry
from icefloe.conformance.coverage import directed
from icefloe.conformance.suite import machine
from icefloe.conformance.suite import run as suite
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.suite.profiles import MEMORY, PROFILES, S3
from icefloe.conformance.suite.runs import Sink
from icefloe.conformance.suite.stats import Stats

TITLE = "Conformance suite throughput: the deep profile (steps/s, examples/s)"
SEED = 0


def _phases(engine, profile, store: str) -> list:
    """[(phase, Stats of that phase, wall seconds, CPU seconds of this process, failure, vacuity)]."""
    stats, backends, sink = Stats(), Backends(), Sink()
    out = []
    try:
        if store == suite.directed_store(engine) and profile.directed:
            plan = directed.plan(engine, profile)
            started, cpu = time.monotonic(), time.process_time()
            failure = directed.run(engine, plan, store, SEED, backends, stats, sink)
            out.append(("directed programs", stats.copy(), time.monotonic() - started, time.process_time() - cpu,
                        failure, []))
        before = stats.copy()
        examples = dict(suite.search_plan(engine, profile, (store,))).get(store, 0)
        started, cpu = time.monotonic(), time.process_time()
        failure = machine.search(engine, profile, SEED, backends, store, examples, stats, sink)
        searched = stats.since(before)
        out.append(("random search", searched, time.monotonic() - started, time.process_time() - cpu, failure,
                    suite.vacuity(searched, engine, profile) if failure is None else []))
    finally:
        backends.close()
    return out


def run(quick: bool) -> str:
    profile = PROFILES["ci" if quick else "deep"]
    if quick:
        profile = replace(profile, examples_memory=10, examples_s3=2)
    engine = registry.load_engine("icefloe")
    rows = []
    for store in (MEMORY, S3):
        load0 = os.getloadavg()[0]
        for phase, stats, seconds, cpu, failure, vacuous in _phases(engine, profile, store):
            verdict = "every property holds" if failure is None else f"VIOLATED: {failure.violation.prop}"
            if vacuous:
                verdict += f"; VACUOUS: {'; '.join(vacuous[:3])}"
            rows.append(f"| icefloe | {store} | {phase} | {stats.examples} | {stats.steps} | {seconds:.1f} | "
                        f"{stats.steps / seconds:.1f} | {stats.steps / max(cpu, 1e-9):.1f} | {stats.examples / seconds:.2f} | "
                        f"{load0:.1f}-{os.getloadavg()[0]:.1f} | {verdict} |")
    return "\n".join([
        f"Profile `{profile.name}`: {profile.writers} writers x {profile.ops} operations, up to "
        f"{profile.steps} steps per program, fault budget {profile.fault_budget}, "
        f"{profile.attempts_max} attempts per commit; seed {SEED}. Each step is applied to the model and "
        "to the engine and compared, including a read of the current rows; each program ends with the",
        "liveness phase, the history checker and reads of every retained snapshot. The directed programs",
        "(every transition class of the model, conformance/coverage/families.py) run on the in-memory store before",
        "the random search; their plan comes from the disk cache (conformance/coverage/cache.py). The S3 rows",
        "use moto on 127.0.0.1 (SQLite and S3 catalogs alternating). The random search's vacuity guard",
        "(every rule, fault kind and resolution drawn by the search itself) is checked. Hypothesis'",
        "shrinking is not included (no failure). There is no peer here: the suite's cost per step is the",
        "harness's, not a commit path's. The machine is shared: the load average is given per store, and",
        "steps per CPU second (this process's CPU time: the harness, the model and icefloe; on S3 the",
        "in-process moto server's too) is the figure a busy machine changes least.",
        "",
        "| engine | store | phase | examples | steps | wall s | steps/s | steps/CPU s | examples/s | load (start-end) | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
    ])
