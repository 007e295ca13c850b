"""REGRESSIONS.md rows 11 and 12 (Hudi) as replay programs (docs/regressions.md).

Goal: what Hudi's timeline gets wrong is shown on a real timeline writer (files on a
MemoryStore, instants by a millisecond clock, files tied to commits by name), and the
reference implementation under the same interleaving keeps the corresponding Iceberg
property. Row 11 (key uniqueness) is not an Iceberg claim: Iceberg promises no primary
key, so the reference's two rows of one key are correct there; the row is shown on the
Hudi writer and the model's `hudi-duplicate-keys` variant only. Method: fixed step
sequences; the model variants through the explorer.
"""
from __future__ import annotations

import itertools

import pytest

from icefloe.conformance.engines.flawed_hudi import CC_OPTIMISTIC, HudiTable, IncrementalConsumer
from icefloe.impl.io.memory import MemoryStore
from icefloe.model import variants
from icefloe.model.explore import explore
from regression_programs import Run, violations


def hudi_table(cc=CC_OPTIMISTIC):
    return HudiTable(MemoryStore(), "memory://warehouse/db/h", cc=cc)


def ids():
    counter = itertools.count(1)
    return lambda: f"{next(counter):08x}-0000"


def same_ms(ms=1000):
    return lambda: ms


def step_to(write, phase):
    for _ in range(8):
        if write.phase == phase:
            return
        write.step()
    raise AssertionError(phase)


def test_row11_concurrent_inserts_duplicate_a_key_on_the_timeline():
    """Goal: hudi #9831 on the timeline writer: OCC on file groups lets two concurrent inserts
    of one new key both commit. Method: both begin (index lookup: key absent), both complete."""
    t, new_id = hudi_table(), ids()
    clocks = iter((1000, 1001))
    w1 = t.new_write(1, ["n"], lambda: next(clocks), new_id)
    w1.step()
    w2 = t.new_write(2, ["n"], lambda: 1001, new_id)
    w2.step()
    assert w1.run().status == "committed" and w2.run().status == "committed"
    assert t.read().count("n") == 2, "Hudi's key uniqueness (its P3 reading) is broken"


def test_row11_reference_makes_no_uniqueness_claim():
    """Goal: the same interleaving on icefloe commits both rows, which Iceberg allows (no primary
    key); every Iceberg property holds. Method: two appends of one id, interleaved."""
    run = Run(None).play((("append", 1, ("n",)), ("to", 1, "swap"), ("append", 2, ("n",)), ("to", 2, "swap"),
                          ("finish", 1), ("finish", 2), ("read", "r")))
    assert run.reads["r"][-1][1] == ("n", "n")
    assert violations(run) == {}


def test_row12_instant_collision_makes_uncommitted_files_live():
    """Goal: two writers draw the same millisecond; one completes and the other's files, never
    committed, are live (P4 ReadersSeeCommitted). Method: both begin at ms 1000, writer 2 writes
    its data and crashes, writer 1 completes; read."""
    t, new_id = hudi_table(), ids()
    w1 = t.new_write(1, ["a"], same_ms(), new_id)
    w2 = t.new_write(2, ["b"], same_ms(), new_id)
    w1.step()
    w2.step()
    step_to(w2, "manifests")            # its data file is written; then it crashes
    assert w1.run().status == "committed"
    assert w1.instant == w2.instant
    assert t.read() == ["a", "b"], "writer 2 never completed, yet its row is live"


def test_row12_reference_same_clock_reads_only_committed():
    """Goal: on icefloe a shared clock reading cannot tie files to the wrong commit: readers see
    only committed snapshots. Method: writer 2 writes its data and crashes, writer 1 commits."""
    run = Run(None).play((("append", 1, ("a",)), ("append", 2, ("b",)), ("to", 2, "manifests"),
                          ("finish", 1), ("read", "r")))
    assert run.reads["r"][-1][1] == ("a",)
    assert violations(run) == {}


def test_row12_out_of_order_completion_skips_a_commit():
    """Goal: the instant that began first completes last, below the consumer's watermark, and is
    never consumed (P10 IncrementalComplete). Method: begin 1 then 2, complete 2, poll, complete 1, poll."""
    t, new_id = hudi_table(), ids()
    consumer = IncrementalConsumer(t)
    w1 = t.new_write(1, ["a"], same_ms(1000), new_id)
    w2 = t.new_write(2, ["b"], same_ms(1001), new_id)
    w1.step()
    w2.step()
    assert w2.run().status == "committed"
    assert consumer.poll() == ["b"]
    assert w1.run().status == "committed"
    assert consumer.poll() == []
    assert t.read() == ["a", "b"] and sorted(consumer.consumed) == ["b"]


def test_row12_reference_incremental_reader_misses_nothing():
    """Goal: the same interleaving on icefloe: the later-begun commit lands first, the other
    retries on top of it, and an incremental reader following main's snapshots sees both.
    Method: begin 1 then 2, finish 2, incremental read, finish 1, incremental read."""
    run = Run(None).play((("append", 0, ("z",)), ("finish", 0), ("incremental", "c"),
                          ("append", 1, ("a",)), ("append", 2, ("b",)), ("finish", 2),
                          ("incremental", "c"), ("finish", 1), ("incremental", "c")))
    assert sorted(run.incremental["c"][1]) == ["a", "b", "z"]
    assert violations(run) == {}


@pytest.mark.parametrize("name,row,prop", [("hudi-duplicate-keys", 11, "P3 NoDuplicateCommit"),
                                           ("hudi-collision", 12, "P4 ReadersSeeCommitted"),
                                           ("hudi-out-of-order", 12, "P10 IncrementalComplete")])
def test_model_variant_shows_the_row(name, row, prop):
    """Goal: the model's Hudi variant for the row is caught by the explorer with that property.
    Method: breadth-first search restricted to the property."""
    from dataclasses import replace
    res = explore(replace(variants.get(name).make(), only=(prop,)))
    assert res.verdict == "violated" and res.property == prop
