"""Goal: orphan removal by age (AgeFiles, then RemoveOrphans while writers work: spec/PROTOCOL.md
12.2) is the same transition system in TLA+ and in the Python model, and the correct protocol
keeps every invariant there. Method: on MCIcebergCommit_orphan_age.cfg, TLC's dumped states
equal the explorer's under the abstraction function (test_agreement.check_agreement); the
explorer's own walk of those bounds finds no violation, and without the threshold (the
orphans-no-threshold variant at the same bounds) it finds one."""
from __future__ import annotations

import dataclasses

import tlc
from abstraction import bounds_from_cfg
from test_agreement import check_agreement

from icefloe.model.explore import explore
from icefloe.model.spec import IcebergSpec

CFG = "MCIcebergCommit_orphan_age.cfg"


def test_orphan_age_state_sets_agree(tlc_result):
    """Goal: TLC and the explorer reach the same states with AgeFiles. Method: compare the sets."""
    check_agreement(CFG, tlc_result)


def test_orphan_age_bounds_reach_removal_while_a_writer_works():
    """Goal: the configuration is not vacuous: orphan removal runs while a writer works and
    deletes an old orphan, and with no threshold at these bounds a property breaks. Method:
    explore, look for such a transition; explore the flawed variant."""
    bounds = bounds_from_cfg(tlc.TLA_DIR / CFG)
    assert bounds.orphan_age and bounds.orphan_runs == 1
    py = explore(IcebergSpec(bounds), collect=True)
    assert py.verdict == "holds"
    from icefloe.model import iceberg
    busy_removals = [(s, t) for s in py.reachable if not iceberg.quiet(s)
                     for label, t in iceberg.successors(bounds, s) if label == ("RemoveOrphans", 0)
                     and t.store != s.store]
    assert busy_removals, "no orphan removal deleted anything while a writer worked"
    flawed = explore(IcebergSpec(dataclasses.replace(bounds, variant="orphans-no-threshold")))
    assert flawed.verdict == "violated" and flawed.property in ("P8 NoDanglingRefs", "P9 CleanupSafe")
