"""The properties of spec/PROPERTIES.md as check functions over a state of the Iceberg
model (icefloe.model.iceberg; Hive's and Hudi's checks live in their model modules).

Each check returns None when the property holds and a one-line explanation when it
does not. The state carries its own history (auxiliary variables `hist`, `acked`,
`deleted`, `consumed`), so a check needs nothing but the state; the explorer runs
SAFETY_CHECKS on every reachable state and TERMINAL_CHECKS on every final state
(the state graph is acyclic, so a liveness property "eventually P" holds under
fairness iff P holds in every final state; see docs/model-tla-mapping.md).
Names match the TLA+ definitions (P1 LinearHistory <-> check_linear_history).
"""
from __future__ import annotations

from collections import Counter

from icefloe.model import rows as R
from icefloe.model.iceberg import SERIALIZABLE, Bounds, current
from icefloe.model.checks.liveness import lone_not_committed, pending_operation
from icefloe.model.state import (
    CONFLICT, APPEND, BRANCH, COMMITTED, DELETE, EXPIRE, FAST_FORWARD, MAIN, NO_SNAP, NOOP, OVERWRITE,
    REWRITE, ROLLBACK, ROW_DELETE, ROW_UPDATE, TAG, TAG_OP, UPSERT, CDC_UPDATE,
    Meta, State, ancestors, chain, meta_obj, mget, reach, reach_all, ref_head, snap_of,
)

BOOTSTRAP_VERSIONS = 2  # hist[0:2] are the bootstrap writer's two appends
REFS = (MAIN, BRANCH, TAG)


def _rows(s: State, files) -> tuple:
    """Every row the data files hold (no delete applied)."""
    content = dict(s.content)
    return tuple(sorted(r for f in files for r in content[f]))


def _ref_snap(meta: Meta, ref: str = MAIN):
    sid = ref_head(meta, ref)
    return None if sid == NO_SNAP else snap_of(meta, sid)


def _head_files(meta: Meta, ref: str = MAIN) -> frozenset:
    snap = _ref_snap(meta, ref)
    return snap.files if snap is not None else frozenset()


def _live(s: State, meta: Meta, ref: str = MAIN) -> tuple:
    """The rows a reader of the ref's head sees (deletes applied)."""
    return R.live_rows(s, _ref_snap(meta, ref))


def _transitions(s: State):
    """(pre, post, post_id) for every pointer change after the bootstrap."""
    for i in range(BOOTSTRAP_VERSIONS, len(s.hist)):
        yield mget(s.metas, s.hist[i - 1]), mget(s.metas, s.hist[i]), s.hist[i]


def check_linear_history(b: Bounds, s: State) -> str | None:
    """P1: the pointer's values form one chain through `prev`; each new snapshot's
    parent is the head of its ref in the version it replaced."""
    if s.hist[-1] != s.cat:
        return f"pointer {s.cat} is not the last swapped version {s.hist[-1]}"
    for i in range(1, len(s.hist)):
        prev, post = s.hist[i - 1], mget(s.metas, s.hist[i])
        if post.prev != prev:
            return f"version {s.hist[i]} was swapped in over {prev}, but its previous is {post.prev}"
    for pre, post, mid in _transitions(s):
        old = {x.id for x in pre.snaps}
        for x in post.snaps:
            want = ref_head(pre, post.op.ref)
            if x.id not in old and x.parent != want:
                return f"snapshot {x.id} (version {mid}) has parent {x.parent}, but {post.op.ref}'s head was {want}"
    return None


def check_no_lost_commit(b: Bounds, s: State) -> str | None:
    """P2: every version acknowledged as committed is in the current version's chain."""
    line = set(chain(s.metas, s.cat))
    lost = sorted(m for m in s.acked if m not in line)
    return f"acknowledged versions {lost} are not in the chain of {s.cat}" if lost else None


def check_no_duplicate_commit(b: Bounds, s: State) -> str | None:
    """P3: no snapshot is applied twice: ids are unique per version and introduced once
    along the history; no row is live twice."""
    introduced: Counter = Counter()
    for i, mid in enumerate(s.hist):
        meta = mget(s.metas, mid)
        ids = [x.id for x in meta.snaps]
        if len(ids) != len(set(ids)):
            return f"version {mid} holds two records of one snapshot id"
        old = {x.id for x in mget(s.metas, s.hist[i - 1]).snaps} if i else set()
        introduced.update(set(ids) - old)
    twice = sorted(sid for sid, n in introduced.items() if n > 1)
    if twice:
        return f"snapshots {twice} were committed more than once"
    for x in current(s).snaps:
        rows = R.live_rows(s, x)
        if len(rows) != len(set(rows)):
            dup = sorted(r for r, n in Counter(rows).items() if n > 1)
            return f"snapshot {x.id} holds rows {dup} twice"
    return None


def check_readers_see_committed(b: Bounds, s: State) -> str | None:
    """P4: a reader (one pointer read, no listing) of any ref sees a committed snapshot and
    no file of an operation that has not committed: every data or delete file visible at
    a ref's head was written by an operation with a version in the pointer's history, and
    none by one that ended in conflict."""
    committed_ops = {(m[0], m[1]) for m in s.hist}
    meta = current(s)
    for ref in (MAIN,) + tuple(name for name, _ in meta.refs):
        snap = _ref_snap(meta, ref)
        if snap is None:
            continue
        for f in sorted(snap.files | snap.deletes if snap.deletes else snap.files):
            if f not in committed_ops:
                return f"readers of {ref} see file {f}, whose operation never committed"
            w, k = f
            if w and s.outcomes[w - 1][k - 1].res == CONFLICT:
                return f"readers of {ref} see file {f} of operation {f}, which ended in conflict"
    return None


def _validations_hold(b: Bounds, s: State, pre: Meta, post: Meta) -> str | None:
    op = post.op
    kind = op.kind
    if kind in (APPEND, EXPIRE, UPSERT, CDC_UPDATE):
        return None
    if kind == TAG_OP:
        if ref_head(pre, TAG) != op.start:
            return f"the tag had moved from {op.start} to {ref_head(pre, TAG)}"
        return None
    if kind == FAST_FORWARD:
        if pre.head != op.start:
            return f"main moved from {op.start} to {pre.head} after it read it"
        if op.start not in ancestors(pre, op.target):
            return f"main's head {op.start} is not an ancestor of {op.target} among the retained snapshots"
        return None
    pairs = R.between(pre, ref_head(pre, op.ref), op.start)
    if pairs is None:
        return f"its starting snapshot {op.start} is not an ancestor of {op.ref}'s head {ref_head(pre, op.ref)}"
    if kind in (DELETE, REWRITE, ROW_DELETE, ROW_UPDATE):
        for _, x in pairs:
            if not op.files <= x.files:
                return f"files {sorted(op.files - x.files)} were no longer live in snapshot {x.id}"
    if kind == REWRITE:
        for p, x in pairs:
            if R.adds_position_delete_for(s, p, x, op.files):
                return f"snapshot {x.id} added a position delete for files it rewrote, {sorted(op.files)}"
    if kind in (ROW_DELETE, ROW_UPDATE):
        for p, x in pairs:
            if R.adds_delete_for(s, p, x, op.files):
                return f"snapshot {x.id} added a delete file for {sorted(op.files)}, whose row it deletes"
            if b.isolation == SERIALIZABLE and R.adds_data_in(s, p, x, op.part):
                return f"snapshot {x.id} added data to partition {op.part}, which its filter reads"
    if kind == OVERWRITE and b.isolation == SERIALIZABLE:
        touching = [x.id for p, x in pairs if R.touches(s, p, x, op.part)]
        if touching:
            return f"snapshots {touching} changed partition {op.part}, which its filter reads"
    if kind == ROLLBACK and pairs:
        return f"main moved from {op.start} to {pre.head} after it read it"
    return None


def check_validation_sound(b: Bounds, s: State) -> str | None:
    """P5: every commit's validations held over all snapshots between its starting
    snapshot and the head of its ref in the version it replaced."""
    for pre, post, mid in _transitions(s):
        why = _validations_hold(b, s, pre, post)
        if why:
            return f"version {mid} ({post.op.kind}) committed although {why}"
    return None


def _other_refs_kept(pre: Meta, post: Meta, moved: tuple) -> str | None:
    for ref in REFS:
        if ref not in moved and ref_head(pre, ref) != ref_head(post, ref):
            return f"moved {ref} from {ref_head(pre, ref)} to {ref_head(post, ref)}"
    return None


def _effect(b: Bounds, s: State, pre: Meta, post: Meta, mid) -> str | None:
    """P6 for one transition: None, or what its effect got wrong."""
    op = post.op
    kind, ref = op.kind, op.ref
    fid = (mid[0], mid[1])
    moved = {TAG_OP: (TAG,), FAST_FORWARD: (MAIN,), ROLLBACK: (MAIN,), EXPIRE: ()}.get(kind, (ref,))
    why = _other_refs_kept(pre, post, moved)
    if why:
        return f"{kind} {mid} {why}"
    if kind in (ROLLBACK, FAST_FORWARD):
        if pre.head != op.start:
            return f"{kind} {mid} read main at {op.start} but replaced {pre.head}"
        if post.head != op.target:
            return f"{kind} {mid} set main to {post.head}, not {op.target}"
        if kind == FAST_FORWARD and op.start not in ancestors(post, op.target):
            return f"fast_forward {mid} moved main from {op.start} to {op.target}, not a descendant"
        return None
    if kind == TAG_OP:
        if ref_head(pre, TAG) != op.start or ref_head(post, TAG) != op.target:
            return f"tag {mid} read the tag at {op.start} and moved it from {ref_head(pre, TAG)} to {ref_head(post, TAG)}, not {op.target}"
        return None
    before, after = _live(s, pre, ref), _live(s, post, ref)
    if kind == APPEND:
        want = tuple(sorted(before + _rows(s, [fid])))
    elif kind == OVERWRITE:
        head = _ref_snap(pre, ref)
        if b.isolation == SERIALIZABLE and op.files != R.files_in(s, head.files, op.part):
            return f"overwrite {mid} read {sorted(op.files)} but replaced {sorted(R.files_in(s, head.files, op.part))}"
        want = tuple(sorted(R.rows_outside(s, head, op.part) + _rows(s, [fid])))
    elif kind == UPSERT:
        want = tuple(sorted(R.rows_outside(s, _ref_snap(pre, ref), op.part) + _rows(s, [fid])))
    elif kind == CDC_UPDATE:
        # The row's last version is added; the first, deleted in the same commit, is not.
        want = tuple(sorted(before + tuple(r for r in _rows(s, [fid]) if r != op.row[1])))
    elif kind == DELETE:
        if not op.files <= _head_files(pre, ref):
            return f"delete {mid} removed {sorted(op.files)}, not all live in {ref_head(pre, ref)}"
        want = R.multiset_minus(before, R.live_rows(s, _ref_snap(pre, ref), op.files))
    elif kind == REWRITE:
        if not op.files <= _head_files(pre, ref):
            return f"rewrite {mid} replaced {sorted(op.files)}, not all live in {ref_head(pre, ref)}"
        want = before
    elif kind in (ROW_DELETE, ROW_UPDATE):
        # DELETE / UPDATE ... WHERE key = r, applied to the version it replaced: every copy
        # of row r goes (an update writes it once more).
        r = op.row[1]
        want = tuple(x for x in before if x != r) + ((r,) if kind == ROW_UPDATE else ())
        want = tuple(sorted(want))
    else:
        assert kind == EXPIRE, kind
        want = before
    if after != want:
        return f"{kind} {mid} turned rows {list(before)} into {list(after)}, expected {list(want)}"
    return None


def check_isolation(b: Bounds, s: State) -> str | None:
    """P6: each commit's effect on the rows of its ref equals its operation applied to
    the version it replaced (serializable: reading that version; snapshot isolation:
    reading its starting snapshot, with what it writes still as it read it)."""
    for pre, post, mid in _transitions(s):
        why = _effect(b, s, pre, post, mid)
        if why:
            return why
    return None


def check_time_travel_immutable(b: Bounds, s: State) -> str | None:
    """P7: a snapshot id means the same snapshot in every committed version."""
    seen: dict = {}
    for mid in s.hist:
        for x in mget(s.metas, mid).snaps:
            if seen.setdefault(x.id, x) != x:
                return f"snapshot {x.id} changed between committed versions"
    return None


def check_no_dangling_refs(b: Bounds, s: State) -> str | None:
    """P8: the current metadata file and every object its snapshots reach exist."""
    if meta_obj(s.cat) not in s.store:
        return f"the pointer names metadata {s.cat}, which is not in storage"
    snaps = current(s).snaps
    if reach_all(snaps) <= s.store:
        return None
    for x in snaps:
        missing = reach(x) - s.store
        if missing:
            return f"snapshot {x.id} references missing objects {sorted(missing)}"
    return None


def check_cleanup_safe(b: Bounds, s: State) -> str | None:
    """P9: nothing reachable from a retained snapshot was ever deleted."""
    snaps = current(s).snaps
    if not reach_all(snaps).isdisjoint(s.deleted):
        for x in snaps:
            bad = reach(x) & s.deleted
            if bad:
                return f"objects {sorted(bad)} reachable from retained snapshot {x.id} were deleted"
    if meta_obj(s.cat) in s.deleted:
        return f"the current metadata {s.cat} was deleted"
    return None


def check_incremental_complete(b: Bounds, s: State) -> str | None:
    """P10: an incremental reader following main's ancestry misses no snapshot that
    main's head has passed through."""
    heads = {mget(s.metas, m).head for m in s.hist}
    missed = sorted(heads - s.consumed)
    return f"the incremental reader never consumed snapshots {missed}" if missed else None


def check_operations_terminate(b: Bounds, s: State) -> str | None:
    """L2 (final states): every operation ended; one that began after faults stopped
    ended committed, in conflict or as a no-op, never unknown."""
    why = pending_operation(s.outcomes)
    if why:
        return why
    for w, row in enumerate(s.outcomes, start=1):
        for k, o in enumerate(row, start=1):
            if o.healed and o.res not in (COMMITTED, CONFLICT, NOOP):
                return f"operation ({w}, {k}) began after faults stopped but ended {o.res}"
    return None


def check_lone_writer_commits(b: Bounds, s: State) -> str | None:
    """L1 (final states): an operation that ran alone after faults stopped committed."""
    return lone_not_committed(s.outcomes, (COMMITTED, NOOP), healed_only=True)


def check_no_spurious_conflict(b: Bounds, s: State) -> str | None:
    """L3: an operation scoped to a partition ends in conflict by a failed validation only
    if a commit in between overlapped its partition (added or removed a data file of it,
    or added a delete file of it) or its starting snapshot left its ref's ancestry.
    Operations on disjoint partitions both commit. (An outcome never changes once
    recorded, so this is checked in every state.)"""
    for w, row in enumerate(s.outcomes, start=1):
        for k, o in enumerate(row, start=1):
            if o.spurious:
                return f"operation ({w}, {k}) ended in conflict although no concurrent commit touched its partition"
    return None


# Checks that read only the pointer's history (hist and the versions it names): their
# verdict is a function of `history_key`, so the explorer caches it across the many
# states that differ only in what in-progress writers are doing.
HISTORY_CHECKS = (
    "P1 LinearHistory", "P3 NoDuplicateCommit",
    "P5 ValidationSound", "P6 Isolation", "P7 TimeTravelImmutable", "P10 IncrementalComplete")


def history_key(s: State) -> tuple:
    return s.hist, tuple(mget(s.metas, m) for m in s.hist), s.consumed


SAFETY_CHECKS = {
    "P1 LinearHistory": check_linear_history,
    "P2 NoLostCommit": check_no_lost_commit,
    "P3 NoDuplicateCommit": check_no_duplicate_commit,
    "P4 ReadersSeeCommitted": check_readers_see_committed,
    "P5 ValidationSound": check_validation_sound,
    "P6 Isolation": check_isolation,
    "P7 TimeTravelImmutable": check_time_travel_immutable,
    "P8 NoDanglingRefs": check_no_dangling_refs,
    "P9 CleanupSafe": check_cleanup_safe,
    "P10 IncrementalComplete": check_incremental_complete,
    "L3 NoSpuriousConflict": check_no_spurious_conflict,
}
TERMINAL_CHECKS = {
    "L1 LoneWriterCommits": check_lone_writer_commits,
    "L2 OperationsTerminate": check_operations_terminate,
}
