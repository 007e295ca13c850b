"""Conformance suite throughput on the ci profile: `icefloe conform --profile ci --seed 0` on
icefloe itself (the default engine), the whole run and each phase, in steps per second and
steps per CPU second, with the plan's cost from a cold and from a warm cache.

The run is the command's own sequence (conform.run: the plan, suite.run_suite, the report),
in this process. Its phases are timed from outside, by wrapping for the run's duration the
functions each phase goes through (the rest-wire checks, each directed program's replay
attributed to its family, the ref-lifecycle programs, the v3 phase, the random search per
store); nothing in the suite changes for the measurement.

    python bench/bench_conform_ci.py [--quick]       prints the section (bench/run.py writes it)
"""
from __future__ import annotations

import gc
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

TITLE = "Conformance suite throughput: `icefloe conform --profile ci` (steps/s, steps/CPU s)"
SEED = 0
# Families reported on a row of their own (the phases); the model's other directed
# families (faults, transport, unknowns, ...) share the row "directed programs".
OWN_ROWS = ("races", "pairs")
ORDER = ("plan", "rest-wire", "directed programs", "races", "pairs", "ref-lifecycle", "v3",
         "random search, memory", "random search, s3", "report")


def _cpu() -> float:
    """CPU seconds of this process (every thread: the suite, icefloe, moto, the REST server)
    and of its waited-for children."""
    own = time.process_time()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own + kids.ru_utime + kids.ru_stime


class Meter:
    """Wall and CPU seconds, steps and examples per phase, summed over the phase's calls."""

    def __init__(self, stats):
        self.stats = stats
        self.rows: dict = {}

    @contextmanager
    def phase(self, name: str):
        wall, cpu = time.monotonic(), _cpu()
        steps, examples = (self.stats.steps, self.stats.examples) if self.stats is not None else (0, 0)
        try:
            yield
        finally:
            row = self.rows.setdefault(name, [0.0, 0.0, 0, 0])
            row[0] += time.monotonic() - wall
            row[1] += _cpu() - cpu
            if self.stats is not None:
                row[2] += self.stats.steps - steps
                row[3] += self.stats.examples - examples

    def wrap(self, fn, name_of, per_call: bool = False):
        """`fn`, timed under the phase `name_of(*args)` names; `per_call`: each call is one
        example (a directed program's replay: the directed loop counts it before the call)."""
        def wrapped(*args, **kwargs):
            name = name_of(*args, **kwargs)
            with self.phase(name):
                try:
                    return fn(*args, **kwargs)
                finally:
                    if per_call:
                        self.rows.setdefault(name, [0.0, 0.0, 0, 0])[3] += 1
        return wrapped


@contextmanager
def gc_timer(out: dict):
    """The cyclic GC's collections while the block runs: out["gc"] = [CPU seconds of the thread
    that collected, full collections] (a full collection walks every live object not frozen)."""
    out["gc"], started = [0.0, 0], {}

    def callback(phase, info):
        if phase == "start":
            started["t"] = time.thread_time()
        elif "t" in started:
            out["gc"][0] += time.thread_time() - started.pop("t")
            out["gc"][1] += info.get("generation") == 2
    gc.callbacks.append(callback)
    try:
        yield
    finally:
        gc.callbacks.remove(callback)


@contextmanager
def _patched(patches):
    """[(module, attribute, replacement)] in place for the block, then restored."""
    saved = [(m, a, getattr(m, a)) for m, a, _ in patches]
    for m, a, new in patches:
        setattr(m, a, new)
    try:
        yield
    finally:
        for m, a, old in saved:
            setattr(m, a, old)


PLAN_SCRIPT = """
import sys, time
from icefloe.conformance.coverage import directed
from icefloe.conformance.engines import registry
from icefloe.conformance.suite.profiles import PROFILES
engine = registry.load_engine(registry.DEFAULT_ENGINE)
wall, cpu = time.monotonic(), time.process_time()
directed.plan(engine, PROFILES[sys.argv[1]])
print(time.monotonic() - wall, time.process_time() - cpu)
"""


def _plan_in_process(cache_dir: str, profile_name: str) -> tuple:
    """(wall, CPU) seconds of the directed plan in a new process with this cache directory
    (the imports not counted)."""
    env = {**os.environ, "ICEFLOE_COVERAGE_CACHE": cache_dir}
    done = subprocess.run([sys.executable, "-c", PLAN_SCRIPT, profile_name], env=env, capture_output=True,
                          text=True, check=True)
    wall, cpu = done.stdout.split()
    return float(wall), float(cpu)


def measure(profile_name: str = "ci", quick: bool = False) -> dict:
    """One whole run, metered: {"rows": {phase: [wall, cpu, steps, examples]}, "total": [...],
    "result": the RunResult, "cold": (wall, cpu) of the plan from an empty cache,
    "warm": (wall, cpu) of the plan from the cache the cold one filled, "load": (start, end)}."""
    from icefloe.conformance.coverage import directed
    from icefloe.conformance.engines import registry
    from icefloe.conformance.report.write import write_report
    from icefloe.conformance.suite import machine
    from icefloe.conformance.suite import run as suite
    from icefloe.conformance.suite import stats as stats_module
    from icefloe.conformance.suite.profiles import PROFILES

    profile = PROFILES[profile_name]
    if quick:
        profile = replace(profile, examples_memory=6, examples_s3=1)
    engine = registry.load_engine(registry.DEFAULT_ENGINE)
    out = {"load": [os.getloadavg()[0]]}
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as cache_dir:
        # the cold and the warm plan each in a process of its own, as `icefloe conform` makes
        # it (a plan searched in this process would leave its searches in memory for the run)
        out["cold"] = _plan_in_process(cache_dir, profile_name)
        out["warm"] = _plan_in_process(cache_dir, profile_name)
        old = os.environ.get("ICEFLOE_COVERAGE_CACHE")
        os.environ["ICEFLOE_COVERAGE_CACHE"] = cache_dir
        try:
            started, cpu = time.monotonic(), _cpu()
            the_plan = directed.plan(engine, profile)
            out["plan"] = (time.monotonic() - started, _cpu() - cpu)
        finally:
            if old is None:
                os.environ.pop("ICEFLOE_COVERAGE_CACHE")
            else:
                os.environ["ICEFLOE_COVERAGE_CACHE"] = old
    family_of = {id(p.labels): f.family.name for f in the_plan.families for p in f.programs}
    meter = Meter(None)

    class Counted(stats_module.Stats):        # the run's Stats, so the meter reads its counts
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            if meter.stats is None:
                meter.stats = self

    def directed_row(engine_, labels, *a, **k):
        name = family_of.get(id(labels))
        return name if name in OWN_ROWS else "directed programs"

    patches = [
        (suite, "Stats", Counted),
        (directed, "run_wire", meter.wrap(directed.run_wire, lambda *a, **k: "rest-wire")),
        (directed, "replay", meter.wrap(directed.replay, directed_row, per_call=True)),
        (directed, "run_reflife", meter.wrap(directed.run_reflife, lambda *a, **k: "ref-lifecycle")),
        (suite, "_run_v3", meter.wrap(suite._run_v3, lambda *a, **k: "v3")),
        (machine, "search", meter.wrap(machine.search, lambda *a, **k: f"random search, {a[4]}")),
    ]
    started, cpu = time.monotonic(), _cpu()
    with _patched(patches), gc_timer(out):
        # the plan as `icefloe conform` makes it, from the cache the cold plan filled above
        # (its cost is the "warm" figure; the run is given it, as conform.run does)
        result = suite.run_suite(engine, registry.DEFAULT_ENGINE, profile, SEED, None, plan=the_plan)
    with tempfile.TemporaryDirectory(prefix="bench-report-") as where, meter.phase("report"):
        write_report(result, Path(where) / "report")
    total_wall, total_cpu = time.monotonic() - started, _cpu() - cpu
    out["load"].append(os.getloadavg()[0])
    out["rows"] = meter.rows
    out["total"] = [total_wall + out["plan"][0], total_cpu + out["plan"][1], result.stats.steps,
                    result.stats.examples]
    out["rows"]["plan"] = [out["plan"][0], out["plan"][1], 0, 0]
    out["result"] = result
    return out


def table(m: dict) -> list:
    def line(name, wall, cpu, steps, examples):
        rate = f"{steps / wall:.0f}" if steps else "-"
        per_cpu = f"{steps / max(cpu, 1e-9):.0f}" if steps else "-"
        return (f"| {name} | {examples or '-'} | {steps or '-'} | {wall:.1f} | {cpu:.1f} | {rate} | {per_cpu} |")
    rows = [line(name, *m["rows"][name]) for name in ORDER if name in m["rows"]]
    rows += [line(n, *r) for n, r in m["rows"].items() if n not in ORDER]
    rows.append(line("**whole run**", *m["total"]).replace("| whole", "| **whole"))
    return ["| phase | examples | steps | wall s | CPU s | steps/s | steps/CPU s |", "|---|---|---|---|---|---|---|",
            *rows]


def run(quick: bool) -> str:
    m = measure("ci", quick)
    res = m["result"]
    cov = res.coverage
    covered = sum(e["covered"] for e in cov.values())
    total = sum(e["total"] for e in cov.values())
    wall, cpu, steps, examples = m["total"]
    return "\n".join([
        f"`icefloe conform --profile ci --seed {SEED}` on icefloe (the default engine), in this process as the "
        "command runs it: the directed plan, then the run (rest-wire checks, the directed programs of every "
        "family, races and pairs among them, the ref-lifecycle programs, the v3 phase, Hypothesis' random "
        "search on the memory and S3 stores), then the report. Phases are timed by wrapping the functions "
        "each goes through (bench/bench_conform_ci.py); every check runs as in `icefloe conform`. CPU is this "
        "process's (all its threads: the suite, icefloe, moto's S3 server and `icefloe serve` run in threads "
        "of it; PostgreSQL's server, started by pg_ctl, is not counted). The whole run's steps/s is over its "
        "wall time including the warm plan and the report; steps per CPU second is the figure the team's "
        "load on the 2 shared cores changes least.",
        "",
        f"Verdict: {'every property holds' if res.passed else 'NOT passed: ' + res.overall_line()}; "
        f"{examples} examples, {steps} steps; coverage {covered}/{total} classes over {len(cov)} families. "
        f"Load average {m['load'][0]:.1f} at the start, {m['load'][1]:.1f} at the end. Python's cyclic GC "
        f"took {m['gc'][0]:.1f} s of the run's CPU ({m['gc'][1]} full collections).",
        "",
        *table(m),
        "",
        f"The plan (a shortest program to every transition class of the model, conformance/coverage/cache.py): "
        f"from a cold cache {m['cold'][0]:.1f} s wall / {m['cold'][1]:.1f} s CPU; from the warm cache "
        f"{m['warm'][0]:.1f} s / {m['warm'][1]:.1f} s (each in a process of its own; the whole run above plans "
        "from that warm cache). A first run on a machine, or after a change to the model or the suite's class "
        "definitions, pays the cold figure once.",
    ])


if __name__ == "__main__":
    print(run("--quick" in sys.argv[1:]))
