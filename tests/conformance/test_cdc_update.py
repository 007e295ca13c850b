"""A row delta that position-deletes a row of a data file it adds itself (cdc_update: a row
inserted and updated within one commit, as Flink's CDC writer does in one checkpoint).

Goal: the lockstep drives a position delete whose data sequence number equals its data
file's (Iceberg spec "Scan Planning": a position delete applies to data files whose data
sequence number is <= its own), so `icefloe conform` judges that rule; and the mutant that
breaks it (position-delete-same-sequence) dies by a read. Method: the delta-sequences
family's programs replayed on icefloe in lockstep (each replay ends as every run does:
every retained snapshot read, the history checker), and once more with the mutant planted
in a fresh process (tests/conformance/test_rows_and_refs.py's `_planted`).
"""
from __future__ import annotations

from dataclasses import replace

from test_rows_and_refs import _planted, family_bounds, run

from icefloe.conformance import adapter as A
from icefloe.conformance.coverage.families import FAMILIES
from icefloe.conformance.suite.readers import row_id
from icefloe.model.state import CDC_UPDATE


def _one(kind: str, w: int = 1):
    return (("Begin", w, kind), ("writes", w), ("Swap", w))


def test_a_cdc_update_shows_the_last_version_of_its_row_only():
    """Goal: after a cdc_update commits, a read shows its row's second version and not the
    first (deleted by position in the data file the same commit added), at main's head and
    after a compaction of the partition and an expiry. Method: cdc_update, rewrite, expire
    at the delta-sequences instance, replayed on icefloe; the rows asserted."""
    b = family_bounds("delta-sequences")
    assert CDC_UPDATE in b.kinds
    with run(replace(b, ops=1), *_one(CDC_UPDATE)) as (lock, _):
        assert lock.ops[(1, 1)].spec.rows == ("1.1.0", "1.1") and lock.ops[(1, 1)].spec.row == "1.1.0"
        assert type(lock.ops[(1, 1)].outcome).__name__ == "Committed"
        assert lock.table.read_current().rows == (row_id((0, 1)), row_id((0, 2)), "1.1")
    with run(b, *_one(CDC_UPDATE), *_one("rewrite"), *_one("expire")) as (lock, _):
        assert [type(lock.ops[(1, k)].outcome).__name__ for k in (1, 2, 3)] == ["Committed"] * 3
        assert lock.table.read_current().rows == (row_id((0, 1)), row_id((0, 2)), "1.1")


def test_position_delete_same_sequence_dies_by_a_read():
    """Goal: the mutant that skips position deletes of the data file's own sequence number
    is killed by conform's lockstep, not only by a unit test. Method: one cdc_update
    replayed with the mutant planted: P6 Isolation (the commit's effect on the rows shows
    the first version, which the model deleted)."""
    b = family_bounds("delta-sequences", ops=1)
    with run(b, *_one(CDC_UPDATE)) as (_, program):
        pass
    assert _planted("position-delete-same-sequence", b, program) == "P6 Isolation"


def test_the_delta_sequences_family_has_cdc_update_classes():
    """Goal: a directed program reaches a cdc_update (conform runs one per class). Method:
    the family's kinds and its classes' windows name it."""
    family = next(f for f in FAMILIES if f.name == "delta-sequences")
    assert CDC_UPDATE in family.KINDS and A.CDC_UPDATE == CDC_UPDATE


def test_engines_without_cdc_update_are_told_why_its_classes_are_out_of_reach():
    """Goal: an engine that does not declare cdc_update (Iceberg-Java's and pyiceberg's
    adapters today) has its classes listed out of reach with the reason, never failed, and
    icefloe's declares it. Method: directed._why on a pairs class (cdc_update racing an
    append, which every engine declares), with each engine's declared capabilities."""
    from icefloe.conformance.coverage import directed
    from icefloe.conformance.engines import java_engine, pyiceberg_engine
    from icefloe.conformance.engines.icefloe_engine import CAPABILITIES
    cls = (CDC_UPDATE, A.APPEND)
    assert A.CDC_UPDATE in CAPABILITIES.operations and directed._why(cls, CAPABILITIES) != \
        "operation cdc_update not supported"
    for caps in (java_engine.CAPABILITIES, pyiceberg_engine.CAPABILITIES):
        assert directed._why(cls, caps) == "operation cdc_update not supported"
