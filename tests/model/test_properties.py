"""One hand-built counterexample per property check: each check must be able to fail.

Method: drive the correct model to a real state, then tamper with exactly the part
of the state the property constrains, and assert that the named check (and only a
check, never the explorer's luck) reports it.
"""
from __future__ import annotations

from icefloe.model import checks
from icefloe.model.iceberg import Bounds, current
from icefloe.model.state import (
    CONFLICT, COMMITTED, MAIN, NO_ROW, PENDING, UNKNOWN, Meta, OpInfo, OpResult, Snap, meta_obj,
    mget, mput,
)
from model_helpers import committed_append, run, spec

B = Bounds(writers=2, ops=1)


def appended():
    return run(spec(writers=2, ops=1), *committed_append(1))


def test_correct_state_passes_every_check():
    """Goal: the tampering tests below start from a state that passes. Method: run all checks."""
    s = appended()
    for name, fn in checks.SAFETY_CHECKS.items():
        assert fn(B, s) is None, name


def test_check_linear_history_rejects_fork():
    """Goal: P1 catches a version swapped in over a pointer it was not built on. Method: rewrite prev."""
    s = appended()
    forked = mget(s.metas, s.cat)._replace(prev=(0, 1, 1))
    s = s._replace(metas=mput(s.metas, s.cat, forked))
    assert "previous is" in checks.check_linear_history(B, s)


def test_check_linear_history_rejects_wrong_parent():
    """Goal: P1 catches a snapshot whose parent is not main's head in the replaced version. Method: reparent."""
    s = appended()
    meta = mget(s.metas, s.cat)
    snap = next(x for x in meta.snaps if x.id == (1, 1))
    bad = meta._replace(snaps=(meta.snaps - {snap}) | {snap._replace(parent=(0, 1))})
    s = s._replace(metas=mput(s.metas, s.cat, bad))
    assert "has parent" in checks.check_linear_history(B, s)


def test_check_no_lost_commit_rejects_overwritten_version():
    """Goal: P2 catches an acknowledged version that fell out of the chain. Method: ack a stray version."""
    s = appended()
    stray = mget(s.metas, s.cat)._replace(prev=(0, 1, 1))
    s = s._replace(metas=mput(s.metas, (2, 1, 1), stray), acked=s.acked | {(2, 1, 1)},
                   cat=(1, 1, 1))
    s = s._replace(cat=(1, 1, 1))
    assert "not in the chain" in checks.check_no_lost_commit(B, s._replace(acked=s.acked | {(2, 1, 1)}))


def test_check_no_duplicate_commit_rejects_reapplied_snapshot():
    """Goal: P3 catches a snapshot introduced twice along the history. Method: drop it, re-add it."""
    s = appended()
    meta = mget(s.metas, s.cat)
    without = meta._replace(snaps=frozenset(x for x in meta.snaps if x.id != (1, 1)), head=(0, 2),
                            prev=s.cat)
    again = meta._replace(prev=(9, 1, 1))
    metas = mput(mput(s.metas, (9, 1, 1), without), (9, 1, 2), again)
    s = s._replace(metas=metas, hist=s.hist + ((9, 1, 1), (9, 1, 2)), cat=(9, 1, 2))
    assert "more than once" in checks.check_no_duplicate_commit(B, s)


def test_check_no_duplicate_commit_rejects_duplicate_rows():
    """Goal: P3 catches a row live in two files. Method: give a file the rows of another."""
    s = appended()
    s = s._replace(content=mput(s.content, (1, 1), frozenset({(0, 1)})))
    assert "twice" in checks.check_no_duplicate_commit(B, s)


def test_check_readers_see_committed_rejects_uncommitted_head():
    """Goal: P4 catches a pointer naming a head no committed version had. Method: move main in place."""
    s = appended()
    meta = mget(s.metas, s.cat)
    head = next(x for x in meta.snaps if x.id == meta.head)
    leaked = meta._replace(snaps=(meta.snaps - {head}) | {head._replace(files=head.files | {(2, 1)})})
    leaked_state = s._replace(metas=mput(s.metas, s.cat, leaked))
    assert "never committed" in checks.check_readers_see_committed(B, leaked_state)
    aborted = s._replace(outcomes=((OpResult(CONFLICT, False, False, False),), s.outcomes[1]))
    assert "ended in conflict" in checks.check_readers_see_committed(B, aborted)


def test_check_validation_sound_rejects_stale_delete():
    """Goal: P5 catches a delete committed although its file had been compacted away. Method: forge the op."""
    s = appended()
    meta = mget(s.metas, s.cat)
    s = s._replace(metas=mput(s.metas, s.cat, meta._replace(
        op=OpInfo("delete", (0, 1), frozenset({(0, 1), (9, 9)}), (0, 0), 1, MAIN, NO_ROW))))
    assert "no longer live" in checks.check_validation_sound(B, s)


def test_check_isolation_rejects_resurrected_rows():
    """Goal: P6 catches an operation whose effect differs from applying it to the replaced version.
    Method: record the committed append as a rewrite (which must preserve rows)."""
    s = appended()
    meta = mget(s.metas, s.cat)
    s = s._replace(metas=mput(s.metas, s.cat, meta._replace(
        op=OpInfo("rewrite", (0, 2), frozenset({(0, 1), (0, 2)}), (0, 0), 1, MAIN, NO_ROW))))
    assert "expected" in checks.check_isolation(B, s)


def test_check_isolation_serializable_rejects_stale_overwrite_read():
    """Goal: P6 (serializable) catches an overwrite whose read differs from the replaced version."""
    s = appended()
    meta = mget(s.metas, s.cat)
    s = s._replace(metas=mput(s.metas, s.cat, meta._replace(
        op=OpInfo("overwrite", (0, 2), frozenset({(0, 1)}), (0, 0), 1, MAIN, NO_ROW))))
    assert "read" in checks.check_isolation(B, s)
    snap_b = Bounds(writers=2, ops=1, isolation="snapshot")
    assert "read" not in (checks.check_isolation(snap_b, s) or "")


def test_check_time_travel_immutable_rejects_changed_snapshot():
    """Goal: P7 catches a snapshot id whose record changed between committed versions."""
    s = appended()
    meta = mget(s.metas, s.cat)
    old = next(x for x in meta.snaps if x.id == (0, 1))
    bad = meta._replace(snaps=(meta.snaps - {old}) | {old._replace(files=frozenset())})
    s = s._replace(metas=mput(s.metas, s.cat, bad))
    assert "changed" in checks.check_time_travel_immutable(B, s)


def test_check_no_dangling_refs_rejects_missing_file():
    """Goal: P8 catches a retained snapshot referencing an object not in storage."""
    s = appended()
    s = s._replace(store=s.store - {("d", 1, 1, 0)})
    assert "missing" in checks.check_no_dangling_refs(B, s)
    s = appended()
    s = s._replace(store=s.store - {meta_obj(s.cat)})
    assert "not in storage" in checks.check_no_dangling_refs(B, s)


def test_check_cleanup_safe_rejects_deleted_reachable_file():
    """Goal: P9 catches a deletion of an object a retained snapshot reaches."""
    s = appended()
    s = s._replace(deleted=s.deleted | {("m", 0, 1, 0)})
    assert "were deleted" in checks.check_cleanup_safe(B, s)


def test_check_incremental_complete_rejects_skipped_snapshot():
    """Goal: P10 catches a head of main the incremental reader never consumed."""
    s = appended()
    s = s._replace(consumed=s.consumed - {(1, 1)})
    assert "never consumed" in checks.check_incremental_complete(B, s)


def test_liveness_checks_reject_pending_and_unknown():
    """Goal: L1/L2 (final-state forms) fail on an unfinished op, an unknown after healing,
    and a lone op that did not commit."""
    s = appended()
    pending = s._replace(outcomes=((OpResult(COMMITTED, False, False, False),), (OpResult(PENDING, False, False, False),)))
    assert "never ended" in checks.check_operations_terminate(B, pending)
    unk = s._replace(outcomes=((OpResult(UNKNOWN, False, True, False),), (OpResult(COMMITTED, False, True, False),)))
    assert "ended unknown" in checks.check_operations_terminate(B, unk)
    lone = s._replace(outcomes=((OpResult(CONFLICT, True, True, False),), (OpResult(COMMITTED, False, True, False),)))
    assert "lone operation" in checks.check_lone_writer_commits(B, lone)
    assert checks.check_lone_writer_commits(B, unk) is None



