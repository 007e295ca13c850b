"""Shared test configuration: Hypothesis profiles and the per-suite time report.

Every test belongs to one suite, named after its top-level folder under tests/.
Each suite has a time budget; at the end of `make test` a table shows where the
time went (summed test durations per suite, across xdist workers) and flags any
suite over its budget. The budgets are for planning CI time, never a pass/fail
criterion of a test.
"""
from __future__ import annotations

import os
import time
from collections import defaultdict
from pathlib import Path

from hypothesis import HealthCheck, settings

# ci: bounded and seeded (derandomized) so a CI failure replays exactly; deep: long campaigns.
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep",
    max_examples=5000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

TESTS_ROOT = Path(__file__).resolve().parent

# Seconds of summed test time each suite may use in `make test` on 2 cores.
SUITE_BUDGETS_S = {
    "packaging": 60,
    "model": 120,
    "explorer": 180,
    "tla": 240,
    "impl": 420,  # +60: the table, catalog-contract and store tests also run on S3 (moto); +180: the CLI's 1M-row scan memory bound and its Iceberg-Java schema read-back (one Spark start)
    "stateful": 240,
    "conformance": 360,  # +30: report.html rendered in headless Chromium; +30: the v3 families and the orphans-in-flight family (issues 29, 30: 333-343 s on 2 cores, 150 s of it the ci run of icefloe itself)
    "interop": 120,
    "s3": 240,  # +60: every proxy fault kind and gate also against pyiceberg; table-level S3 tests
    "postgres": 120,
    "spark": 480,  # +180: the native paths (transforms vs transforms.py, MoR vs peers, Iceberg-Java reads them)
    "repro": 120,  # ../shared/repro reproductions as regression tests
    "fuzz": 180,  # hostile-input fuzzing, the bounded share (the deep run is a make target)
    "mutants": 60,  # the gate's machinery only; the gate itself is `make mutants`
    "rest": 180,  # icefloe serve: pyiceberg's REST client, errors, idempotency, faults, --rest-uri
    "rest_engines": 240,  # pyiceberg and DuckDB through icefloe serve under every commit fault; +120: icefloe's REST client, interop races (local, S3, a flawed server)
    "java": 660,  # Iceberg-Java 1.10.2 on Spark 3.5.9 (.venv-java): one worker per session, 10-17 s to start; +120: the three-engine interop race; +240: one lockstep program per commit fault kind
}


def suite_of(path: Path) -> str:
    # report.fspath is relative to the rootdir; never resolve it against the current
    # directory, which a test may have changed.
    path = Path(path)
    if not path.is_absolute():
        path = TESTS_ROOT.parent / path
    try:
        rel = path.relative_to(TESTS_ROOT)
    except ValueError:
        return "misc"
    return rel.parts[0] if len(rel.parts) > 1 else "misc"


_durations: dict[str, float] = defaultdict(float)
_counts: dict[str, int] = defaultdict(int)
_session_start = time.monotonic()


def pytest_runtest_logreport(report):
    # Runs on the controller for xdist reports too, so totals cover every worker.
    suite = suite_of(Path(report.fspath)) if report.fspath else "misc"
    _durations[suite] += report.duration
    if report.when == "call":
        _counts[suite] += 1


def pytest_terminal_summary(terminalreporter):
    if not _durations:
        return
    tr = terminalreporter
    tr.section("where the time went (summed test time per suite)")
    tr.write_line(f"{'suite':<12} {'tests':>6} {'seconds':>9} {'budget':>8}  status")
    for suite in sorted(_durations, key=lambda s: -_durations[s]):
        budget = SUITE_BUDGETS_S.get(suite)
        spent = _durations[suite]
        status = "ok" if budget is None or spent <= budget else "OVER BUDGET"
        tr.write_line(f"{suite:<12} {_counts[suite]:>6} {spent:>9.1f} {budget or '-':>8}  {status}")
    tr.write_line(f"wall clock: {time.monotonic() - _session_start:.1f} s")
