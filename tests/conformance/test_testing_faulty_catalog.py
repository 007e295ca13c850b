"""FaultInjectingCatalog: lost acknowledgements and delayed swaps around a real catalog."""
from __future__ import annotations

import pytest

from icefloe.impl.catalog.base import TableIdentifier
from icefloe.conformance.testing.faulty_catalog import FaultInjectingCatalog
from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.outcomes import SwapRejected, Swapped, SwapUnknown

T = TableIdentifier(("db",), "t")
U = TableIdentifier(("db",), "u")


def test_lost_acknowledgement_applies_and_answers_unknown():
    """With a lost ack the swap answers SwapUnknown, yet the pointer really moved."""
    cat = FaultInjectingCatalog(MemoryCatalog())
    cat.create(T, "v0")
    cat.lose_acknowledgements()
    result = cat.swap(T, "v0", "v1")
    assert isinstance(result, SwapUnknown) and result.new_location == "v1"
    assert cat.load(T) == "v1"
    assert cat.history[-1].applied == Swapped("v1")
    assert cat.swap(T, "v1", "v2") == Swapped("v2")  # the hook was used up


def test_lost_acknowledgement_of_a_rejection_is_unknown_too():
    """A rejected swap whose answer is lost also reads as SwapUnknown; nothing moved."""
    cat = FaultInjectingCatalog(MemoryCatalog())
    cat.create(T, "v0")
    cat.lose_acknowledgements()
    assert isinstance(cat.swap(T, "stale", "v1"), SwapUnknown)
    assert cat.load(T) == "v0"
    assert isinstance(cat.history[-1].applied, SwapRejected)


def test_hook_targets_one_table():
    """A hook for one identifier leaves swaps of other tables alone."""
    cat = FaultInjectingCatalog(MemoryCatalog())
    cat.create(T, "t0")
    cat.create(U, "u0")
    cat.lose_acknowledgements(count=2, identifier=T)
    assert cat.swap(U, "u0", "u1") == Swapped("u1")
    assert isinstance(cat.swap(T, "t0", "t1"), SwapUnknown)
    assert isinstance(cat.swap(T, "t1", "t2"), SwapUnknown)
    assert cat.swap(T, "t2", "t3") == Swapped("t3")


def test_delayed_swap_is_delivered_later():
    """A delayed swap answers SwapUnknown without moving the pointer; delivering it later
    applies it against the pointer as it is then."""
    cat = FaultInjectingCatalog(MemoryCatalog())
    cat.create(T, "v0")
    cat.delay_swaps()
    assert isinstance(cat.swap(T, "v0", "v1-late"), SwapUnknown)
    assert cat.load(T) == "v0"
    [pending] = cat.pending
    assert cat.deliver(pending) == Swapped("v1-late")
    assert cat.load(T) == "v1-late" and cat.pending == []


def test_delayed_swap_after_the_pointer_moved_is_rejected_on_delivery():
    """When another writer moved the pointer first, the late request is rejected on delivery."""
    cat = FaultInjectingCatalog(MemoryCatalog())
    cat.create(T, "v0")
    cat.delay_swaps()
    cat.swap(T, "v0", "v1-late")
    assert cat.swap(T, "v0", "v1-other") == Swapped("v1-other")
    delivered = cat.deliver(cat.pending[0])
    assert isinstance(delivered, SwapRejected) and delivered.actual_location == "v1-other"
    assert cat.load(T) == "v1-other"
    assert [r.event for r in cat.history] == ["request", "request", "deliver"]


def test_dropped_swap_is_never_delivered():
    """A dropped request disappears and cannot be delivered afterwards."""
    cat = FaultInjectingCatalog(MemoryCatalog())
    cat.create(T, "v0")
    cat.delay_swaps()
    cat.swap(T, "v0", "v1")
    pending = cat.pending[0]
    cat.drop_pending(pending)
    assert cat.load(T) == "v0" and cat.pending == []
    with pytest.raises(KeyError):
        cat.deliver(pending)


def test_a_plain_memory_catalog_has_no_fault_hooks():
    """The implementation's MemoryCatalog is a plain compare-and-swap: the fault hooks
    exist only on the test infrastructure's wrapper."""
    plain = MemoryCatalog()
    for hook in ("lose_acknowledgements", "delay_swaps", "pending", "deliver", "drop_pending", "history"):
        assert not hasattr(plain, hook), hook
