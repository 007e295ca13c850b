"""Sail 0.7.2 (pysail) committing through icefloe serve under every commit fault (issue 32 item 3;
docs/verdicts.md). Sail needs PySpark's connect client 4.2 (4.3's is refused: "session ... is not
running"), so it lives in its own venv, `.venv-peers/sail-0.7.2` (`make peer-venv-sail-0.7.2`),
and these tests run the probe there, as the Java tests run Spark 3.5 in `.venv-java`."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAIL_PYTHON = ROOT / ".venv-peers" / "sail-0.7.2" / "bin" / "python"
PROBE = """
import json, logging, sys
from dataclasses import asdict
from icefloe.conformance.testing import rest_engine_probe as P
logging.disable(logging.WARNING)
results = P.matrix("icefloe.conformance.engines.sail_engine:engine", kinds=tuple(sys.argv[1].split(",")))
print(json.dumps([asdict(r) for r in results]))
"""
PROBE_TIMEOUT_S = 600


def sail_probe(kinds: str, cwd) -> dict:
    assert SAIL_PYTHON.exists(), f"no {SAIL_PYTHON}: `make test` makes it (`make peer-venv-sail-0.7.2`)"
    script = Path(cwd) / "probe.py"        # a file: under `-c` PySpark's client looks for a SPARK_HOME
    script.write_text(PROBE)
    done = subprocess.run([str(SAIL_PYTHON), str(script), kinds], capture_output=True, text=True,
                          timeout=PROBE_TIMEOUT_S, cwd=cwd, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    return {(r["operation"], r["fault"], r["status"], r["then"]): r for r in results}


@pytest.fixture(scope="module")
def appends(tmp_path_factory):
    return sail_probe("append", tmp_path_factory.mktemp("sail"))


def test_sail_commits_through_the_rest_catalog_and_resends_after_409(appends):
    """Goal: Sail's append commits through icefloe serve; after a 409 (not applied) it sends again
    and commits once. Method: the probe's reject and duplicate cases on a fresh server."""
    reject = appends[("append", "reject", None, None)]
    assert reject["outcome"] == "committed" and reject["commit_requests"] == 2 and reject["applied"] == 1
    assert reject["landed"] == 1 and not reject["findings"]
    duplicate = appends[("append", "duplicate", None, None)]
    assert duplicate["outcome"] == "committed" and duplicate["landed"] == 1


def test_sail_reports_every_5xx_and_a_lost_answer_unknown_and_keeps_its_files(appends):
    """Goal: a 5xx or a dropped answer is reported as a failed commit that the adapter reads
    Unknown, whether it was applied or not, and what landed stays readable (no P4, no P8).
    Method: every fail_before, fail_after, lost and delay case of the probe."""
    cases = [r for key, r in appends.items() if key[1] in ("fail_before", "fail_after", "lost", "delay")]
    assert len(cases) == 8
    for r in cases:
        assert r["outcome"] == "unknown", r
        assert r["commit_requests"] == 1 and not r["findings"], r
        assert r["landed"] == r["applied"], r
    assert appends[("append", "lost", None, None)]["reason"].endswith("status code 200 OK")


def test_sail_messages_map_to_the_outcomes_they_claim():
    """Goal: each failed-commit message Sail 0.7.2 gave in the probe and the ci run maps to the
    outcome it claims (409 and a retry Sail refused itself: conflict; 5xx and a lost body:
    unknown), and any other error is no outcome (the adapter lets it through: an adapter
    error). Method: outcome_of on the messages as recorded."""
    from icefloe.conformance import adapter as A
    from icefloe.conformance.engines.sail_engine import outcome_of
    failed = "external error: Failed to commit Iceberg table db.t: response error: status code {}"
    assert isinstance(outcome_of(RuntimeError(failed.format("409 Conflict"))), A.Conflict)
    for status in ("500 Internal Server Error", "502 Bad Gateway", "503 Service Unavailable", "504 Gateway Timeout"):
        assert isinstance(outcome_of(RuntimeError(failed.format(status))), A.Unknown)
    lost = "external error: Failed to commit Iceberg table db.t: unknown error: status code 200 OK"
    assert isinstance(outcome_of(RuntimeError(lost)), A.Unknown)
    refused = ("Iceberg commit failed: reference 'main' expected snapshot Some(4003048291060849542) "
               "but found Some(401377535899698490)")
    assert isinstance(outcome_of(RuntimeError(refused)), A.Conflict)
    assert outcome_of(RuntimeError("invalid argument: column aliases are not allowed for source table in MERGE")) \
        is None
