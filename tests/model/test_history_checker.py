"""The history checker on hand-written histories: each named anomaly is found, judged
per isolation level, and explained edge by edge; a clean history passes."""
from __future__ import annotations

import json

from icefloe.model.checks.history import (
    ALL, SERIALIZABLE, SNAPSHOT, History, Operation, Read, SnapshotRecord, TableHistory, check_history,
    lineage, render, version_dot,
)


def snap(sid, parent, *files):
    return SnapshotRecord(sid, parent, "", frozenset(files))


def v(loc, prev, main, *snaps):
    return (loc, prev, main, snaps)


def history(versions, current, **rest):
    return History(TableHistory.from_versions(versions, current), **rest)


S0 = snap(0, None, "a")
V0 = v("m0", None, 0, S0)
PARTS = {"a": "p", "b": "p", "c": "p", "x": "p", "y": "q"}


def op(op_id, kind, sid, start=0, outcome="committed", loc=None, read=frozenset(), read_files=(),
       added=(), removed=()):
    return Operation(op_id, kind, outcome, sid, loc, start, read, frozenset(read_files),
                     frozenset(added), frozenset(removed))


def names(verdict):
    return sorted(a.name for a in verdict.anomalies)


def serial_history():
    s1 = snap(1, 0, "a", "b")
    s2 = snap(2, 1, "b", "c")
    return history(
        versions=(V0, v("m1", "m0", 1, S0, s1), v("m2", "m1", 2, S0, s1, s2),
                  v("m2x", "m1", 2, S0, s1, snap(2, 1, "c"))),       # a failed attempt's file
        current="m2",
        operations=(op("T1", "append", 1, 0, added={"b"}),
                    op("T2", "overwrite", 2, 1, read={"p"}, read_files={"a", "b"},
                       added={"c"}, removed={"a"}),
                    op("T3", "append", 3, 1, outcome="conflict", added={"z"})),
        reads=(Read("r1", 1, frozenset({"a", "b"})), Read("r2", 2, frozenset({"b", "c"}))),
        file_partitions=PARTS)


def test_clean_history_is_valid_under_both_levels():
    """Goal: no false alarms. Method: a serial append-then-overwrite history, with a
    failed attempt's dangling version, passes under serializable and snapshot isolation."""
    h = serial_history()
    assert lineage(h) == ["m0", "m1", "m2"]
    for level in (SERIALIZABLE, SNAPSHOT):
        verdict = check_history(h, level)
        assert verdict.valid is True, render(verdict)
        assert verdict.counts["committed"] == 2
    assert json.loads(json.dumps(check_history(h).to_json()))["valid"] is True
    assert '"m1" -> "m2"' in version_dot(h)


def test_stale_overwrite_is_g_single_under_serializable_only():
    """Goal: an overwrite that read before a concurrent append and committed after it is
    G-single under serializable and allowed under snapshot isolation. Method: hand history."""
    s1 = snap(1, 0, "a", "b")
    s2 = snap(2, 1, "b", "c")
    h = history(versions=(V0, v("m1", "m0", 1, S0, s1), v("m2", "m1", 2, S0, s1, s2)), current="m2",
                operations=(op("A", "append", 1, 0, added={"b"}),
                            op("O", "overwrite", 2, 0, read={"p"}, read_files={"a"},
                               added={"c"}, removed={"a"})),
                file_partitions=PARTS)
    sr = check_history(h, SERIALIZABLE)
    assert sr.valid is False and names(sr) == ["G-single"]
    text = render(sr)
    assert "O -rw-> A" in text and "A -co-> O" in text
    assert check_history(h, SNAPSHOT).valid is True


def test_write_skew_is_g2_forbidden_under_serializable_allowed_under_snapshot():
    """Goal: predicate write skew (each read the whole table, each added to a different
    partition) is G2: invalid under serializable, reported as allowed under snapshot."""
    s1 = snap(1, 0, "a", "x")
    s2 = snap(2, 1, "a", "x", "y")
    h = history(versions=(V0, v("m1", "m0", 1, S0, s1), v("m2", "m1", 2, S0, s1, s2)), current="m2",
                operations=(op("T1", "append", 1, 0, read=ALL, read_files={"a"}, added={"x"}),
                            op("T2", "append", 2, 0, read=ALL, read_files={"a"}, added={"y"})),
                file_partitions=PARTS)
    sr = check_history(h, SERIALIZABLE)
    # with commit order, the later writer's anti-dependency closes a one-rw cycle first
    assert sr.valid is False and names(sr) == ["G-single"]
    si = check_history(h, SNAPSHOT)
    assert si.valid is True and [a.name for a in si.allowed] == ["G2"]
    assert "allowed: G2" in render(si)


def test_lost_update_and_resurrection():
    """Goal: two concurrent operations removing the same file is a lost update (first
    committer must win). Method: both compact 'a' from the same start."""
    s1 = snap(1, 0, "b")
    s2 = snap(2, 1, "b", "c")
    h = history(versions=(V0, v("m1", "m0", 1, S0, s1), v("m2", "m1", 2, S0, s1, s2)), current="m2",
                operations=(op("D", "delete", 1, 0, read_files={"a"}, added={"b"}, removed={"a"}),
                            op("R", "rewrite", 2, 0, read_files={"a"}, added={"c"}, removed={"a"})),
                file_partitions=PARTS)
    for level in (SERIALIZABLE, SNAPSHOT):
        assert "lost update" in names(check_history(h, level))


def test_forked_history_lost_and_duplicate_commits():
    """Goal: a fork (two versions current on one base), an acknowledged commit missing
    from the lineage, and a snapshot committed twice are each named."""
    s1 = snap(1, 0, "a", "b")
    s2 = snap(2, 0, "a", "y")
    h = history(versions=(V0, v("m1", "m0", 1, S0, s1), v("m1b", "m0", 2, S0, s2),
                          v("m3", "m1b", 0, S0), v("m4", "m3", 2, S0, s2)),
                current="m4",
                operations=(op("T1", "append", 1, 0, loc="m1", added={"b"}),
                            op("T2", "append", 2, 0, loc="m1b", added={"y"})),
                observed_current=("m1", "m1b"), file_partitions=PARTS)
    found = names(check_history(h))
    assert "forked history" in found and "lost commit" in found and "duplicate commit" in found


def test_failed_commit_landed_and_dirty_reads():
    """Goal: a commit reported failed that is in the lineage (iceberg #3717), a read of an
    uncommitted file and a read of a state that never existed are each named."""
    s1 = snap(1, 0, "a", "b")
    h = history(versions=(V0, v("m1", "m0", 1, S0, s1)), current="m1",
                operations=(op("T1", "append", 1, 0, outcome="conflict", added={"b"}),),
                reads=(Read("r1", 1, frozenset({"a", "b", "zz"})), Read("r2", 1, frozenset({"b"})),
                       Read("r3", 7, frozenset())),
                file_partitions=PARTS)
    verdict = check_history(h)
    found = names(verdict)
    assert found.count("dirty read") == 3 and "failed commit landed" in found
    text = render(verdict)
    assert "uncommitted files ['zz']" in text and "never existed" in text


def test_unknown_outcomes_are_counted_both_ways():
    """Goal: unknown outcomes are resolved against the lineage and counted."""
    s1 = snap(1, 0, "a", "b")
    h = history(versions=(V0, v("m1", "m0", 1, S0, s1)), current="m1",
                operations=(op("U1", "append", 1, 0, outcome="unknown", added={"b"}),
                            op("U2", "append", 5, 0, outcome="unknown", added={"q"})),
                file_partitions=PARTS)
    verdict = check_history(h)
    assert verdict.valid is True
    assert verdict.counts["unknown resolved committed"] == 1
    assert verdict.counts["unknown resolved not committed"] == 1


def test_one_version_may_add_a_chain_of_snapshots_but_not_siblings():
    """Goal: an overwrite committed as two snapshots in one swap (a delete snapshot, then an
    append on top of it, as pyiceberg 0.12 writes it) is linear; two new snapshots in one
    version built on the same parent are a fork. Method: the same base and swap, once with
    a chain 1 <- 2 and once with siblings 1, 2 both on 0."""
    chain = history(versions=(V0, v("m1", "m0", 2, S0, snap(1, 0), snap(2, 1, "y"))), current="m1",
                    operations=(op("T1", "overwrite", 2, 0, loc="m1", read=ALL, read_files={"a"},
                                   added={"y"}, removed={"a"}),),
                    file_partitions=PARTS)
    verdict = check_history(chain)
    assert verdict.valid is True, render(verdict)
    siblings = history(versions=(V0, v("m1", "m0", 2, S0, snap(1, 0, "a", "b"), snap(2, 0, "a", "y"))),
                       current="m1", operations=(op("T1", "append", 2, 0, loc="m1", added={"y"}),),
                       file_partitions=PARTS)
    forks = [a for a in check_history(siblings).anomalies if a.name == "forked history"]
    assert forks and forks[0].ops == ("1", "2"), render(check_history(siblings))


def test_a_commit_whose_version_file_was_overwritten_in_place_is_lost():
    """Goal: the location an engine acknowledged is not proof of a commit. Method: T1 is
    told it committed m1, but a rival overwrote m1 in place (a blind PUT, no conditional
    write) with a version that holds only its own snapshot: T1 is a lost commit even though
    its location is on the lineage; a rollback (no snapshot) still lands by location."""
    h = history(versions=(V0, v("m1", "m0", 2, S0, snap(2, 0, "a", "y")),
                          v("m2", "m1", 0, S0, snap(2, 0, "a", "y"))),
                current="m2",
                operations=(op("T1", "append", 1, 0, loc="m1", added={"b"}),
                            op("T2", "append", 2, 0, loc="m1", added={"y"}),
                            op("R", "rollback", None, 2, loc="m2")),
                file_partitions=PARTS)
    verdict = check_history(h)
    lost = [a.ops for a in verdict.anomalies if a.name == "lost commit"]
    assert lost == [("T1",)], render(verdict)
    assert verdict.counts["committed"] == 2      # T2 and the rollback


def test_a_commit_to_a_branch_is_linear_when_it_descends_from_a_held_snapshot():
    """Goal: a commit to another branch (main's head unchanged) is not a fork, and one whose
    parent no earlier version held is. Method: branch commits 1 <- 2 on top of main's 0
    (each main-preserving version), then one whose parent 7 never existed."""
    branch = history(versions=(V0, v("m1", "m0", 0, S0, snap(1, 0, "a", "b")),
                               v("m2", "m1", 0, S0, snap(1, 0, "a", "b"), snap(2, 1, "a", "b", "c"))),
                     current="m2",
                     operations=(op("B1", "append", 1, 0, loc="m1", added={"b"}),
                                 op("B2", "append", 2, 1, loc="m2", added={"c"})),
                     file_partitions=PARTS)
    verdict = check_history(branch)
    assert verdict.valid is True, render(verdict)
    assert verdict.counts["committed"] == 2
    orphan = history(versions=(V0, v("m1", "m0", 0, S0, snap(1, 7, "a", "b"))), current="m1",
                     operations=(op("B1", "append", 1, 7, loc="m1", added={"b"}),), file_partitions=PARTS)
    forks = [a for a in check_history(orphan).anomalies if a.name == "forked history"]
    assert forks and forks[0].ops == ("1",), render(check_history(orphan))
