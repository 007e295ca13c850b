"""The mutation gate's machinery (mutants/): the catalog applies to the tree as it is, the
import hook really plants a mutant, and the runner reports a kill."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def run(*args, **kw):
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=kw.pop("env", ENV), capture_output=True,
                          text=True, timeout=600, **kw)


def test_every_mutant_applies_exactly_once_and_compiles():
    """Goal: the catalog follows the code (whoever moves a snippet moves its mutant).
    Method: `python -m mutants.run --check` finds each snippet once and compiles the result."""
    done = run("-m", "mutants.run", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 do not apply" in done.stdout


SWAP_PROBE = """
import sys, tempfile
from pathlib import Path
if sys.argv[1] == "planted":
    from mutants import hook
    hook.install("sql-blind-update")
from icefloe.impl.catalog.base import TableIdentifier
from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.outcomes import Swapped
d = tempfile.mkdtemp()
cat = SqlCatalog(f"sqlite:///{Path(d) / 'c.db'}")
t = TableIdentifier(("db",), "t")
cat.create(t, "v0")
print(type(cat.swap(t, "stale", "v1")).__name__)
"""


def test_the_hook_plants_the_mutant_in_a_fresh_process_only():
    """Goal: a mutant changes behaviour in its own process and nowhere else. Method: a swap
    from a stale location is rejected by the SQL catalog, and accepted with the
    sql-blind-update mutant planted through the import hook."""
    clean, planted = run("-c", SWAP_PROBE, "clean"), run("-c", SWAP_PROBE, "planted")
    assert clean.returncode == 0 and planted.returncode == 0, clean.stderr + planted.stderr
    assert clean.stdout.strip() == "SwapRejected"
    assert planted.stdout.strip() == "Swapped"


def test_the_runner_reports_a_conform_kill(tmp_path):
    """Goal: the gate's runner turns a conform failure into a kill naming the property.
    Method: run the gate on sql-blind-update (a lost commit conform finds at once) and read
    the kill record it writes."""
    done = run("-m", "mutants.run", "sql-blind-update", "--no-unit")
    assert done.returncode == 0, done.stdout + done.stderr
    [record] = json.loads((ROOT / "reports" / "mutants" / "kills.json").read_text())
    assert record["mutant"] == "sql-blind-update" and record["killed_by"] == "conform (directed program)"
    assert "P2 NoLostCommit" in record["properties"]


def test_the_killing_test_is_named_whole_when_its_parameter_id_holds_spaces():
    """Goal: the kill table names the test that failed, parameter id and all (pytest's
    summary line is `FAILED <node id> - <message>`, and an id may hold spaces). Method: the
    runner's pattern on summary lines."""
    from mutants.run import _FAILED
    lines = ("FAILED tests/a.py::t[struct member] - AssertionError: DID NOT RAISE\n"
             "FAILED tests/b.py::u\n")
    assert _FAILED.findall(lines) == ["tests/a.py::t[struct member]", "tests/b.py::u"]
