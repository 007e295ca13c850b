"""Goal: the TLA+ spec and the Python model are the same transition system. Method: on
the small configuration, the set of states TLC dumps equals the Python explorer's set
of reachable states under the abstraction function (tests/tla/abstraction.py), and the
depths agree (TLC counts the initial state as depth 1, the explorer counts it as 0)."""
from __future__ import annotations

import dataclasses

import pytest

import tlc
from abstraction import abstract, bounds_from_cfg

from icefloe.model.explore import explore
from icefloe.model.spec import IcebergSpec

EXPECTED = tlc.load_expected()
SHOW = 3    # states printed from each side on a mismatch


def _describe_difference(py_only: set, tlc_only: set) -> str:
    lines = [f"{len(py_only)} states only in Python, {len(tlc_only)} only in TLC"]
    for title, states in (("Python only", py_only), ("TLC only", tlc_only)):
        for s in sorted(states, key=repr)[:SHOW]:
            lines.append(f"--- {title}:")
            lines.extend(f"    {name} = {value!r}" for name, value in s.fields)
    return "\n".join(lines)


def check_agreement(cfg: str, tlc_result) -> None:
    bounds = bounds_from_cfg(tlc.TLA_DIR / cfg)
    py = explore(IcebergSpec(bounds), collect=True)
    assert py.verdict == "holds", (py.property, py.message)
    memo: dict = {}
    py_states = {abstract(s, memo) for s in py.reachable}
    assert len(py_states) == py.states == len(py.reachable), "the abstraction merged states"

    res = tlc_result(cfg)
    assert res.exit_code == tlc.EXIT_OK, res.summary()
    dumped = tlc.parse_dump(res.dump)
    tlc_states = set(dumped)
    # This TLC build writes every state twice to the dump when it checks liveness.
    assert len(tlc_states) == res.distinct_states, (len(dumped), res.summary())

    assert py_states == tlc_states, _describe_difference(py_states - tlc_states,
                                                         tlc_states - py_states)
    assert py.states == res.distinct_states
    assert res.depth == py.depth + 1, (res.depth, py.depth)


# The CI configurations: the classic one (one partition, no deletes, no refs, every
# fault, with the liveness properties), one per feature of issue 12, and cdc_update (a
# position delete of a data file of its own commit, issue 30).
SMALL_CONFIGS = ("MCIcebergCommit_small.cfg", "MCIcebergCommit_partitions.cfg",
                 "MCIcebergCommit_deletes.cfg", "MCIcebergCommit_refs.cfg", "MCIcebergCommit_cdc_update.cfg")


@pytest.mark.parametrize("cfg", SMALL_CONFIGS)
def test_small_config_state_sets_agree(cfg, tlc_result):
    """Goal: TLC and the explorer reach the same states (CI size), for the classic model
    and for partitions, row-level deletes and refs. Method: compare the sets."""
    check_agreement(cfg, tlc_result)


@pytest.mark.deep
def test_large_config_state_sets_agree(tlc_result):
    """Goal: the same on every kind, fault and orphan removal. Method: compare sets."""
    check_agreement("MCIcebergCommit_large.cfg", tlc_result)


def test_abstraction_is_injective_on_a_sample():
    """Goal: the abstraction keeps apart states the explorer tells apart (bool vs int,
    NamedTuple vs tuple). Method: abstract the states of a small instance and count."""
    bounds = bounds_from_cfg(tlc.TLA_DIR / "MCIcebergCommit_cleanup_after_unknown.cfg")
    py = explore(IcebergSpec(dataclasses.replace(bounds, variant="correct")), collect=True)
    assert len({abstract(s) for s in py.reachable}) == len(set(py.reachable)) == py.states
    s0 = py.reachable[0]
    a0 = abstract(s0)
    assert a0["faultsOn"] in (tlc.TRUE, tlc.FALSE) and a0["faultsUsed"] == 0
    assert a0["writers"][0]["lone"] is tlc.FALSE
