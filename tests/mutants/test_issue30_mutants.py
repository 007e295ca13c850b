"""The issue-30 mutants (mutants/catalog.py ISSUE_30): each is one the gate requires conform
itself to kill, in an area the new phases judge, and the gate can run every seed of them."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mutants.catalog import ISSUE_30, MUTANTS, REFS, REST_SERVER, S3_CATALOG, VALIDATION

ROOT = Path(__file__).resolve().parents[2]


def test_every_issue_30_mutant_is_conforms_to_kill():
    """Goal: none of them may be left to unit tests; method: each is in the catalog with
    model_covers set, so `make mutants` counts a survivor of conform as a miss."""
    names = {m.name for m in MUTANTS}
    for m in ISSUE_30:
        assert m.name in names
        assert m.model_covers, m.name


def test_the_blind_spots_of_the_issue_each_have_a_mutant():
    """Goal: every structural gap the issue names is planted; method: the areas and files
    of ISSUE_30 cover the REST server (requirements and commit), the S3 catalog, refs
    (creation and retention) and a cross-family validation."""
    by_area = {}
    for m in ISSUE_30:
        by_area.setdefault(m.area, set()).add(m.file)
    assert {"impl/serve/requirements.py", "impl/serve/commit.py"} <= by_area[REST_SERVER]
    assert by_area[S3_CATALOG] == {"impl/catalog/s3.py"}
    assert {"impl/table/validation.py", "impl/table/operations.py"} <= by_area[REFS]
    assert by_area[VALIDATION] == {"impl/table/producer.py"}


def test_the_gate_takes_every_seed_when_asked():
    """Goal: --every-seed is an option of the gate (a directed kill otherwise stops after the
    first seed); method: the runner's --help lists it."""
    done = subprocess.run([sys.executable, "-m", "mutants.run", "--help"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "--every-seed" in done.stdout
