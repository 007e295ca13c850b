"""The Hudi timeline (model/hudi.py): each anomaly of the seed analysis and apache/hudi
#9831 found with a short trace, the knob that removes it, and a safe setting."""
from __future__ import annotations

from dataclasses import replace

import pytest

from icefloe.model import hudi, variants
from icefloe.model.explore import explore

HUDI_VARIANTS = [n for n in variants.VARIANTS if n.startswith("hudi")]


def run(variant: str, prop: str, **bounds):
    return explore(replace(variants.get(variant).make(**bounds), only=(prop,)))


def labels(res) -> list:
    return [lab for lab, _ in res.trace[1:]]


@pytest.mark.parametrize("name", HUDI_VARIANTS)
def test_variant_caught_with_declared_property(name):
    """Goal: every Hudi variant is caught by a property it declares, in a short trace; method: BFS."""
    res = explore(variants.get(name).make())
    assert res.verdict == "violated" and res.property in variants.get(name).breaks
    assert len(res.trace) - 1 <= 8, (name, len(res.trace) - 1)


def test_collision_makes_uncommitted_files_live():
    """Goal: a shared instant makes one writer's uncommitted file live at the other's completion; method: P4 trace."""
    res = explore(variants.get("hudi-collision").make())
    assert res.property == "P4 ReadersSeeCommitted"
    begins = [lab for lab in labels(res) if lab[0] == "Begin"]
    assert len(begins) == 2 and begins[0][3] == begins[1][3]       # the same instant
    final = res.trace[-1][1]
    live_uncommitted = [w for w, wr in enumerate(final.writers, 1) if wr.phase != hudi.DONE]
    assert live_uncommitted and f"({live_uncommitted[0]}, 1)" in res.message


def test_collision_fixed_by_put_if_absent():
    """Goal: put-if-absent instant files remove the dirty read; method: same bounds, P4 holds."""
    res = run("hudi-collision", "P4 ReadersSeeCommitted", put_if_absent=True)
    assert res.verdict == "holds"


def test_collision_rollback_deletes_committed_files():
    """Goal: the loser's rollback deletes the winner's committed files (P9); method: shortest P9 trace."""
    res = run("hudi-collision-rollback", "P9 CleanupSafe")
    assert res.verdict == "violated" and res.property == "P9 CleanupSafe"
    assert [lab[0] for lab in labels(res)].count("Complete") == 2
    final = res.trace[-1][1]
    assert sorted(r for row in final.outcomes for r, _ in row) == ["committed", "conflict"]


def test_concurrent_inserts_duplicate_a_key():
    """Goal: hudi #9831, OCC without a key check commits two rows of one key; method: P3 trace."""
    res = explore(variants.get("hudi-duplicate-keys").make())
    assert res.property == "P3 NoDuplicateCommit"
    assert [lab[0] for lab in labels(res)].count("Complete") == 2
    keys = [k for k, _ in hudi.snapshot_view(res.trace[-1][1])]
    assert keys.count("n") == 2


def test_duplicate_keys_fixed_by_key_check():
    """Goal: the primary-key conflict check removes the duplicates; method: same bounds with pk_check, P3 holds."""
    assert run("hudi-duplicate-keys", "P3 NoDuplicateCommit", pk_check=True).verdict == "holds"


def test_out_of_order_completion_skips_a_commit():
    """Goal: a later instant completing first makes the consumer skip the earlier one; method: P10 trace."""
    res = explore(variants.get("hudi-out-of-order").make())
    assert res.property == "P10 IncrementalComplete"
    done = [res.trace[i][1].writers[lab[1] - 1].t for i, lab in enumerate(labels(res))
            if lab[0] == "Complete"]
    assert done == sorted(done, reverse=True) and len(done) == 2
    assert res.trace[-1][1].watermark == max(done)


def test_out_of_order_fixed_by_lock_and_monotonic_clock():
    """Goal: a table lock with a monotonic clock keeps the consumer complete; method: pessimistic, P10 holds."""
    assert run("hudi-out-of-order", "P10 IncrementalComplete", cc="pessimistic").verdict == "holds"


def test_skewed_clock_defeats_the_lock():
    """Goal: with a lagging clock even a table lock lets the consumer skip; method: P10 trace under cc=pessimistic."""
    res = run("hudi-skewed-clock", "P10 IncrementalComplete")
    assert res.verdict == "violated"
    ts = [lab[3] for lab in labels(res) if lab[0] == "Begin"]
    assert ts == sorted(ts, reverse=True) and ts[0] > ts[1]


def test_read_optimized_view_shows_a_state_never_committed():
    """Goal: after compacting one of two updated file groups the RO view is a new state; method: P4 trace."""
    res = explore(variants.get("hudi-read-optimized").make())
    assert res.property == "P4 ReadersSeeCommitted" and "read-optimized" in res.message
    assert labels(res)[-1][0] == "Compact"
    final = res.trace[-1][1]
    assert hudi.read_optimized_view(final) not in {c.value for c in final.completions}


def test_copy_on_write_has_no_read_optimized_anomaly():
    """Goal: the RO anomaly is merge-on-read's; method: the same single writer on cow, everything holds."""
    res = explore(variants.get("hudi-read-optimized").make(table_type="cow", compactions=0))
    assert res.verdict == "holds", res.message


def test_safe_setting_holds_everything():
    """Goal: monotonic clock, table lock, put-if-absent on cow is safe; method: full search, two ops per writer."""
    res = explore(hudi.make(writers=2, ops=2, kinds=hudi.HUDI_KINDS, cc="pessimistic",
                            put_if_absent=True, pk_check=True))
    assert res.verdict == "holds", res.message
    assert res.final_states > 0 and res.coverage["Complete"] > 0


@pytest.mark.parametrize("kw", list(hudi.knob_grid()),
                         ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_knob_effects(kw):
    """Goal: each knob removes what it promises in every setting; method: whole-graph search of the grid workload."""
    broken = {p.split()[0] for p in hudi.properties_broken(hudi.make(**hudi.GRID_WORKLOAD, **kw))}
    if kw["put_if_absent"]:
        assert not broken & {"P1", "P7"}, broken                 # no shared instants
    else:
        assert {"P1", "P4", "P7"} <= broken, broken              # collisions, whatever the cc
    if kw["cc"] == "pessimistic":
        assert not broken & {"P3", "P5", "P8", "P9"}, broken     # serial writers
    if kw["cc"] == "optimistic" and not kw["pk_check"]:
        assert "P3" in broken                                    # hudi #9831
    if kw["table_type"] == "mor":
        assert "P4" in broken                                    # read-optimized view
    if kw["clock"] == "monotonic" and kw["cc"] == "pessimistic" and kw["put_if_absent"]:
        assert broken <= {"P4"} and ("P4" in broken) == (kw["table_type"] == "mor")
