"""cdc_update in the model: a row written twice in one commit, its first version deleted by a
position delete naming the data file the same commit adds (spec/PROTOCOL.md 7.3; Flink's
CDC writer within one checkpoint). The one operation whose position delete has its data
file's data sequence number.

Method: drive the correct model to the committed state, read it through model/rows.py, and
tamper with exactly the delete the commit wrote to show that P6 then rejects it; explore
the instance of tla/MCIcebergCommit_cdc_update.cfg and check, in every reachable state, that
no reader of any retained snapshot sees a first version.
"""
from __future__ import annotations

import json
from pathlib import Path

from icefloe.model import checks
from icefloe.model import rows as R
from icefloe.model.explore import explore
from icefloe.model.iceberg import Bounds
from icefloe.model.spec import IcebergSpec
from icefloe.model.state import CDC_UPDATE, POSITION, mget, mput, snap_of
from model_helpers import run

ROOT = Path(__file__).resolve().parents[2]
CDC = Bounds(writers=2, ops=1, kinds=("rewrite", "row_delete", "upsert", CDC_UPDATE), faults=())
FIRST, SECOND = (1, 1, 0), (1, 1)   # writer 1's operation 1: its row's two versions


def commit(w, kind):
    return [("Begin", w, kind)] + [(a, w) for a in ("WriteData", "WriteManifests", "WriteManifestList",
                                                    "WriteMetadata", "Swap")]


def test_a_committed_cdc_update_shows_the_last_version_only():
    """Goal: the data file holds both versions, the position delete names the first in that
    same file with the same data sequence number, and a reader sees the second only.
    Method: one uncontended cdc_update; the snapshot read through model/rows.py."""
    s = run(IcebergSpec(CDC), *commit(1, CDC_UPDATE))
    head = snap_of(mget(s.metas, s.cat), mget(s.metas, s.cat).head)
    assert mget(s.content, (1, 1)) == frozenset({FIRST, SECOND})
    assert mget(s.dels, (1, 1)).kind == POSITION and mget(s.dels, (1, 1)).targets == frozenset({((1, 1), FIRST)})
    assert R.dseq_of(head, (1, 1)) == head.seq          # data file and delete: one sequence number
    assert R.live_rows(s, head) == ((0, 1), (0, 2), SECOND)
    assert all(fn(CDC, s) is None for fn in checks.SAFETY_CHECKS.values())


def test_p6_rejects_a_cdc_update_whose_first_version_shows():
    """Goal: P6 can fail on cdc_update: a commit whose position delete does not reach its
    own data file (as a reader that skips deletes of the file's own sequence number sees
    it) is not the operation's effect. Method: the committed state with the delete's
    target taken away; check_isolation names cdc_update."""
    s = run(IcebergSpec(CDC), *commit(1, CDC_UPDATE))
    blind = s._replace(dels=mput(s.dels, (1, 1), mget(s.dels, (1, 1))._replace(targets=frozenset())))
    why = checks.SAFETY_CHECKS["P6 Isolation"](CDC, blind)
    assert why is not None and why.startswith("cdc_update"), why


def test_no_reader_ever_sees_a_first_version():
    """Goal: on the instance TLC checks (tla/MCIcebergCommit_cdc_update.cfg), every property
    holds, the state count is TLC's, and no retained snapshot of any state shows a first
    version, whatever raced the cdc_update (row deletes, upserts, compactions). Method:
    explore with collect=True and read every retained snapshot of the current version."""
    res = explore(IcebergSpec(CDC), collect=True)
    assert res.verdict == "holds", (res.property, res.message)
    expected = json.loads((ROOT / "tla" / "expected.json").read_text())["MCIcebergCommit_cdc_update.cfg"]
    assert res.states == expected["states"]
    committed = 0
    for s in res.reachable:
        for snap in mget(s.metas, s.cat).snaps:
            rows = R.live_rows(s, snap)
            assert not any(len(r) == 3 for r in rows), (snap, rows)
            committed += (1, 1) in snap.files
    assert committed > 0            # the cdc_update's file was live somewhere
