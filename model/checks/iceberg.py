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

from icefloe.model.iceberg import SERIALIZABLE, Bounds, current
from icefloe.model.checks.liveness import lone_not_committed, pending_operation
from icefloe.model.state import (
    CONFLICT, APPEND, COMMITTED, DELETE, EXPIRE, NOOP, OVERWRITE, REWRITE, ROLLBACK,
    Meta, State, ancestors, chain, meta_obj, mget, reach, snap_of,
)

BOOTSTRAP_VERSIONS = 2  # hist[0:2] are the bootstrap writer's two appends


def _rows(s: State, files) -> tuple:
    content = dict(s.content)
    return tuple(sorted(r for f in files for r in content[f]))


def _head_files(meta: Meta) -> frozenset:
    snap = snap_of(meta, meta.head)
    return snap.files if snap is not None else frozenset()


def _transitions(s: State):
    """(pre, post, post_id) for every pointer change after the bootstrap."""
    for i in range(BOOTSTRAP_VERSIONS, len(s.hist)):
        yield mget(s.metas, s.hist[i - 1]), mget(s.metas, s.hist[i]), s.hist[i]


def check_linear_history(b: Bounds, s: State) -> str | None:
    """P1: the pointer's values form one chain through `prev`; each new snapshot's
    parent is the head of main in the version it replaced."""
    if s.hist[-1] != s.cat:
        return f"pointer {s.cat} is not the last swapped version {s.hist[-1]}"
    for i in range(1, len(s.hist)):
        prev, post = s.hist[i - 1], mget(s.metas, s.hist[i])
        if post.prev != prev:
            return f"version {s.hist[i]} was swapped in over {prev}, but its previous is {post.prev}"
    for pre, post, mid in _transitions(s):
        old = {x.id for x in pre.snaps}
        for x in post.snaps:
            if x.id not in old and x.parent != pre.head:
                return f"snapshot {x.id} (version {mid}) has parent {x.parent}, but main's head was {pre.head}"
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
        rows = _rows(s, x.files)
        if len(rows) != len(set(rows)):
            dup = sorted(r for r, n in Counter(rows).items() if n > 1)
            return f"snapshot {x.id} holds rows {dup} twice"
    return None


def check_readers_see_committed(b: Bounds, s: State) -> str | None:
    """P4: a reader (one pointer read, no listing) sees a committed snapshot and no file
    of an operation that has not committed: every visible file was written by an
    operation with a version in the pointer's history, and none by one that ended in conflict."""
    committed_ops = {(m[0], m[1]) for m in s.hist}
    for f in sorted(_head_files(current(s))):
        if f not in committed_ops:
            return f"readers see file {f}, whose operation never committed"
        w, k = f
        if w and s.outcomes[w - 1][k - 1].res == CONFLICT:
            return f"readers see file {f} of operation {f}, which ended in conflict"
    return None


def _assumptions_hold(b: Bounds, s: State, pre: Meta, post: Meta) -> str | None:
    op = post.op
    if op.kind in (APPEND, EXPIRE):
        return None
    line = ancestors(pre, pre.head)
    if op.start not in line:
        return f"its starting snapshot {op.start} is not an ancestor of {pre.head}"
    between = [snap_of(pre, sid) for sid in line[: line.index(op.start)]]
    if op.kind in (DELETE, REWRITE):
        for x in between:
            if not op.files <= x.files:
                return f"files {sorted(op.files - x.files)} were no longer live in snapshot {x.id}"
    if op.kind == OVERWRITE and b.isolation == SERIALIZABLE and between:
        return f"snapshots {[x.id for x in between]} added data matching its filter"
    if op.kind == ROLLBACK and between:
        return f"main moved from {op.start} to {pre.head} after it read it"
    return None


def check_validation_sound(b: Bounds, s: State) -> str | None:
    """P5: every commit's assumptions held over all snapshots between its starting
    snapshot and the head of the version it replaced."""
    for pre, post, mid in _transitions(s):
        why = _assumptions_hold(b, s, pre, post)
        if why:
            return f"version {mid} ({post.op.kind}) committed although {why}"
    return None


def check_isolation(b: Bounds, s: State) -> str | None:
    """P6: each commit's effect on the table's rows equals its operation applied to the
    version it replaced (serializable: reading that version; snapshot isolation: reading
    its starting snapshot, with its named deletes still live)."""
    for pre, post, mid in _transitions(s):
        op = post.op
        before, after = _rows(s, _head_files(pre)), _rows(s, _head_files(post))
        w, k = mid[0], mid[1]
        if op.kind == APPEND:
            want = tuple(sorted(before + _rows(s, [(w, k)])))
        elif op.kind == OVERWRITE:
            if b.isolation == SERIALIZABLE and op.files != _head_files(pre):
                return f"overwrite {mid} read {sorted(op.files)} but replaced {sorted(_head_files(pre))}"
            want = _rows(s, [(w, k)])
        elif op.kind == DELETE:
            if not op.files <= _head_files(pre):
                return f"delete {mid} removed {sorted(op.files)}, not all live in {pre.head}"
            gone = Counter(_rows(s, op.files))
            want = tuple(sorted((Counter(before) - gone).elements()))
        elif op.kind == REWRITE:
            if not op.files <= _head_files(pre):
                return f"rewrite {mid} replaced {sorted(op.files)}, not all live in {pre.head}"
            want = before
        elif op.kind == ROLLBACK:
            if pre.head != op.start:
                return f"rollback {mid} read main at {op.start} but replaced {pre.head}"
            want = _rows(s, _head_files(post))
            if post.head != op.target:
                return f"rollback {mid} set main to {post.head}, not {op.target}"
        else:
            assert op.kind == EXPIRE
            want = before
        if after != want:
            return f"{op.kind} {mid} turned rows {list(before)} into {list(after)}, expected {list(want)}"
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
    for x in current(s).snaps:
        missing = reach(x) - s.store
        if missing:
            return f"snapshot {x.id} references missing objects {sorted(missing)}"
    return None


def check_cleanup_safe(b: Bounds, s: State) -> str | None:
    """P9: nothing reachable from a retained snapshot was ever deleted."""
    for x in current(s).snaps:
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
}
TERMINAL_CHECKS = {
    "L1 LoneWriterCommits": check_lone_writer_commits,
    "L2 OperationsTerminate": check_operations_terminate,
}
