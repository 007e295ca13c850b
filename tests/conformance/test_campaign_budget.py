"""A campaign's budget (issue 14 item 8, conformance/campaign/budget.py): the writers start no
new operation once the proxy injected enough faults or the time is up, and what they did is
still judged whole; the deep campaign records the budget and says the run stopped early."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from icefloe.conformance.campaign.run import run_campaign
from icefloe.conformance.campaign.budget import COUNT_EVERY_S, Budget, Watch, fault_counts
from icefloe.conformance.campaign.deep import part_config, render


class _Proxy:
    def __init__(self):
        self.exchanges = []

    def history(self):
        return list(self.exchanges)

    def inject(self, *labels):
        self.exchanges += [SimpleNamespace(fault=label) for label in labels]


class _Stop:
    def __init__(self):
        self.set_count = 0

    def set(self):
        self.set_count += 1

    def is_set(self):
        return self.set_count > 0


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _watch(budget):
    clock, proxy, stop, lines = _Clock(), _Proxy(), _Stop(), []
    watch = Watch(budget, proxy, stop, "t", out=lambda line, **_: lines.append(line), clock=clock)
    return watch, clock, proxy, stop, lines


def test_fault_counts_split_combined_labels_and_skip_gates():
    """Goal: the budget counts faults exactly as the campaign's figures do. Method: exchanges
    with no fault, a gate, a combined label and plain labels."""
    ex = [SimpleNamespace(fault=f) for f in (None, "gate", "reject:503", "gate+delay:0.01", "reject:503")]
    assert fault_counts(ex) == {"reject:503": 2, "delay:0.01": 1}


def test_the_fault_budget_stops_the_writers_once_spent():
    """Goal: the writers are told to stop once the proxy injected the budget, not before, and
    once only. Method: a fake proxy and an injected clock, ticked as faults accrue."""
    watch, clock, proxy, stop, lines = _watch(Budget(faults=5, progress_s=0))
    proxy.inject("reject:503", "reset", None, "gate")
    watch.tick()
    assert not stop.is_set() and watch.faults == 2 and watch.requests == 4
    proxy.inject("reject:503", "blackout:503", "reset")
    watch.tick()                       # within COUNT_EVERY_S: not counted again yet
    assert not stop.is_set()
    clock.now += COUNT_EVERY_S
    watch.tick()
    assert stop.is_set() and watch.faults == 5 and "fault budget" in watch.stopped
    clock.now += COUNT_EVERY_S
    proxy.inject("reset")
    watch.tick()
    assert stop.set_count == 1 and watch.stopped_at_s == COUNT_EVERY_S
    assert any("start no new operation" in line for line in lines)


def test_the_time_budget_stops_the_writers_and_no_budget_never_does():
    """Goal: a time budget stops the writers when it passes; without a budget only progress is
    printed. Method: the injected clock moved past the budget, with and without one."""
    watch, clock, proxy, stop, _ = _watch(Budget(seconds=60, progress_s=0))
    watch.tick()
    assert not stop.is_set()
    clock.now += 61
    watch.tick()
    assert stop.is_set() and watch.stopped.startswith("time budget")
    watch, clock, proxy, stop, lines = _watch(Budget(progress_s=30))
    for _ in range(10):
        proxy.inject("reject:503")
        clock.now += 30
        watch.op_ended()
        watch.tick()
    assert not stop.is_set() and not watch.stopped
    assert "10 operations ended" in lines[-1] and "10 faults injected" in lines[-1]


def test_a_budget_must_be_positive():
    """Goal: a meaningless budget is a caller mistake. Method: zero faults, negative seconds."""
    with pytest.raises(ValueError):
        Budget(faults=0)
    with pytest.raises(ValueError):
        Budget(seconds=-1)
    assert not Budget().bounded and Budget(faults=1).bounded


def test_a_campaign_stopped_by_its_fault_budget_is_judged_whole():
    """Goal: writers stopped by the budget end their operation, record it, and the history is
    judged valid with every recorded operation. Method: 3 writers x up to 40 operations under
    the deep plan on moto, with a budget of 120 faults."""
    r = run_campaign(3, 40, 7, plan="deep", budget=Budget(faults=120, progress_s=0))
    assert r.stopped.startswith("fault budget") and r.stopped_at_s is not None, r.summary()
    assert sum(r.ops_per_writer) == sum(r.outcomes.values()) < 3 * 40
    assert r.faults_injected >= 120
    assert r.valid is True, r.summary()
    assert "stopped early" in r.summary() and r.to_json()["ops_per_writer"] == list(r.ops_per_writer)


def _part(catalog, **extra):
    return dict(catalog=catalog, finished="2026-01-01 00:00:00", processes=16, commits=100, seed=14, cpus=2,
                outcomes={"committed": 10, "unknown": 2}, unknown_resolved={"committed": 1, "conflict": 1},
                retries=3, faults_injected=100, faults={"reject:503": 100}, requests=300, elapsed_s=10.0,
                judge_s=2.0, load_avg=[3.0, 2.0, 1.0], valid=True,
                tally={"lost": 0, "duplicated": 0, "dangling": 0, "dirty": 0, "other": 0},
                read_errors=0, rerun=f"rerun {catalog}", **extra)


def test_the_deep_campaign_records_its_budget_and_says_it_stopped_early():
    """Goal: a budgeted part is never mistaken for a full 16 x 100 one: its report's
    configuration differs, and the figures say when and why it stopped. Method: part_config
    with and without a budget; render of one stopped and one complete part."""
    assert part_config("s3", 16, 100, 14) != part_config("s3", 16, 100, 14, Budget(faults=52000))
    assert part_config("s3", 16, 100, 14, Budget()) == part_config("s3", 16, 100, 14)
    text = render([_part("s3", stopped="fault budget: 52,001 faults injected (budget 52,000)", stopped_at_s=3000.0,
                         ops_per_writer=[60, 71]), _part("postgresql")])
    assert "s3 part stopped early" in text and "60 to 71 operations, not 100" in text
    assert "postgresql part stopped early" not in text
    assert "`make campaign-deep`" in text
    budgeted = _part("s3", config=part_config("s3", 16, 100, 14, Budget(seconds=3840)))
    assert "`python -m icefloe.conformance.campaign.deep --time-budget 3840`" in render([budgeted, _part("postgresql")])
