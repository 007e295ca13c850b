"""Concurrency campaigns (issue 5 item 5): real writer processes on moto S3 through the fault
proxy, judged afterwards; and the judge itself catching doctored evidence."""
from __future__ import annotations

import dataclasses

import pytest

from icefloe.conformance.campaign.run import main, run_campaign
from icefloe.conformance.campaign.judge import (
    APPEND, COMMITTED, CONFLICT, UNKNOWN, OUTCOMES, judge,
)
from icefloe.model.checks.history import SnapshotRecord, TableHistory, VersionRecord, lineage


@pytest.fixture(scope="module")
def campaign():
    return run_campaign(processes=3, commits=8, seed=3, faults=True)


def test_three_processes_with_faults_judged_valid(campaign):
    """Goal: concurrent writers with injected faults keep the history linear, every acknowledged
    commit exactly once and every committed row. Method: 3 spawned processes x 8 mixed
    operations through the seeded fault proxy, then the history checker and the row replay."""
    r = campaign
    assert r.valid is True, r.summary()
    assert sum(r.outcomes.values()) == 3 * 8
    assert set(r.outcomes) <= set(OUTCOMES)
    assert r.committed >= 1 and r.judgement.snapshots_checked >= 1
    assert sum(r.faults.values()) > 0, r.summary()
    assert r.judgement.verdict.counts["committed"] == r.committed + r.unknown_resolved.get(COMMITTED, 0)
    text = r.summary()
    assert "commits/s" in text and "faults injected" in text and "--seed 3" in text


def _last_committed_append(ev):
    line = lineage(_history(ev))
    return max((o for o in ev.ops if o.outcome == COMMITTED and o.kind == APPEND),
               key=lambda o: line.index(o.committed_location))


def _history(ev):
    from icefloe.conformance.campaign.judge import to_history
    return to_history(ev)


def test_judge_catches_a_lost_acknowledged_commit(campaign):
    """Goal: an acknowledged commit missing from the table is caught. Method: point the
    evidence's final pointer at the version before the last acknowledged append landed."""
    ev = campaign.evidence
    victim = _last_committed_append(ev)
    before = {v.location: v for v in ev.versions}[victim.committed_location].previous
    doctored = dataclasses.replace(ev, table=dataclasses.replace(ev.table, current=before))
    j = judge(doctored)
    assert j.valid is False
    lost = [a for a in j.verdict.anomalies if a.name == "lost commit"]
    assert victim.op_id in {op for a in lost for op in a.ops}, j.render()


def test_judge_catches_a_duplicated_commit(campaign):
    """Goal: a snapshot that lands twice is caught (REGRESSIONS row 5). Method: append two
    versions: one without an acknowledged append's snapshot, then one that adds it again."""
    ev = campaign.evidence
    victim = _last_committed_append(ev)
    cur = {v.location: v for v in ev.versions}[ev.current]
    without = tuple(s for s in cur.snapshot_ids if s != victim.snapshot_id)
    gone = VersionRecord("doctored-1", ev.current, cur.main if cur.main != victim.snapshot_id else None, without)
    again = VersionRecord("doctored-2", "doctored-1", cur.main, cur.snapshot_ids)
    table = TableHistory(ev.versions + (gone, again), ev.table.snapshots, "doctored-2")
    j = judge(dataclasses.replace(ev, table=table))
    assert j.valid is False
    assert "duplicate commit" in j.names(), j.render()


def test_judge_catches_a_lost_row(campaign):
    """Goal: the row replay notices one committed row missing from a data file. Method:
    drop the first row of a file live in the final snapshot."""
    ev = campaign.evidence
    cur = {v.location: v for v in ev.versions}[ev.current]
    head = ev.table.snapshots_of(cur)[cur.main]
    path = sorted(head.files)[0]
    rows = dict(ev.file_rows)
    rows[path] = rows[path][1:]
    j = judge(dataclasses.replace(ev, file_rows=rows))
    assert "lost rows" in j.names(), j.render()


def test_judge_catches_an_unknown_resolved_against_the_lineage(campaign):
    """Goal: an Unknown whose later resolution contradicts the table is caught. Method:
    relabel an acknowledged append Unknown and claim it resolved as not committed."""
    ev = campaign.evidence
    victim = _last_committed_append(ev)
    ops = tuple(dataclasses.replace(o, outcome=UNKNOWN) if o is victim else o for o in ev.ops)
    j = judge(dataclasses.replace(ev, ops=ops, resolutions={victim.op_id: (CONFLICT, None)}))
    assert "unknown resolved inconsistently" in j.names(), j.render()


def test_sqlite_catalog_campaign_is_valid():
    """Goal: the same guarantees when the swap goes through SQLite instead of the S3 pointer.
    Method: 2 processes x 5 operations, faults on the S3 data path only."""
    r = run_campaign(processes=2, commits=5, seed=5, catalog="sqlite")
    assert r.valid is True, r.summary()
    assert sum(r.outcomes.values()) == 10


def test_bad_arguments_are_usage_errors(capsys):
    """Goal: bad bounds are a clear error, exit 2, before any server starts. Method: call both entries."""
    with pytest.raises(ValueError, match="at least 1"):
        run_campaign(processes=0, commits=1)
    with pytest.raises(ValueError, match="catalog"):
        run_campaign(processes=1, commits=1, catalog="hive")
    assert main(["--processes", "0"]) == 2
    assert "at least 1" in capsys.readouterr().err


def _rollback_story(with_append_after_rollback: bool):
    """Append A (f1), overwrite O1 of partition c (f1 -> f2), rollback R to A's snapshot,
    then overwrite O2, which started at A's snapshot before O1, commits (f1 -> f3);
    optionally an append P (f4) to partition c lands between R and O2, unseen by O2."""
    from icefloe.conformance.campaign.judge import Evidence, OpRecord, OVERWRITE, ROLLBACK
    f = {n: f"s3://b/t/data/cat=c/f{n}.parquet" for n in range(1, 5)}

    def snap(sid, parent, files):
        return SnapshotRecord(sid, parent, "", frozenset(files))
    s1, s2 = snap(1, None, {f[1]}), snap(2, 1, {f[2]})
    versions = [("m0", None, None, ()), ("m1", "m0", 1, (s1,)), ("m2", "m1", 2, (s1, s2)),
                ("m3", "m2", 1, (s1, s2))]
    ops = [OpRecord("A", 0, APPEND, COMMITTED, None, "m0", 1, "m1", rows=((1, "c"),), added_files=frozenset({f[1]})),
           OpRecord("O1", 1, OVERWRITE, COMMITTED, 1, "m1", 2, "m2", partition="c", rows=((2, "c"),),
                    read_files=frozenset({f[1]}), removed_files=frozenset({f[1]}), added_files=frozenset({f[2]})),
           OpRecord("R", 1, ROLLBACK, COMMITTED, 2, "m2", None, "m3", rollback_to=1,
                    added_files=frozenset({f[1]}), removed_files=frozenset({f[2]}))]
    head, last = 1, "m3"
    if with_append_after_rollback:
        s4 = snap(4, 1, {f[1], f[4]})
        versions.append(("m4", "m3", 4, (s1, s2, s4)))
        ops.append(OpRecord("P", 3, APPEND, COMMITTED, 1, "m3", 4, "m4", rows=((4, "c"),),
                            added_files=frozenset({f[4]})))
        head, last = 4, "m4"
    kept = {f[4]} if with_append_after_rollback else set()
    s3 = snap(3, head, {f[3]} | kept)
    versions.append(("m5", last, 3, tuple(versions[-1][3]) + (s3,)))
    ops.append(OpRecord("O2", 2, OVERWRITE, COMMITTED, 1, "m1", 3, "m5", partition="c", rows=((3, "c"),),
                        read_files=frozenset({f[1]}), removed_files=frozenset({f[1]}), added_files=frozenset({f[3]})))
    rows = {f[n]: ((n, "c"),) for n in range(1, 5)}
    return Evidence(TableHistory.from_versions(versions, "m5"), tuple(ops), file_rows=rows)


def test_judge_places_a_read_at_the_rollback_that_restored_it():
    """Goal: no false alarm when a rollback restores the very state a writer started from
    (A, B, A again), and still an alarm for a write after that return that the writer missed.
    Method: hand-written evidence, judged with and without an unseen append after the rollback."""
    clean = judge(_rollback_story(False))
    assert clean.valid is True, clean.render()
    missed = judge(_rollback_story(True))
    assert missed.valid is False
    assert "G-single" in missed.names(), missed.render()
