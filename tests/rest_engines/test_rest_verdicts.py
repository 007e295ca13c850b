"""The REST engines' verdicts through the model lockstep (issue 13 item 3; the figures in
docs/verdicts.md are `icefloe conform --engine pyiceberg|duckdb --profile ci --seed 0`),
the bounded share CI runs: every commit fault kind of the server's layer mirrored on the
model for pyiceberg 0.12 with every property holding (the directed "rest" family, one
program per kind and status); DuckDB 1.5.5's finding F1 reproduced as the lockstep shrinks
it; and a small conform run's verdict the same twice (stable). Iceberg-Java: tests/java."""
from __future__ import annotations

import json
import logging

import pytest

from icefloe.conformance import adapter as A, conform
from icefloe.conformance.engines import registry
from icefloe.conformance.coverage import directed
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.suite.profiles import PROFILES, REST, Profile
from icefloe.conformance.suite.runs import replay
from icefloe.conformance.suite.stats import Stats
from icefloe.conformance.violation import Violation

logging.getLogger("pyiceberg").setLevel(logging.ERROR)
KINDS = {"reject", "fail_before", "fail_after", "lost", "delay", "duplicate"}


@pytest.fixture(scope="module")
def backends():
    b = Backends()
    yield b
    b.close()


def test_pyiceberg_default_is_the_rest_engine():
    """Goal: `--engine pyiceberg` is pyiceberg through REST (where its commit can be faulted).
    Method: load the shortcut, read its capabilities."""
    engine = registry.load_engine("pyiceberg")
    assert engine.capabilities.stores == frozenset({REST}) and A.TRANSPORT_REST in engine.capabilities.transport
    assert registry.load_engine("pyiceberg-sql").capabilities.stores == frozenset({"s3"})


def test_pyiceberg_meets_every_commit_fault_kind_and_holds(backends):
    """Goal: each fault kind of the server's layer reaches pyiceberg's commit, is mirrored on
    the model and breaks no property. Method: the directed "rest" family's programs (one per
    kind and status), each run to its end (liveness, history checker, every snapshot read)."""
    engine = registry.load_engine("pyiceberg-rest")
    family = next(f for f in directed.plan(engine, PROFILES["ci"]).families if f.family.name == "rest")
    assert {c[0] for c in family.reachable} == KINDS and family.programs
    stats = Stats()
    for program in family.programs:
        replay(engine, program.labels, bounds=program.bounds, store=REST, backends=backends, stats=stats,
               ctx_seed=0, lenient=True)
    injected = {k.split()[-1] for k, v in stats.faults.items() if k.startswith("rest ") and v}
    assert injected == KINDS, stats.faults
    assert stats.unknown_resolved_committed > 0 and stats.unknown_resolved_not_committed > 0, stats


def test_duckdb_finding_f1_reproduces_through_the_lockstep(backends):
    """Goal: the known DuckDB 1.5.5 finding (F1: a 5xx after the commit applied is reported
    failed and the landed snapshot's files deleted) reproduces as the ci run shrank it.
    Method: replay its program; the lockstep must name P4 (and the unreadable chain)."""
    engine = registry.load_engine("duckdb")
    with pytest.raises(Violation) as found:
        replay(engine, [("Begin", 1, "append"), ("AckLost", 1)], store=REST, backends=backends)
    assert found.value.prop.startswith("P4"), found.value
    assert "duckdb-iceberg #1120" in str(found.value)


def test_a_small_verdict_is_the_same_twice(tmp_path, monkeypatch, capsys):
    """Goal: a REST engine's verdict is stable. Method: a conform run bounded to 2 random
    REST examples of 10 steps, twice with the same seed: the same properties and counts."""
    monkeypatch.setitem(PROFILES, "ci", Profile("ci", examples_memory=0, examples_s3=1, steps=10, directed=False))
    verdicts = []
    for n in range(2):
        report = tmp_path / f"r{n}"
        conform.main(["--engine", "pyiceberg", "--profile", "ci", "--seed", "3", "--report", str(report), "--no-progress"])
        capsys.readouterr()
        v = json.loads((report / "verdict.json").read_text())
        verdicts.append((v["properties"], v["counts"]))
    assert verdicts[0] == verdicts[1]
    assert set(verdicts[0][0].values()) <= {"holds", "violated", "unknown"}
