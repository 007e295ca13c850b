"""The conformance suite run against an engine (icefloe's own unless `--engine` says
otherwise), and the harness's own behaviour: replayed programs, the CLI's exit codes, the
counterexample report, the pytest plugin."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import registry
from icefloe.conformance import conform
from icefloe.conformance.engines import icefloe_engine as I
from icefloe.conformance.suite.profiles import MEMORY, PROFILES, S3, bounds_for, classic_bounds
from icefloe.conformance.suite.runs import replay
from icefloe.impl.table.files import TreeReader
from icefloe.conformance.violation import InvalidProgram, Violation
from icefloe.conformance.plugin import run_suite


def test_engine_conforms(conformance_engine, pytestconfig):
    """Goal: every property holds for the engine under test, and the run proves something.
    Method: the state machine (ci profile unless --conform-profile / HYPOTHESIS_PROFILE say
    deep; memory store, then moto S3), judged per step and per history; in ci, the
    non-vacuity checks of `icefloe conform`."""
    result = run_suite(conformance_engine, "pytest", pytestconfig.getoption("--conform-profile"),
                       seed=pytestconfig.getoption("--conform-seed"))
    assert result.failure is None, "\n" + "\n".join(str(result.failure.violation).splitlines()[:5])
    assert not result.vacuity, result.vacuity
    assert set(result.verdicts().values()) <= {"holds", "unknown"}
    caps = conformance_engine.capabilities
    if S3 in caps.stores:
        assert result.stats.backends[S3] > 0
    if MEMORY in caps.stores and caps.mode == A.STEPPING:
        assert result.stats.backends[MEMORY] > result.stats.backends.get(S3, 0)


def _icefloe():
    return registry.load_engine("icefloe")


RACE = [("Begin", 1, "append"), ("Begin", 2, "append"),
        ("WriteData", 1), ("WriteManifests", 1), ("WriteManifestList", 1), ("WriteMetadata", 1),
        ("WriteData", 2), ("WriteManifests", 2), ("WriteManifestList", 2), ("WriteMetadata", 2),
        ("Swap", 1), ("Swap", 2), ("Retry", 2), ("WriteManifestList", 2), ("WriteMetadata", 2), ("Swap", 2)]


def test_replayed_race_commits_both_appends():
    """Goal: a hand-written program replays on icefloe and the history holds both commits.
    Method: two appends race for one swap; the loser retries; the history checker judges."""
    lock = replay(_icefloe(), RACE, finish=False)
    assert lock.stats.commits == 2 and lock.stats.retries == 1
    outcomes = {(w, k): type(rec.outcome).__name__ for (w, k), rec in lock.ops.items()}
    assert outcomes == {(1, 1): "Committed", (2, 1): "Committed"}
    assert lock.last_history_verdict is None      # finish=False judges nothing


def test_unknown_outcomes_resolve_both_ways():
    """Goal: an unknown swap outcome is resolved as landed (ack lost) and as not landed
    (a delayed swap dropped). Method: two replayed programs with those faults."""
    lost = [("Faults", 0, ("ack_lost",)), ("Begin", 1, "append"), ("WriteData", 1), ("WriteManifests", 1),
            ("WriteManifestList", 1), ("WriteMetadata", 1), ("AckLost", 1), ("Resolve", 1)]
    lock = replay(_icefloe(), lost)
    assert lock.stats.unknown_resolved_committed == 1 and lock.stats.unknown_resolved_not_committed == 0
    delayed = [("Begin", 1, "append"), ("WriteData", 1), ("WriteManifests", 1), ("WriteManifestList", 1),
               ("WriteMetadata", 1), ("SwapDelayed", 1), ("Drop", 1, 1, 1), ("Resolve", 1)]
    lock = replay(_icefloe(), delayed)
    assert lock.stats.unknown_resolved_not_committed == 1
    assert lock.last_history_verdict.valid is True


def test_a_step_the_model_does_not_allow_is_refused():
    """Goal: a program cannot smuggle in a step the model forbids. Method: Swap before Begin."""
    with pytest.raises(InvalidProgram, match="not enabled"):
        replay(_icefloe(), [("Swap", 1)])


def test_cli_usage_errors_exit_2(capsys):
    """Goal: usage and setup errors exit 2 with one line. Method: bad arguments to main."""
    assert conform.main(["--profile", "huge"]) == 2
    assert conform.main(["--engine", "no_such_module:engine"]) == 2
    assert conform.main(["--engine", "icefloe.conformance.adapter:nothing_here"]) == 2
    assert conform.main(["--variant", "no-such-variant"]) == 2
    err = capsys.readouterr().err
    assert "no_such_module" in err and "no-such-variant" in err


def test_list_variants_prints_the_registry(capsys):
    """Goal: --list-variants prints each flawed variant once. Method: compare with VARIANTS."""
    assert conform.main(["--list-variants"]) == 0
    assert capsys.readouterr().out.split() == registry.variant_names()


def test_variant_fails_with_a_replayable_counterexample(tmp_path, capsys):
    """Goal: a flawed variant exits 1 naming the property, and its report replays.
    Method: `icefloe conform --variant no-revalidate`; read verdict.json; replay its program;
    the output ends on one FAILED line naming the property."""
    if "no-revalidate" not in registry.variant_names():
        pytest.fail("the no-revalidate variant is missing from conformance/engines/flawed.py")
    assert conform.main(["--variant", "no-revalidate", "--report", str(tmp_path), "--no-progress"]) == 1
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    assert last.startswith("FAILED: ") and "violates P5 ValidationSound" in last, last
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert verdict["verdict"] == "fail" and verdict["engine"]
    violated = [p for p, v in verdict["properties"].items() if v == "violated"]
    assert violated and verdict["counterexample"]["property"] in violated
    for name in ("report.md", "report.html", "program.py", "versions.dot", "versions.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    program = [tuple(x if not isinstance(x, list) else tuple(x) for x in lab)
               for lab in verdict["counterexample"]["program"]]
    with pytest.raises(Violation) as found:
        replay(registry.load_variant("no-revalidate"), program, store=verdict["counterexample"]["store"])
    assert found.value.prop == verdict["counterexample"]["property"]


def _pytest(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_plugin_adds_the_suite_only_when_asked(tmp_path):
    """Goal: the auto-loaded plugin is silent unless --engine is given; `-p
    icefloe.conformance` works too. Method: pytest --collect-only in an empty directory."""
    quiet = _pytest(tmp_path, "--collect-only")
    assert "conformance[" not in quiet.stdout
    asked = _pytest(tmp_path, "--collect-only", "-p", "icefloe.conformance", "--engine", "icefloe")
    assert "conformance[icefloe]" in asked.stdout, asked.stdout + asked.stderr
    bad = _pytest(tmp_path, "--collect-only", "--engine", "no_such_module:engine")
    assert bad.returncode == 4 and "no_such_module" in bad.stderr + bad.stdout


def test_incremental_read_takes_an_overwrite_that_removed_nothing():
    """Goal: an overwrite of an empty table counts as an append for incremental readers,
    as Iceberg records it (found by the deep profile). Method: delete both bootstrap files,
    overwrite, then read incrementally since the last bootstrap snapshot."""
    d = [("WriteManifests", 1), ("WriteManifestList", 1), ("WriteMetadata", 1), ("Swap", 1)]
    program = [("Begin", 1, "delete"), *d, ("Begin", 1, "delete"), *d, ("Begin", 1, "overwrite"),
               ("WriteData", 1), *d, ("ReadIncremental", 0, (0, 2))]
    lock = replay(_icefloe(), program)          # raises a P10 Violation if the rows differ
    assert lock.stats.reads >= 1 and lock.kind_of[(1, 3)] == "overwrite"
    assert lock.last_history_verdict.valid is True


class _ForgetfulCommit(I.IcefloeCommit):
    """icefloe's commit with no cache of what it read: every phase opens the manifests it
    needs again (as an engine without a manifest cache does)."""

    def step(self):
        self.pending.tree = TreeReader(self.pending.io)
        return super().step()


class _ForgetfulTable(I.IcefloeTable):
    def begin(self, writer, op):
        commit = super().begin(writer, op)
        return _ForgetfulCommit(commit.pending, commit.handle)


class _ForgetfulEngine(I.IcefloeEngine):
    name = "icefloe-without-manifest-cache"

    def create_table(self, ctx):
        return _ForgetfulTable(self, ctx)


def test_engine_may_abort_sooner_than_the_model_when_the_model_aborts_too():
    """Goal: an engine that reads a manifest a concurrent delete and expiry removed fails as
    soon as it reads it, and the suite accepts that because the model's writer, alone, aborts
    as well (its starting snapshot was expired). Method: replay that program on icefloe with
    its manifest cache off (icefloe itself caches what it planned with and fails later, at
    validation, like the model)."""
    bounds = replace(classic_bounds(bounds_for(_icefloe(), PROFILES["deep"])), ops=1, faults=(), fault_budget=0)
    program = [("Begin", 1, "rewrite"), ("Begin", 2, "delete"), ("WriteManifests", 2), ("WriteManifestList", 2),
               ("WriteMetadata", 2), ("Swap", 2), ("Begin", 3, "expire"), ("WriteMetadata", 3), ("Swap", 3),
               ("WriteData", 1)]
    lock = replay(_ForgetfulEngine(), program, bounds=bounds)
    assert lock.stats.early_aborts == 1
    out = lock.ops[(1, 1)].outcome
    assert isinstance(out, A.Conflict) and out.cause == "store", out
    lock = replay(_icefloe(), program, bounds=bounds)
    assert lock.stats.early_aborts == 0 and isinstance(lock.ops[(1, 1)].outcome, A.Conflict)
