"""The pairs family (conformance.coverage.pairs): every pair of operation kinds the model has
races once on a small instance, so a validation bug that only a race across the other
families' kinds shows is found (issue 30 item 4: an overwrite racing a row delete)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from icefloe.conformance.coverage import cache as graph_cache
from icefloe.conformance.coverage.families import FAMILIES
from icefloe.conformance.coverage.pairs import PAIRS
from icefloe.conformance.engines import registry
from icefloe.conformance.suite import profiles
from icefloe.model.state import OP_KINDS

ROOT = Path(__file__).resolve().parents[2]
PLANTED = """
import sys
from dataclasses import replace
from mutants import hook
hook.install(sys.argv[1])
from icefloe.conformance.engines import registry
from icefloe.conformance.suite import profiles, run as R
profile = replace(profiles.PROFILES["ci"], families=("pairs",), examples_memory=0, examples_s3=0)
result = R.run_suite(registry.load_engine("icefloe"), "icefloe", profile, 0)
print(result.failure.violation.prop if result.failure else "no failure")
"""


def _graph():
    engine = registry.load_engine("icefloe")
    full = profiles.model_bounds(engine, profiles.PROFILES["ci"])
    return graph_cache.explore(PAIRS, PAIRS.bounds(full), False)


def test_pairs_is_a_family_of_every_run():
    """Goal: the pairs family is measured as every other family is; method: it is among
    coverage.families.FAMILIES, whose classes the run's tracker records."""
    assert PAIRS in FAMILIES


def test_every_kind_races_every_kind_that_can_land_meanwhile():
    """Goal: the classes cross the families: an overwrite races a row delete, a tag races an
    upsert, a compaction races an expiry; method: search the family's instance, every
    (kind, rival kind) of the model's kinds but fast-forward (which needs a branch ahead of
    main, and on this instance never moves a ref) is a class."""
    classes = _graph().classes
    kinds = [k for k in OP_KINDS if k != "fast_forward"]
    assert {(a, b) for a in kinds for b in kinds} <= classes
    assert {("overwrite", "row_delete"), ("tag", "upsert"), ("rewrite", "expire")} <= classes


def test_an_overwrite_that_ignores_deletes_of_the_files_it_removes_is_found():
    """Goal: the bug only a cross-family race shows is killed; method: the mutant planted in
    a fresh process, the pairs family alone, which names P5."""
    done = subprocess.run([sys.executable, "-c", PLANTED, "overwrite-ignores-deletes-of-removed"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "P5 ValidationSound", done.stdout
