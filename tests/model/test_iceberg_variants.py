"""Negative controls: every flawed variant is caught with a shortest counterexample
naming a property it is expected to break (spec/PROTOCOL.md "Negative controls")."""
from __future__ import annotations

import pytest

from icefloe.model import variants
from icefloe.model.explore import explore
from icefloe.model.iceberg import ICEBERG_VARIANTS

FLAWED = [name for name in ICEBERG_VARIANTS if name != "correct"]


@pytest.mark.parametrize("name", FLAWED)
def test_iceberg_variant_is_caught(name):
    """Goal: the variant violates one of its declared properties. Method: BFS on the
    variant's own bounds; the first violation found must be among `breaks`."""
    v = variants.get(name)
    res = explore(v.make())
    assert res.verdict == "violated", name
    assert res.property in v.breaks, (name, res.property, res.message)
    steps = len(res.trace) - 1
    assert 0 < steps <= 22, steps     # stale-sequence-number-on-retry: two rival commits land in an append


@pytest.mark.parametrize("name", FLAWED)
def test_iceberg_variant_passes_where_its_flaw_cannot_show(name):
    """Goal: each variant differs from the protocol only by its flaw. Method: with one
    writer, one append and no faults, every variant satisfies every property."""
    res = explore(variants.get(name).make(writers=1, ops=1, kinds=("append",), faults=(),
                                          orphan_runs=0))
    assert res.verdict == "holds", (name, res.property, res.message)


def test_correct_protocol_survives_each_variants_scenario():
    """Goal: the correct protocol is not caught on any flawed variant's bounds.
    Method: explore the correct protocol with each variant's default bounds."""
    for name in FLAWED:
        defaults = variants.get(name).defaults
        res = explore(variants.get("correct").make(**defaults))
        assert res.verdict == "holds", (name, res.property, res.message)
