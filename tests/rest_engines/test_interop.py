"""Interop under concurrency (issue 13 item 5), the bounded share: icefloe and pyiceberg
writers racing on one table through `icefloe serve` with commit faults at the server (and
on S3, storage faults at the proxy), judged afterwards by the history checker; and a
flawed server in its place, which the same judge must condemn. Iceberg-Java joins them in
tests/java/test_interop_java.py; the longer run is `make interop`."""
from __future__ import annotations

import pytest

from icefloe.conformance.interop.run import run_interop
from icefloe.conformance.interop.writers import ICEFLOE, PYICEBERG
from icefloe.conformance.testing import rest_faults as F

CLEAN = {"lost": 0, "duplicated": 0, "dangling": 0, "dirty": 0, "other": 0}


def check_valid(result, engines):
    assert result.valid is True, result.summary()
    assert result.tally() == CLEAN, result.summary()
    for engine in engines:
        figures = result.per_engine[engine]
        assert figures["landed"] > 0, result.summary()
        assert sum(v for k, v in figures["faults"].items() if " " not in k) > 0, result.summary()
        assert figures["unknown_unresolved"] == 0, result.summary()
    committed = sum(f["outcomes"].get("committed", 0) for f in result.per_engine.values())
    assert result.judgement.verdict.counts["committed"] >= committed


@pytest.mark.parametrize("storage", ["local", "s3"])
def test_icefloe_and_pyiceberg_race_on_one_table_under_commit_faults(storage):
    """Goal: writers of two engines on one table through icefloe serve lose, duplicate and
    dirty nothing under server commit faults (and S3 faults). Method: 2 icefloe + 2 pyiceberg
    writer processes x 5 operations, half their commit requests faulted; judge the store."""
    result = run_interop(2, 2, 0, 5, seed=11, rate=0.5, storage=storage)
    check_valid(result, (ICEFLOE, PYICEBERG))
    kinds = set()
    for figures in result.per_engine.values():
        kinds |= {k for k in figures["faults"] if " " not in k}
    assert len(kinds) >= 3, result.summary()
    if storage == "s3":
        assert sum(result.s3_faults.values()) > 0, result.summary()


def test_a_server_that_reapplies_a_keyed_replay_is_condemned():
    """Goal: the interop judge can fail. Method: the same race against a flawed server
    (rest_flawed replay-reapplies: an Idempotency-Key replay runs the commit again, iceberg-go
    #1603) with every fault an 'applied, then 5xx': icefloe's replay meets 409 although its
    commit landed, so it cleans up what the table names; the judge must say so."""
    result = run_interop(2, 2, 0, 4, seed=12, rate=0.6, weights={F.FAIL_AFTER: 1.0},
                         server_variant="replay-reapplies")
    assert result.valid is False, result.summary()
    names = set(result.judgement.names()) | {a.name for a in result.extra_anomalies}
    # cleaned up after the 409 (a failed commit that landed, dangling), or committed again
    # under a new snapshot id (its first landing unattributed, its rows twice)
    assert names & {"failed commit landed", "dangling reference", "duplicate or resurrected rows", "lost rows",
                    "unattributed commit", "duplicate commit"}, names


def test_black_box_operations_are_placed_by_their_op_id_and_a_second_landing_is_named():
    """Goal: the placement of black-box operations finds what the checker cannot see by
    snapshot id. Method: a hand-made history where one op id tags snapshots landed in two
    versions (a retry that committed again under a new id) and a rollback moves main back;
    attribute() must name the duplicate and place the rollback at its version."""
    from icefloe.conformance.campaign.judge import APPEND, COMMITTED, ROLLBACK, Evidence, OpRecord
    from icefloe.conformance.interop.evidence import attribute
    from icefloe.model.checks.history import SnapshotRecord, TableHistory
    s1 = SnapshotRecord(1, None, "append", frozenset({"/t/data/cat=a/f1.parquet"}))
    s2 = SnapshotRecord(2, 1, "append", frozenset({"/t/data/cat=a/f1.parquet", "/t/data/cat=a/f2.parquet"}))
    entries = [("v0", None, None, []), ("v1", "v0", 1, [s1]), ("v2", "v1", 2, [s1, s2]), ("v3", "v2", 1, [s1, s2])]
    ops = (OpRecord("w1.0", 1, APPEND, COMMITTED, rows=((1, "a"),)),
           OpRecord("w1.1", 1, ROLLBACK, COMMITTED, rollback_to=1))
    ev = Evidence(TableHistory.from_versions(entries, "v3"), ops)
    placed, extra = attribute(ev, {1: PYICEBERG}, {1: "w1.0", 2: "w1.0"})
    assert [a.name for a in extra] == ["duplicate commit"] and "w1.0" in extra[0].ops
    append, rollback = placed.ops
    assert (append.snapshot_id, append.committed_location, append.base_location) == (1, "v1", "v0")
    assert (rollback.committed_location, rollback.start_snapshot_id) == ("v3", 2)
    assert rollback.removed_files == frozenset({"/t/data/cat=a/f2.parquet"})


def test_a_black_box_rollback_is_placed_at_its_version_though_an_icefloe_noop_names_that_version():
    """Goal: a compaction that found nothing to do read a version it did not make, maybe
    another engine's rollback; its record must not hide that rollback from its placement (CI
    stop 26: the no-op's record named the version as committed, the rollback stayed unplaced,
    was judged as reading the whole table before the first commit, and a G-single was
    reported against a valid history). Method: pyiceberg appends f1, icefloe appends f2,
    pyiceberg rolls back to f1 alone, and icefloe's rewrite is a no-op at that version,
    recorded as the writers record it (outcome_fields); placement and judge must find one
    valid history."""
    from icefloe.conformance.campaign.judge import APPEND, COMMITTED, REWRITE, ROLLBACK, Evidence, OpRecord, judge
    from icefloe.conformance.campaign.writer import outcome_fields
    from icefloe.impl.outcomes import Committed
    from icefloe.conformance.interop.evidence import attribute
    from icefloe.model.checks.history import SnapshotRecord, TableHistory
    f1, f2 = "/t/data/cat=a/f1.parquet", "/t/data/cat=a/f2.parquet"
    s1 = SnapshotRecord(1, None, "append", frozenset({f1}), added_files=frozenset({f1}))
    s2 = SnapshotRecord(2, 1, "append", frozenset({f1, f2}), added_files=frozenset({f2}))
    entries = [("v0", None, None, []), ("v1", "v0", 1, [s1]), ("v2", "v1", 2, [s1, s2]), ("v3", "v2", 1, [s1, s2])]
    ops = (OpRecord("w1.0", 1, APPEND, COMMITTED, start_snapshot_id=1, base_location="v1", snapshot_id=2,
                    committed_location="v2", attempts=1, rows=((2, "a"),), added_files=frozenset({f2})),
           OpRecord("w1.1", 1, REWRITE, base_location="v3", **outcome_fields(Committed(None, 0, "v3"))),
           OpRecord("w2.0", 2, APPEND, COMMITTED, rows=((1, "a"),), committed_location="v1"),
           OpRecord("w2.1", 2, ROLLBACK, COMMITTED, rollback_to=1, committed_location="v3"))
    ev = Evidence(TableHistory.from_versions(entries, "v3"), ops, file_rows={f1: ((1, "a"),), f2: ((2, "a"),)})
    placed, extra = attribute(ev, {1: ICEFLOE, 2: PYICEBERG}, {1: "w2.0"})
    assert extra == []
    rollback = next(o for o in placed.ops if o.op_id == "w2.1")
    assert (rollback.committed_location, rollback.base_location, rollback.start_snapshot_id) == ("v3", "v2", 2)
    judgement = judge(placed)
    assert judgement.valid is True, judgement.render()


def test_an_acknowledged_black_box_rollback_is_placed_at_the_version_its_engine_named():
    """Goal: two rollbacks to one target are told apart by what their engine said. Method:
    an Unknown rollback that landed first (v3) and an acknowledged one that named v5; the
    acknowledged one, placed first, must take v5, not the first move to its target."""
    from icefloe.conformance.campaign.judge import APPEND, COMMITTED, ROLLBACK, UNKNOWN, Evidence, OpRecord
    from icefloe.conformance.interop.evidence import attribute
    from icefloe.model.checks.history import SnapshotRecord, TableHistory
    f1, f2, f3 = (f"/t/data/cat=a/f{i}.parquet" for i in (1, 2, 3))
    s1 = SnapshotRecord(1, None, "append", frozenset({f1}))
    s2 = SnapshotRecord(2, 1, "append", frozenset({f1, f2}))
    s3 = SnapshotRecord(3, 1, "append", frozenset({f1, f3}))
    entries = [("v0", None, None, []), ("v1", "v0", 1, [s1]), ("v2", "v1", 2, [s1, s2]),
               ("v3", "v2", 1, [s1, s2]), ("v4", "v3", 3, [s1, s2, s3]), ("v5", "v4", 1, [s1, s2, s3])]
    ops = (OpRecord("w1.0", 1, APPEND, COMMITTED, rows=((1, "a"),)),
           OpRecord("w1.1", 1, APPEND, COMMITTED, rows=((2, "a"),)),
           OpRecord("w1.2", 1, APPEND, COMMITTED, rows=((3, "a"),)),
           OpRecord("w2.0", 2, ROLLBACK, UNKNOWN, rollback_to=1, started_s=1.0),
           OpRecord("w3.0", 3, ROLLBACK, COMMITTED, rollback_to=1, committed_location="v5", started_s=2.0))
    ev = Evidence(TableHistory.from_versions(entries, "v5"), ops)
    placed, _ = attribute(ev, {1: PYICEBERG, 2: PYICEBERG, 3: PYICEBERG}, {1: "w1.0", 2: "w1.1", 3: "w1.2"})
    at = {o.op_id: (o.committed_location, o.base_location) for o in placed.ops}
    assert at["w3.0"] == ("v5", "v4") and at["w2.0"] == ("v3", "v2"), at
