"""The v3 phase sees an upgraded table's position delete files (spec/PROTOCOL.md 19.8; issue
30 items 3, 8): `read_v3` reports them per data file, the lockstep's views hold them beside
the DVs, and a DV that merges them but leaves them live fails A0 ModelAgreement."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from icefloe.conformance.engines.icefloe_engine import engine as reference_engine
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.v3 import phase
from icefloe.conformance.v3.lockstep import V3Lockstep, engine_view, model_view
from icefloe.conformance.violation import AGREEMENT, Violation
from icefloe.model import v3 as V

ROOT = Path(__file__).resolve().parents[2]
# The upgraded instance of the dvs family: data file (0, 1) with rows 0.1.1-0.1.4, position
# delete files deleting positions 0 and 1 (0-based), no DV yet.
UPGRADED = V.V3Bounds(roles=(V.ROW_DELETE, V.ROW_UPDATE, V.REWRITE), dv_policy=V.CONFLICT_POLICY,
                      attempts_max=2, data_files=1, position_deletes=2)
# Writer 1's row delete (the RowDelta of a DV the engine wrote, superseding.supersede) and
# writer 2's row update (UpdateRows, a DeleteRows) of the file's third row, each alone.
ROW_DELTA = [("Begin", 1, (0, 1), 3), ("WriteData", 1), ("WriteMetadata", 1), ("Swap", 1)]
UPDATE = [("Begin", 2, (0, 1), 3), ("WriteData", 2), ("WriteMetadata", 2), ("Swap", 2)]


@pytest.fixture(scope="module")
def backends():
    b = Backends()
    yield b
    b.close()


@pytest.fixture
def stepped(backends):
    """run(program): a lockstep on a fresh upgraded table of the reference with the program's
    steps applied (no liveness phase, so its last read is the program's last commit's)."""
    locks = []

    def run(program) -> V3Lockstep:
        engine = reference_engine()
        lock = V3Lockstep(engine, backends.context(engine, phase.store_for(engine), 0, UPGRADED.attempts_max),
                          UPGRADED)
        locks.append(lock)
        for label in program:
            lock.apply(label)
        return lock

    yield run
    for lock in locks:
        lock.close()


def _file(view: tuple) -> tuple:
    """The one data file's (rows, _row_ids, first-row-id, DVs, position delete files)."""
    (f,) = view[1]
    return f


def test_views_hold_the_position_delete_files_until_a_dv_merges_them(stepped):
    """Goal: the engine's read and the model's view both show the upgraded file's position
    delete files, and neither once a DV merged them. Method: the row-delta program on the
    reference; the views at the bootstrap (the lockstep's first read) and after the commit."""
    lock = stepped(ROW_DELTA)
    boot, after = lock.history[0], lock.history[-1]
    assert sorted(sorted(d.positions) for d in boot.position_deletes) == [[0], [1]]
    assert {d.data_file for d in boot.position_deletes} == {f.path for f in boot.files}
    assert _file(engine_view(boot))[3:] == ((), ((0,), (1,)))
    assert len(lock.history) == 2 and after.position_deletes == ()
    assert engine_view(after) == model_view(lock.model)
    assert _file(model_view(lock.model))[3:] == (((0, 1, 2),), ())


@pytest.mark.parametrize("program", [ROW_DELTA, UPDATE], ids=["row-delta", "update"])
def test_position_deletes_left_beside_the_dv_fail_model_agreement(program, stepped):
    """Goal: a table whose DV holds the right positions (rows read right) but whose position
    delete files stay live disagrees with the model. Method: the engine's real read after the
    commit, given back the bootstrap read's position delete files, compared by the lockstep."""
    lock = stepped(program)
    boot, after = lock.history[0], lock.history[-1]
    kept = replace(after, position_deletes=boot.position_deletes)
    lock._compare(after, ("end", 0))
    with pytest.raises(Violation) as caught:
        lock._compare(kept, ("end", 0))
    assert caught.value.prop == AGREEMENT
    assert "position delete files" in caught.value.message


PLANTED = """
import sys
from mutants import hook
hook.install(sys.argv[1])
from icefloe.conformance.engines.icefloe_engine import engine
from icefloe.conformance.v3 import phase
from icefloe.conformance.violation import Violation
from icefloe.model import v3 as V
bounds = V.V3Bounds(roles=(V.ROW_DELETE, V.ROW_UPDATE, V.REWRITE), dv_policy=V.CONFLICT_POLICY,
                    attempts_max=2, data_files=1, position_deletes=2)
try:
    phase.replay(engine(), eval(sys.argv[2]), bounds)
except Violation as v:
    print(v.prop, v.step_index)
else:
    print("passed")
"""


@pytest.mark.parametrize("name, program", [("v3-row-delta-position-deletes-live", ROW_DELTA),
                                           ("v3-dv-delete-position-deletes-live", UPDATE)])
def test_each_mutant_is_killed_at_its_commit(name, program):
    """Goal: the two mutants of mutants/catalog.py that leave merged position delete files live
    are killed by the v3 phase itself. Method: the program through the mutated path, replayed
    in a fresh process with the mutant planted by the import hook: A0 at the commit (step 3)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", PLANTED, name, repr(program)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [AGREEMENT.split()[0], *AGREEMENT.split()[1:], "3"], done.stdout
