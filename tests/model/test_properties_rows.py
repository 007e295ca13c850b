"""One counterexample per property clause that partitions, row-level deletes and refs added
(spec/PROPERTIES.md, the traceability rows of issue 12): each check must be able to fail.

Method: drive the correct model to a real state and tamper with exactly what the clause
constrains, or take the violating state a flawed variant reaches by its shortest trace;
assert that the named check rejects it (and, for the tampering tests, that the untampered
state passes every check)."""
from __future__ import annotations

from icefloe.model import checks, variants
from icefloe.model.explore import explore
from icefloe.model.iceberg import Bounds
from icefloe.model.spec import IcebergSpec
from icefloe.model.state import BRANCH, TAG, mget, mput, ref_head
from model_helpers import run

REFS = Bounds(writers=1, ops=3, refs=True, kinds=("append", "delete", "expire", "tag", "fast_forward"), faults=())
ROWS = Bounds(writers=2, ops=1, kinds=("row_delete", "row_update", "upsert", "rewrite"), faults=())


def commit(w, kind, *more, writes=("WriteData", "WriteManifests", "WriteManifestList", "WriteMetadata")):
    """The labels of one uncontended commit of `kind` by writer w."""
    return [("Begin", w, kind, *more)] + [(a, w) for a in writes] + [("Swap", w)]


def passes_everything(b, s):
    return all(fn(b, s) is None for fn in checks.SAFETY_CHECKS.values())


def replace_snap(s, snap_id, **changes):
    meta = mget(s.metas, s.cat)
    old = next(x for x in meta.snaps if x.id == snap_id)
    meta = meta._replace(snaps=(meta.snaps - {old}) | {old._replace(**changes)})
    return s._replace(metas=mput(s.metas, s.cat, meta))


def violating_state(name, prop, **bounds):
    """The last state of the variant's shortest trace to a violation of `prop` alone."""
    res = explore(IcebergSpec(variants.get(name).make(**bounds).bounds, only=(prop,)))
    assert res.verdict == "violated", (name, prop)
    return res.trace[-1][1], res.message


def test_check_linear_history_rejects_a_branch_commit_not_on_the_branch_head():
    """Goal: P1 clause 3 reads the head of the commit's own ref. Method: append to main,
    then to branch b; reparent b's new snapshot onto main's head."""
    s = run(IcebergSpec(REFS), *commit(1, "append", "main"), *commit(1, "append", BRANCH))
    assert passes_everything(REFS, s)
    meta = mget(s.metas, s.cat)
    bad = replace_snap(s, ref_head(meta, BRANCH), parent=meta.head)
    assert "b's head was (0, 2)" in checks.check_linear_history(REFS, bad)


def test_check_no_duplicate_commit_rejects_a_row_whose_position_delete_is_lost():
    """Goal: P3 clause 3 counts rows with delete files applied. Method: commit an update
    (the row deleted by position, written again); drop the position delete."""
    s = run(IcebergSpec(ROWS), *commit(1, "row_update"))
    assert passes_everything(ROWS, s)
    bad = replace_snap(s, (1, 1), deletes=frozenset())
    assert "twice" in checks.check_no_duplicate_commit(ROWS, bad)


def test_check_readers_see_committed_rejects_an_uncommitted_file_on_a_branch():
    """Goal: P4 holds for readers of every ref. Method: commit to the branch; leak a file
    no operation committed into the branch's head."""
    s = run(IcebergSpec(REFS), *commit(1, "append", BRANCH))
    assert passes_everything(REFS, s)
    head = ref_head(mget(s.metas, s.cat), BRANCH)
    snap = next(x for x in mget(s.metas, s.cat).snaps if x.id == head)
    bad = replace_snap(s, head, files=snap.files | {(7, 1)})
    assert "readers of b" in checks.check_readers_see_committed(REFS, bad)


def test_check_validation_sound_rejects_a_row_delete_over_a_concurrent_delete_file():
    """Goal: P5's row-delta clause. Method: the state where Spark's DELETE validation let a
    DELETE commit over the UPDATE of its row."""
    s, _ = violating_state("row-delete-ignores-concurrent-deletes", "P5 ValidationSound")
    assert "added a delete file" in checks.check_validation_sound(ROWS, s)


def test_check_validation_sound_rejects_a_compaction_over_a_new_position_delete():
    """Goal: P5's rewrite clause (no new position deletes for the rewritten files)."""
    s, _ = violating_state("rewrite-ignores-new-deletes", "P5 ValidationSound")
    assert "position delete" in checks.check_validation_sound(ROWS, s)


def test_check_isolation_rejects_a_delete_that_leaves_the_updated_row():
    """Goal: P6's row_delete clause (the merge-on-read anomaly, snapshot isolation)."""
    s, msg = violating_state("row-delete-ignores-concurrent-deletes", "P6 Isolation")
    assert msg.startswith("row_delete") and "expected [(0, 2)]" in msg


def test_check_isolation_rejects_rows_a_compaction_resurrects():
    """Goal: P6's rewrite clause with a position delete committed meanwhile."""
    s, msg = violating_state("rewrite-ignores-new-deletes", "P6 Isolation")
    assert msg.startswith("rewrite") and "(0, 1)" in msg.split("into")[1]


def test_check_isolation_rejects_compacted_rows_escaping_an_equality_delete():
    """Goal: P6's rewrite clause with an equality delete committed meanwhile: the data
    sequence number decides."""
    s, msg = violating_state("rewrite-takes-new-sequence", "P6 Isolation")
    assert msg.startswith("rewrite") and "expected [(2, 1)]" in msg


def test_check_isolation_rejects_appended_rows_deleted_by_an_older_upsert():
    """Goal: P6's append clause under sequence numbers (a stale explicit one)."""
    s, msg = violating_state("stale-sequence-number-on-retry", "P6 Isolation")
    assert msg.startswith("append") and "expected" in msg


def test_check_isolation_rejects_an_upsert_that_kept_old_rows():
    """Goal: P6's upsert clause. Method: commit an upsert; drop its equality delete."""
    s = run(IcebergSpec(ROWS), *commit(1, "upsert"))
    assert passes_everything(ROWS, s)
    bad = replace_snap(s, (1, 1), deletes=frozenset())
    assert checks.check_isolation(ROWS, bad).startswith("upsert")


def test_check_isolation_rejects_a_tag_moved_elsewhere_and_a_branch_moved_by_main():
    """Goal: P6's ref clauses: a tag goes where it planned; a commit moves its ref only.
    Method: commit a tag after an append; point the tag at the old head. Commit to main;
    move the branch too."""
    s = run(IcebergSpec(REFS), *commit(1, "append", "main"),
            ("Begin", 1, "tag"), ("WriteMetadata", 1), ("Swap", 1))
    assert passes_everything(REFS, s)
    meta = mget(s.metas, s.cat)
    moved = s._replace(metas=mput(s.metas, s.cat, meta._replace(refs=mput(meta.refs, TAG, (0, 2)))))
    assert checks.check_isolation(REFS, moved).startswith("tag")
    s = run(IcebergSpec(REFS), *commit(1, "append", "main"))
    meta = mget(s.metas, s.cat)
    dragged = s._replace(metas=mput(s.metas, s.cat, meta._replace(refs=mput(meta.refs, BRANCH, (1, 1)))))
    assert "moved b" in checks.check_isolation(REFS, dragged)


def test_checks_p8_p9_reject_files_of_a_tag_deleted_by_expiry():
    """Goal: P8 and P9 hold for every retained snapshot, the tag's included (a file
    reachable from any ref survives). Method: the state where a main-only expiry deleted
    what the tag still reaches; and the correct expiry on the same steps keeps it."""
    s, _ = violating_state("expire-keeps-main-only", "P8 NoDanglingRefs")
    assert "missing objects" in checks.check_no_dangling_refs(REFS, s)
    assert "were deleted" in checks.check_cleanup_safe(REFS, s)
    ok = run(IcebergSpec(REFS), ("Begin", 1, "tag"), ("WriteMetadata", 1), ("Swap", 1),
             *commit(1, "delete", writes=("WriteManifests", "WriteManifestList", "WriteMetadata")),
             ("Begin", 1, "expire"), ("WriteMetadata", 1), ("Swap", 1))
    meta = mget(ok.metas, ok.cat)
    assert ref_head(meta, TAG) == (0, 2) and {x.id for x in meta.snaps} == {(0, 2), (1, 2)}
    assert ("d", 0, 1, 0) in ok.store and passes_everything(REFS, ok)


def test_check_no_spurious_conflict_rejects_a_disjoint_partition_abort():
    """Goal: L3. Method: the state where a validation with no conflict filter aborted an
    overwrite of one partition for an append to the other."""
    s, msg = violating_state("validation-ignores-partitions", "L3 NoSpuriousConflict")
    assert "no concurrent commit touched its partition" in msg
    assert checks.check_no_spurious_conflict(Bounds(partitions=2), s) == msg


# -- the correct protocol on the new instances --------------------------------------------

def test_disjoint_partitions_both_commit_and_overlapping_ones_follow_the_isolation_level():
    """Goal: an overwrite of partition 1 and an append to partition 2 both commit at
    serializable (no spurious conflict); an append to partition 1 fails the overwrite at
    serializable only. Method: the append commits while the overwrite waits at its swap."""
    over = [("Begin", 1, "overwrite", 1), ("WriteData", 1), ("WriteManifests", 1), ("WriteManifestList", 1),
            ("WriteMetadata", 1)]
    tail = [("Swap", 1), ("Retry", 1)]
    for part, isolation, result in ((2, "serializable", "manifests"), (1, "serializable", "conflict"),
                                    (1, "snapshot", "manifests")):
        b = Bounds(writers=2, ops=1, partitions=2, kinds=("append", "overwrite"), faults=(), isolation=isolation)
        s = run(IcebergSpec(b), *over, *commit(2, "append", part), *tail)
        got = s.outcomes[0][0].res if s.writers[0].k == 2 else s.writers[0].phase
        assert got == result, (part, isolation, got)
        assert passes_everything(b, s)


def test_correct_protocol_holds_on_partitions_row_deltas_and_refs():
    """Goal: the correct protocol keeps every property on the new instances, at both
    isolation levels, under lost acknowledgements. Method: exhaustive exploration."""
    cases = [
        dict(writers=2, ops=1, partitions=2, kinds=("append", "overwrite", "delete"), faults=("ack_lost",)),
        dict(writers=2, ops=1, kinds=("row_delete", "row_update", "upsert", "rewrite"), faults=("ack_lost",)),
        dict(writers=2, ops=1, kinds=("row_delete", "row_update", "upsert", "rewrite"), faults=("ack_lost",),
             isolation="snapshot"),
        dict(writers=2, ops=1, partitions=2, kinds=("append", "row_delete", "row_update", "upsert", "rewrite"),
             faults=()),
        dict(writers=1, ops=3, refs=True, kinds=("append", "delete", "expire", "tag", "fast_forward"),
             faults=("ack_lost",)),
    ]
    for kw in cases:
        res = explore(IcebergSpec(Bounds(**kw)))
        assert res.verdict == "holds", (kw, res.property, res.message)
        assert res.states > 1000


def test_fast_forward_is_refused_once_expiry_cut_the_line_to_the_branch():
    """Goal: a fast-forward whose retry finds main's head no longer an ancestor of the
    branch among retained snapshots ends in conflict (found by the explorer: an expiry
    between two appends to the branch and the fast-forward's swap). Method: replay it."""
    b = Bounds(writers=2, ops=2, refs=True, kinds=("append", "expire", "fast_forward"), faults=())
    s = run(IcebergSpec(b), *commit(1, "append", BRANCH), *commit(2, "append", BRANCH),
            ("Begin", 1, "fast_forward"), ("WriteMetadata", 1),
            ("Begin", 2, "expire"), ("WriteMetadata", 2), ("Swap", 2),
            ("Swap", 1), ("Retry", 1))
    assert s.outcomes[0][1].res == "conflict" and passes_everything(b, s)
