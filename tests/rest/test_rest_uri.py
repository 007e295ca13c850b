"""`icefloe conform --rest-uri`: goal, the catalog author's mode passes `icefloe serve` and
catches each flawed REST server (an unknown outcome answered 400 or 409, a requirement
check apart from the swap, an Idempotency-Key replay that re-applies); method, each server
on the same unreliable SQLite backend (COMMIT replies lost at seeded random, so unknown
outcomes really happen at the server), judged through the suite's fault proxy."""
from __future__ import annotations

import json

import pytest

from icefloe.conformance.rest import conform as rest_conform
from icefloe.conformance.cli import main as icefloe_main
from icefloe.conformance.testing import rest_flawed

EXPECTED_FAILURES = {
    "unknown-as-400": {"answers-agree"},
    "unknown-as-409": {"answers-agree"},
    "non-atomic-check": {"atomic-requirements", "answers-agree"},
    "replay-reapplies": {"idempotency-replay", "answers-agree"},
}


def _judge(variant, tmp_path, seed=1):
    server, backend = rest_flawed.server(variant, f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "wh"), seed)
    with server:
        verdict = rest_conform.run(server.url, seed=seed, after_setup=backend.arm)
    return verdict, backend


def test_icefloe_serve_passes(tmp_path):
    """Goal: the reference passes every check with every fault kind injected and unknown
    outcomes at the server; method: one run, the verdict's checks and counts."""
    verdict, backend = _judge(rest_flawed.REFERENCE, tmp_path)
    assert verdict.passed, verdict.render()
    assert {c.name for c in verdict.checks} == {"config", "bad-input", "requirements-409", "atomic-requirements",
                                                "idempotency-replay", "answers-agree"}
    assert set(verdict.faults) >= {"fail_after", "lost", "duplicate", "delay"}
    assert backend.counts["after"] > 0 and verdict.answers.get(500, 0) > 0


@pytest.mark.parametrize("variant", sorted(rest_flawed.VARIANTS))
def test_flawed_server_is_caught(variant, tmp_path):
    """Goal: each flawed server fails, at the check that names its flaw; method: one run each."""
    verdict, _ = _judge(variant, tmp_path)
    failed = {c.name for c in verdict.checks if c.status == rest_conform.FAIL}
    assert not verdict.passed and failed == EXPECTED_FAILURES[variant], verdict.render()


def test_cli_writes_a_verdict(tmp_path, capsys):
    """Goal: `icefloe conform --rest-uri URI --report F` judges a running server and writes
    the verdict; method: the console entry point against `icefloe serve` in-process."""
    server, _ = rest_flawed.server(rest_flawed.REFERENCE, f"sqlite:///{tmp_path}/c.db", str(tmp_path / "wh"))
    report = tmp_path / "verdict.json"
    with server:
        code = icefloe_main(["conform", "--rest-uri", server.url, "--report", str(report)])
    assert code == 0, capsys.readouterr().out
    assert json.loads(report.read_text())["passed"] is True
    assert "PASS" in capsys.readouterr().out
