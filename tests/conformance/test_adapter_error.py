"""An exception the adapter did not expect is an "adapter error" verdict with its traceback in the
report, never a property violation (issue 32 item 1). The adapters here are icefloe's own REST
engine with one bug planted: the kind an adapter written for another version of its engine has
(pyiceberg 0.10 lacks `rollback_to_snapshot`; the adapter called it anyway)."""
from __future__ import annotations

import json

import pytest

from icefloe.conformance import conform
from icefloe.conformance.engines import icefloe_rest
from icefloe.conformance.suite.profiles import PROFILES, Profile

PLANTED = "rollback_to_snapshot"


class PlantedBugCommit:
    """Writer 1's commits call a method the engine does not have."""

    def __init__(self, inner):
        self.inner = inner

    def run(self):
        return getattr(self.inner, PLANTED)()      # AttributeError: the adapter's bug, not the engine's


class PlantedBugTable(icefloe_rest.IcefloeRestTable):
    def begin(self, writer, op):
        commit = super().begin(writer, op)
        return PlantedBugCommit(commit) if writer != 0 else commit


class PlantedCreateBugTable(icefloe_rest.IcefloeRestTable):
    def __init__(self, engine, ctx):
        raise KeyError("format-version")           # a create_table that reads a key its engine lacks


def planted(table_class, name):
    return type(name, (icefloe_rest.IcefloeRestEngine,), {"name": name, "table_class": table_class})()


@pytest.fixture
def small_ci(monkeypatch):
    """ci's model and the rest family's directed programs only (each fault kind on an append)."""
    monkeypatch.setitem(PROFILES, "ci", Profile("ci", examples_memory=0, examples_s3=0, steps=12, families=("rest",)))


def run(engine, tmp_path, capsys):
    args = conform.parse(["--profile", "ci", "--seed", "0", "--report", str(tmp_path / "report"), "--no-progress"])
    code = conform.run(engine, args)
    out = capsys.readouterr().out
    verdict = json.loads((tmp_path / "report" / "verdict.json").read_text())
    report_md = (tmp_path / "report" / "report.md").read_text()
    return code, out, verdict, report_md


def test_a_planted_adapter_bug_is_an_adapter_error_not_a_violation(small_ci, tmp_path, capsys):
    """Goal: a commit whose run() raises AttributeError ends the run as an adapter error, with the
    traceback and the program in verdict.json and the report, every property unjudged and none
    violated, exit 1. Method: conform on icefloe's REST engine with writer 1's commits planted."""
    code, out, verdict, report_md = run(planted(PlantedBugTable, "planted-commit-bug"), tmp_path, capsys)
    assert code == conform.EXIT_VIOLATION
    assert verdict["verdict"] == "adapter error"
    assert verdict["violated"] == [] and verdict["counterexample"] is None
    assert set(verdict["properties"].values()) == {"unknown"}
    error = verdict["adapter_error"]
    assert error["exception"] == "AttributeError" and PLANTED in error["message"]
    assert "writer 1" in error["where"] and "run()" in error["where"]
    assert "Traceback" in error["traceback"] and "getattr(self.inner, PLANTED)" in error["traceback"]
    assert error["program"] and error["program"][0][:2] == ["Begin", 1] and error["store"] == "rest"
    assert "ADAPTER ERROR" in out and "VIOLATED" not in out
    assert "append" in verdict["capabilities"]["operations"] and verdict["capabilities"]["commit_attempts_max"] is None
    assert "# icefloe conform: ADAPTER ERROR" in report_md and PLANTED in report_md and "Traceback" in report_md


def test_a_create_table_that_raises_is_an_adapter_error(small_ci, tmp_path, capsys):
    """Goal: an adapter whose create_table raises gets the adapter-error verdict naming
    create_table, not a crash of the command. Method: conform on a planted create_table."""
    code, out, verdict, _ = run(planted(PlantedCreateBugTable, "planted-create-bug"), tmp_path, capsys)
    assert code == conform.EXIT_VIOLATION
    assert verdict["verdict"] == "adapter error"
    assert verdict["adapter_error"]["where"] == "create_table"
    assert verdict["adapter_error"]["exception"] == "KeyError"
    assert "ADAPTER ERROR" in out
