"""The races family (conformance.coverage.races: directed races on moto S3 with the S3
catalog and SQLite, and on PostgreSQL) and the ref-lifecycle family
(conformance.coverage.reflife: ref creation racing, retention per ref) reach their classes
on icefloe, and a bug in the S3 catalog's race paths or in per-ref retention is found
(issue 30 item 4)."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from icefloe.conformance.coverage import races, reflife
from icefloe.conformance.engines import registry
from icefloe.conformance.suite import profiles
from icefloe.conformance.suite import run as R
from icefloe.conformance.suite.backends import Backends

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
REFLIFE_PLANTED = """
import sys
from mutants import hook
hook.install(sys.argv[1])
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.coverage import reflife
b = Backends()
try:
    covered, problems = reflife.judge(b, (reflife.SQLITE,))
finally:
    b.close()
print("\\n".join(problems))
"""
RACES_PLANTED = """
import sys
from dataclasses import replace
from mutants import hook
hook.install(sys.argv[1])
from icefloe.conformance.engines import registry
from icefloe.conformance.suite import profiles, run as R
profile = replace(profiles.PROFILES["ci"], families=("races",), examples_memory=0, examples_s3=0)
result = R.run_suite(registry.load_engine("icefloe"), "icefloe", profile, 0)
print(result.failure.violation.prop if result.failure else "no failure")
"""


def _races_profile():
    return replace(profiles.PROFILES["ci"], families=("races",), examples_memory=0, examples_s3=0)


def test_every_race_class_is_reached_on_icefloe():
    """Goal: every race of the family runs on each store icefloe supports and shows the race
    itself (a swap on a moved pointer, two rivals while unknown); method: a run of the races
    family alone, its verdict's coverage."""
    result = R.run_suite(registry.load_engine("icefloe"), "icefloe", _races_profile(), 0)
    assert result.failure is None, result.failure and result.failure.violation
    entry = result.coverage["races"]
    expected = len(races.total_classes()) - (3 if races.postgres_available() else 0)
    assert entry["covered"] == expected, entry
    assert not result.vacuity


def test_race_classes_name_every_store_and_the_s3_catalogs_windows():
    """Goal: the family has a lost race for every classic kind on each store, and two rivals
    inside an unknown window (delayed, and on the S3 catalog held); method: the class set."""
    cls = races.total_classes()
    assert (races.S3_CATALOG, races.HELD2, "append") in cls
    for where in races.WHERE:
        assert (where, races.DELAYED2, "append") in cls
        assert {(where, races.LOST, k) for k in ("append", "overwrite", "delete", "rewrite", "rollback", "expire")} <= cls


def test_the_s3_catalogs_reconcile_over_two_moves_is_judged():
    """Goal: an S3 catalog that calls a pointer two swaps on 'not ours' is caught; method:
    the mutant planted in a fresh process, the races family alone names a property."""
    done = subprocess.run([sys.executable, "-c", RACES_PLANTED, "s3-catalog-moved-on-as-rejected"], cwd=ROOT,
                          env=ENV, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "A0 ModelAgreement", done.stdout


def test_ref_lifecycle_holds_on_icefloe_with_sqlite():
    """Goal: ref creation racing and retention per ref pass on icefloe; method: every
    program of the family on the memory store with SQLite, judged by its own oracle."""
    backends = Backends()
    try:
        covered, problems = reflife.judge(backends, (reflife.SQLITE,))
    finally:
        backends.close()
    assert problems == []
    assert covered == reflife.classes((reflife.SQLITE,))


def test_per_ref_retention_and_ref_creation_bugs_are_found():
    """Goal: a branch's own retention ignored, or a ref's 'must not exist' check skipped on
    retry, is named; method: each mutant planted in a fresh process, the family judged."""
    for mutant, named in (("retention-ignores-branch-min-keep", reflife.LAST_N),
                          ("retention-ignores-branch-age", reflife.YOUNG),
                          ("retention-ignores-ref-age", reflife.REF_AGE),
                          ("ref-absent-assertion-ignored", reflife.CREATE_RACE)):
        done = subprocess.run([sys.executable, "-c", REFLIFE_PLANTED, mutant], cwd=ROOT, env=ENV,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        assert named in done.stdout, (mutant, done.stdout)
