"""What `icefloe conform` (and so `make run`) prints: on a pass the verdict, the property
table, the coverage and the report's path only; on a failure counts and a history
checker line that agree with the verdict, in the console, report.md and report.html."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from icefloe.conformance.engines import registry
from icefloe.conformance.report import result as R
from icefloe.conformance.suite.runs import replay
from icefloe.conformance.suite.stats import Stats
from icefloe.conformance.testing import browser

RACE = [("Begin", 1, "delete"), ("Begin", 2, "delete"), ("WriteManifests", 1), ("WriteManifestList", 1),
        ("WriteManifests", 2), ("WriteManifestList", 2), ("WriteMetadata", 1), ("Swap", 1),
        ("WriteMetadata", 2), ("Swap", 2), ("Retry", 2)]


@pytest.fixture(scope="module")
def passing() -> R.RunResult:
    lock = replay(registry.load_engine("icefloe"), RACE)
    try:
        return R.RunResult(engine="icefloe", engine_name="icefloe", variant=None, profile="ci", seed=0,
                           stats=Stats(examples=1, steps=len(RACE), commits=1, writers=2),
                           interleaving="phase by phase", expected_rules=("Begin",), commit="test", elapsed_s=1.0,
                           coverage={"rivals": {"covered": 3, "total": 4, "unreachable": 1}},
                           history=lock.last_history, history_verdict=lock.last_history_verdict,
                           history_example="example 7 of the run (random)")
    finally:
        lock.close()


def test_a_pass_prints_verdict_properties_and_coverage_only(passing):
    """Goal: a passing run's console output is short. Method: render it; the verdict, the
    property table and the coverage line are there; the counts, a judged example's
    history and the history checker's block are not (they stay in report.md)."""
    text = R.report_text(passing)
    assert text.startswith("VERDICT: every property holds") and "| P1 LinearHistory" in text
    assert "coverage rivals: 3/4 classes (1 unreachable with this engine)" in text
    for absent in ("## History of", "## History checker", "VALID under", "| writers", "| rule"):
        assert absent not in text, absent


def test_a_flawed_variant_reports_counts_and_checker_in_agreement(tmp_path):
    """Goal: a failing run (found in the directed phase, step by step) shows the writers
    its programs used and a checker line that does not read VALID under FAIL, in the
    console, report.md and the report.html Chromium renders. Method: `icefloe conform
    --variant no-revalidate` as make run calls it; parse the counts table; look for the
    checker's words in each output."""
    report = tmp_path / "rep"
    done = subprocess.run([sys.executable, "-m", "icefloe.impl.cli", "conform", "--variant", "no-revalidate",
                           "--profile", "ci", "--no-progress", "--report", str(report)],
                          capture_output=True, text=True, timeout=600)
    out = done.stdout
    assert done.returncode == 1 and "FAILED:" in out and "P5 ValidationSound VIOLATED" in out, out[-2000:]
    writers = int(re.search(r"\| writers\s+\| (\d+)", out)[1])
    assert writers >= 2, out
    checker = out.split("## History checker", 1)[1]
    assert "VALID under" not in checker and "found step by step" in checker and "P5" in checker
    md = (report / "report.md").read_text()
    assert "found step by step" in md.split("## History checker", 1)[1] and "VALID under" not in md
    assert re.search(r"\| writers\s+\| [1-9]", md)
    dom = browser.dump_dom(report / "report.html")
    section = dom.split('id="checker"', 1)[1]
    assert "found step by step" in section.split("</pre>", 1)[0] and "VALID under" not in dom
