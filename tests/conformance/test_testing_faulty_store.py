"""FaultInjectingStore: rules, seeded plans, and the recorded history."""
from __future__ import annotations

import pytest

from icefloe.impl.io.base import AlreadyExists, NotFound, StoreOutcomeUnknown, StoreUnavailable
from icefloe.conformance.testing.faulty_store import FaultInjectingStore, FaultRule, RandomPlan, RulePlan, StoreCall
from icefloe.impl.io.memory import MemoryStore


def test_fail_before_does_not_apply():
    """A fail_before rule raises StoreUnavailable and the inner store never sees the write."""
    inner = MemoryStore()
    store = FaultInjectingStore(inner, RulePlan([FaultRule("fail_before", kind="put_if_absent")]))
    with pytest.raises(StoreUnavailable):
        store.put_if_absent("memory://b/k", b"v")
    with pytest.raises(NotFound):
        inner.get("memory://b/k")
    assert inner.counts["put_if_absent"] == 0 and store.counts["put_if_absent"] == 1
    store.put_if_absent("memory://b/k", b"v")  # the rule fired once (times=1)
    assert inner.get("memory://b/k") == b"v"


def test_lose_ack_applies_then_reports_unknown():
    """A lose_ack rule applies the write, then raises StoreOutcomeUnknown; the object exists."""
    inner = MemoryStore()
    store = FaultInjectingStore(inner, RulePlan([FaultRule("lose_ack", kind="put_if_absent")]))
    with pytest.raises(StoreOutcomeUnknown):
        store.put_if_absent("memory://b/k", b"v")
    assert inner.get("memory://b/k") == b"v"
    with pytest.raises(AlreadyExists):
        store.put_if_absent("memory://b/k", b"w")
    assert [(c.applied, c.outcome) for c in store.history] == [("ok", "StoreOutcomeUnknown"),
                                                               ("AlreadyExists", "AlreadyExists")]


def test_lose_ack_hides_a_definite_error_too():
    """When the acknowledgement of a rejected write is lost the caller sees only Unknown."""
    inner = MemoryStore()
    inner.put_if_absent("memory://b/k", b"v")
    store = FaultInjectingStore(inner, RulePlan([FaultRule("lose_ack")]))
    with pytest.raises(StoreOutcomeUnknown):
        store.put_if_absent("memory://b/k", b"w")
    assert store.history[0].applied == "AlreadyExists" and store.history[0].outcome == "StoreOutcomeUnknown"


def test_lost_answer_to_a_read_is_unavailable():
    """A read cannot have an unknown effect: a lose_ack on get raises StoreUnavailable."""
    inner = MemoryStore()
    inner.put_if_absent("memory://b/k", b"v")
    store = FaultInjectingStore(inner, RulePlan([FaultRule("lose_ack", kind="get")]))
    with pytest.raises(StoreUnavailable):
        store.get("memory://b/k")
    assert store.get("memory://b/k") == b"v"


def test_rule_matching_by_pattern_and_nth():
    """A rule fires only on its nth..nth+times-1 matching calls, matched by kind and glob."""
    inner = MemoryStore()
    rule = FaultRule("fail_before", kind="put_if_absent", location_pattern="*.metadata.json", nth=2, times=2)
    store = FaultInjectingStore(inner, RulePlan([rule]))
    outcomes = []
    for i in range(5):
        for loc in [f"memory://t/{i}.metadata.json", f"memory://t/{i}.avro"]:
            try:
                store.put_if_absent(loc, b"x")
                outcomes.append("ok")
            except StoreUnavailable:
                outcomes.append("fail")
    # metadata puts are the 1st, 3rd, 5th, ... call; only the 2nd and 3rd of those fail
    assert outcomes == ["ok", "ok", "fail", "ok", "fail", "ok", "ok", "ok", "ok", "ok"]


def test_first_firing_rule_wins_and_all_rules_count():
    """With two rules the first that fires decides; every matching rule counts the call."""
    plan = RulePlan([FaultRule("fail_before", kind="delete", nth=2),
                     FaultRule("lose_ack", kind="delete", nth=1, times=None)])
    assert [plan.decide("delete", "memory://x") for _ in range(3)] == ["lose_ack", "fail_before", "lose_ack"]
    assert plan.decide("get", "memory://x") == "pass"


def test_delay_records_and_passes_through():
    """A delay rule calls the injected sleep and applies the call unchanged."""
    slept: list[int] = []
    inner = MemoryStore()
    store = FaultInjectingStore(inner, RulePlan([FaultRule("delay", times=None)]), sleep_ms=slept.append, delay_ms=7)
    store.put_if_absent("memory://b/k", b"v")
    assert store.get("memory://b/k") == b"v"
    assert slept == [7, 7]
    assert [c.effect for c in store.history] == ["delay", "delay"]


def test_history_records_every_call():
    """history lists every call in order with kind, location, effect, applied and outcome."""
    inner = MemoryStore()
    store = FaultInjectingStore(inner, RulePlan([FaultRule("fail_before", kind="compare_and_swap")]))
    info = store.put_if_absent("memory://b/k", b"v")
    with pytest.raises(StoreUnavailable):
        store.compare_and_swap("memory://b/k", b"w", info.etag)
    with pytest.raises(NotFound):
        store.get("memory://b/missing")
    list(store.list("memory://b/"))
    store.delete("memory://b/k")
    assert store.history == [
        StoreCall(0, "put_if_absent", "memory://b/k", "pass", "ok", "ok"),
        StoreCall(1, "compare_and_swap", "memory://b/k", "fail_before", None, "StoreUnavailable"),
        StoreCall(2, "get", "memory://b/missing", "pass", "NotFound", "NotFound"),
        StoreCall(3, "list", "memory://b/", "pass", "ok", "ok"),
        StoreCall(4, "delete", "memory://b/k", "pass", "ok", "ok"),
    ]


def _run_random(seed: int) -> list[StoreCall]:
    store = FaultInjectingStore(MemoryStore(now_ms=lambda: 0),
                                RandomPlan(seed, fail_before_p=0.3, lose_ack_p=0.3, delay_p=0.1))
    for i in range(40):
        try:
            store.put_if_absent(f"memory://b/{i % 7}", b"x")
        except (StoreUnavailable, StoreOutcomeUnknown, AlreadyExists):
            pass
    return store.history


def test_random_plan_replays_from_its_seed():
    """The same seed and calls give the same faults; another seed gives others; all effects occur."""
    first, again, other = _run_random(7), _run_random(7), _run_random(8)
    assert first == again
    assert first != other
    assert {c.effect for c in first} == {"pass", "fail_before", "lose_ack", "delay"}


def test_random_plan_repr_is_valid_python():
    """A random plan's repr evaluates to a plan with the same parameters and the same repr."""
    plan = RandomPlan(3, lose_ack_p=0.5, kinds=frozenset({"delete", "put_if_absent", "compare_and_swap"}))
    again = eval(repr(plan))
    assert (again.seed, again.lose_ack_p, again.kinds) == (3, 0.5, plan.kinds)
    assert repr(again) == repr(plan)


def test_rule_repr_is_valid_python():
    """A plan's repr evaluates to an equal plan, so a failing run prints as replayable code."""
    plan = RulePlan([FaultRule("lose_ack", kind="put_if_absent", location_pattern="*/v*.json", nth=3, times=None)])
    assert eval(repr(plan)).rules == plan.rules


def test_wrapping_a_local_store_behind_the_router(tmp_path):
    """A fault-injecting LocalStore pinned in the router: a lost ack on a metadata write leaves
    the file on disk, while data writes pass untouched."""
    from icefloe.impl.io.local import LocalStore
    from icefloe.impl.io.router import StoreRouter

    faulty = FaultInjectingStore(LocalStore(), RulePlan([FaultRule("lose_ack", location_pattern="*.metadata.json")]))
    router = StoreRouter(stores={"file": faulty})
    router.put_if_absent(f"file:{tmp_path}/t/data/a.parquet", b"d")
    with pytest.raises(StoreOutcomeUnknown):
        router.put_if_absent(f"file://{tmp_path}/t/metadata/00001.metadata.json", b"m")
    assert (tmp_path / "t" / "metadata" / "00001.metadata.json").read_bytes() == b"m"
    assert router.counts["put_if_absent"] == 2 and faulty.inner.counts["put_if_absent"] == 2
