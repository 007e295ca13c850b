"""Goal: the v3 TLA+ module (tla/IcebergV3.tla) and the v3 model (model/v3.py) are the same
transition system, and each flawed v3 variant fails alike in both. Method: on the correct
configurations, the set of states TLC dumps equals the explorer's reachable states under
the abstraction function (tests/tla/abstraction_v3.py), as test_agreement.py does for v2;
on each variant's configuration, TLC and the explorer name the same first violated
property with a counterexample of the same length."""
from __future__ import annotations

import re

import pytest

import tlc
from abstraction_v3 import abstract, bounds_from_cfg
from test_agreement import _describe_difference

from icefloe.model import v3
from icefloe.model.explore import explore

EXPECTED = tlc.load_expected()
V3_CONFIGS = sorted(c for c, e in EXPECTED.items() if e["module"] == "MCIcebergV3.tla")
CORRECT = [c for c in V3_CONFIGS if EXPECTED[c]["exit"] == tlc.EXIT_OK]
FLAWED = [c for c in V3_CONFIGS if EXPECTED[c]["exit"] == tlc.EXIT_VIOLATION]
TLC_TIMEOUT_S = 600


def cfg_invariants(cfg: str) -> list:
    text = (tlc.TLA_DIR / cfg).read_text()
    block = re.search(r"^INVARIANTS?\b(.*?)(?:^[A-Z]+\b|\Z)", text, re.M | re.S).group(1)
    return [w for w in block.split() if not w.startswith("\\")]


@pytest.mark.parametrize("cfg", [pytest.param(c, marks=[pytest.mark.deep] if EXPECTED[c].get("deep") else [])
                                 for c in CORRECT])
def test_v3_config_state_sets_agree(cfg, tlc_result):
    """Goal: TLC and the explorer reach the same v3 states. Method: compare the sets, the
    counts and the depths (TLC counts the initial state as depth 1)."""
    bounds = bounds_from_cfg(tlc.TLA_DIR / cfg)
    assert bounds.variant == "v3-correct"
    py = explore(v3.V3Spec(bounds), collect=True)
    assert py.verdict == "holds", (py.property, py.message)
    memo: dict = {}
    py_states = {abstract(s, memo) for s in py.reachable}
    assert len(py_states) == py.states == len(py.reachable), "the abstraction merged states"
    res = tlc_result(cfg)
    assert res.exit_code == tlc.EXIT_OK, res.summary()
    tlc_states = set(tlc.parse_dump(res.dump))
    assert len(tlc_states) == res.distinct_states, res.summary()
    assert py_states == tlc_states, _describe_difference(py_states - tlc_states, tlc_states - py_states)
    assert py.states == res.distinct_states == EXPECTED[cfg]["states"]
    assert res.depth == py.depth + 1 == EXPECTED[cfg]["depth"], (res.depth, py.depth)


@pytest.mark.parametrize("cfg", FLAWED)
def test_v3_variant_fails_alike_in_tlc_and_the_explorer(cfg):
    """Goal: each flawed v3 variant breaks the recorded property in TLA+ and in the model,
    which declares it. Method: run TLC (one worker: its counterexample is a shortest one)
    and the explorer on the .cfg's bounds and invariants; compare property and length."""
    exp = EXPECTED[cfg]
    res = tlc.run_tlc(cfg, exp["module"], n_workers=1, timeout_s=TLC_TIMEOUT_S)
    assert (res.exit_code, res.violated) == (tlc.EXIT_VIOLATION, exp["invariant"]), res.summary()
    bounds = bounds_from_cfg(tlc.TLA_DIR / cfg)
    assert bounds.variant == exp["v3_variant"]
    checked = cfg_invariants(cfg)
    only = tuple(p for p in v3.V3Spec(bounds).SAFETY if p.split()[-1] in checked)
    py = explore(v3.V3Spec(bounds, only=only))
    assert py.verdict == "violated" and py.property.split()[-1] == exp["invariant"], (py.property, py.message)
    assert py.property in v3.V3_VARIANT_CASES[bounds.variant][1]
    steps = len(re.findall(r"^State \d+:", res.output, re.M)) - 1
    assert steps == len(py.trace) - 1, (steps, len(py.trace) - 1)


def test_every_v3_variant_has_a_failing_config():
    """Goal: no flawed v3 variant lacks its TLC configuration, and each configuration
    explores the instance the model registers for it. Method: compare with model/v3.py."""
    covered = {EXPECTED[c]["v3_variant"]: bounds_from_cfg(tlc.TLA_DIR / c) for c in FLAWED}
    assert set(covered) == set(v3.V3_VARIANT_CASES)
    for name, bounds in covered.items():
        assert v3.make(**v3.V3_VARIANT_CASES[name][0], variant=name).bounds == bounds, name


def test_v3_abstraction_is_injective_on_a_sample():
    """Goal: the abstraction keeps apart states the explorer tells apart. Method: abstract
    every state of a small correct instance and count."""
    py = explore(v3.make(roles=("cow_delete", "row_update", "append")), collect=True)
    assert len({abstract(s) for s in py.reachable}) == len(set(py.reachable)) == py.states
    assert abstract(py.reachable[0])["outcomes"][0]["spurious"] is tlc.FALSE
