"""What each operation plans, assumes and does (spec/PROTOCOL.md 5.4 no-ops, 7.3 the
per-operation table, 8 "Refs", 11 "Expiry"; TLA+ module IcebergCommit: Begin's planning,
Validate, Justified, ApplyActions, ExpireCleanup).

Pure functions of the model's values, used by the transition system (model/iceberg.py):

- `plan_operation`: Begin's planning at the starting snapshot (the head of the
  operation's ref): the files or row it names, its rollback/ref target, the rows its new
  data file holds and the delete file it writes; None for a no-op;
- `validate`: the operation's validations over every snapshot committed to its ref since
  it planned (7.2), re-run by every retry;
- `justified`: whether a failed validation had a commit that overlaps the operation's
  partition (L3 NoSpuriousConflict reads it);
- `apply_actions`: the operation as a pure function of the base metadata;
- `expire_cleanup_objects`: what an acknowledged expiry deletes.
"""
from __future__ import annotations

from icefloe.model import rows as R
from icefloe.model.state import (
    APPEND, BRANCH, CDC_UPDATE, DELETE, EQUALITY, EXPIRE, FAST_FORWARD, MAIN, MANIFESTS, METADATA, NO_PART,
    OVERWRITE, POSITION, REWRITE, ROLLBACK, ROW_DELETE, ROW_UPDATE, SERIALIZABLE, SNAPSHOT,
    TAG, TAG_OP, UPSERT, DelFile, Meta, OpInfo, Snap, State, Writer, ancestors, mget, mput, reach,
    ref_head, ref_heads, snap_of,
)


def current(s: State) -> Meta:
    return mget(s.metas, s.cat)


def head_snap(meta: Meta) -> Snap:
    snap = snap_of(meta, meta.head)
    assert snap is not None, f"head {meta.head} not retained"
    return snap


def manifest_obj(wr: Writer, w: int):
    """An append's manifest does not depend on the base: written once, reused."""
    return ("m", w, wr.k, 0) if wr.kind == APPEND else ("m", w, wr.k, wr.attempt)


# -- Begin: planning at the starting snapshot ---------------------------------------------

class Plan:
    """What Begin adds to the writer and to the table's immutable file contents."""
    __slots__ = ("writer", "rows", "delete")

    def __init__(self, writer: Writer, rows=None, delete: DelFile | None = None):
        self.writer, self.rows, self.delete = writer, rows, delete


def plan_operation(b, s: State, w: int, new: Writer) -> Plan | None:
    """Plan `new` (a writer record in phase DATA with kind, part, ref and start set) at
    its starting snapshot; None when there is nothing to do (5.4)."""
    meta = current(s)
    start = snap_of(meta, new.start)
    fid = (w, new.k)
    kind, part = new.kind, new.part
    if kind == APPEND:
        return Plan(new, frozenset({fid}))
    if kind == OVERWRITE:
        return Plan(new._replace(files=R.files_in(s, start.files, part)), frozenset({fid}))
    if kind == DELETE:
        live = R.files_in(s, start.files, part)
        if not live:
            return None
        return Plan(new._replace(files=frozenset({min(live)}), phase=MANIFESTS))
    if kind == REWRITE:
        inputs = R.files_in(s, start.files, part)
        has_deletes = bool(start.deletes) and any(R.deleted_rows(s, start, f) for f in inputs)
        if len(inputs) < 2 and not has_deletes:
            return None
        rows = frozenset(R.live_rows(s, start, inputs))
        mseq = 0 if b.variant == "rewrite-takes-new-sequence" else start.seq
        return Plan(new._replace(files=inputs, mseq=mseq), rows)
    if kind in (ROW_DELETE, ROW_UPDATE):
        pairs = [p for p in R.live_pairs(s, start) if R.part_of(s, p[0]) == part]
        if not pairs:
            return None
        row = min(pairs)
        new = new._replace(files=frozenset({row[0]}), row=row)
        # An update writes the row again under its own id (the row's key; the model
        # tracks keys, not values), in a new data file.
        rows = frozenset({row[1]}) if kind == ROW_UPDATE else None
        return Plan(new, rows, DelFile(POSITION, part, frozenset({row})))
    if kind == UPSERT:
        return Plan(new, frozenset({fid}), DelFile(EQUALITY, part, frozenset()))
    if kind == CDC_UPDATE:
        # The row is written, then written again within the same commit: its first version
        # is deleted by position in the data file this commit adds (the position delete
        # and the data file get one data sequence number: it applies, spec "Scan Planning").
        first = fid + (0,)
        target = (fid, first)
        return Plan(new._replace(row=target), frozenset({first, fid}), DelFile(POSITION, part, frozenset({target})))
    if kind == ROLLBACK:
        if snap_of(meta, start.parent) is None:
            return None
        return Plan(new._replace(target=start.parent, phase=METADATA))
    if kind == EXPIRE:
        if meta.snaps == _retained(meta):
            return None
        return Plan(new._replace(phase=METADATA))
    if kind == TAG_OP:
        if new.start == meta.head:
            return None
        return Plan(new._replace(target=meta.head, phase=METADATA))
    assert kind == FAST_FORWARD, kind
    branch = ref_head(meta, BRANCH)
    if branch == meta.head or meta.head not in ancestors(meta, branch):
        return None
    return Plan(new._replace(target=branch, phase=METADATA))


def starting_snapshot(meta: Meta, kind: str, ref: str):
    """The snapshot an operation reads: the head of its ref (the tag's target for a tag,
    NO_SNAP when the tag does not exist yet)."""
    return ref_head(meta, TAG if kind == TAG_OP else ref)


# -- validation (7.2, 7.3) ------------------------------------------------------------------

def validate(b, s: State, wr: Writer) -> bool:
    """The operation's validations, checked over every snapshot committed to its ref
    between its starting snapshot and the ref's head in the refreshed base."""
    meta = current(s)
    kind = wr.kind
    if kind in (APPEND, EXPIRE, UPSERT, CDC_UPDATE):
        return True     # a cdc_update names no file live before it (Flink's commit validates nothing)
    if kind == TAG_OP:
        return ref_head(meta, TAG) == wr.start and snap_of(meta, wr.target) is not None
    if kind == FAST_FORWARD:
        # Still a fast-forward in the refreshed base: main unmoved, and main's head an
        # ancestor of the target among the retained snapshots (an expiry may have cut
        # the line between them).
        return meta.head == wr.start and wr.start in ancestors(meta, wr.target)
    pairs = R.between(meta, ref_head(meta, wr.ref), wr.start)
    if pairs is None:
        return False                            # start rolled back or expired
    if kind == ROLLBACK:
        return not pairs and snap_of(meta, wr.target) is not None
    if kind == OVERWRITE:
        if b.isolation == SNAPSHOT:
            return True
        if b.variant == "validation-ignores-partitions":
            return not pairs
        return not any(R.touches(s, p, x, wr.part) for p, x in pairs)
    if not all(wr.files <= x.files for _, x in pairs):
        return False                            # a named file was removed meanwhile
    if kind == DELETE:
        return True
    if kind == REWRITE:
        return b.variant == "rewrite-ignores-new-deletes" or not any(
            R.adds_position_delete_for(s, p, x, wr.files) for p, x in pairs)
    assert kind in (ROW_DELETE, ROW_UPDATE), kind
    if not (kind == ROW_DELETE and b.variant == "row-delete-ignores-concurrent-deletes") and any(
            R.adds_delete_for(s, p, x, wr.files) for p, x in pairs):
        return False
    if b.isolation == SERIALIZABLE:
        if b.variant == "validation-ignores-partitions":
            return not any(R.added_files(p, x) for p, x in pairs)
        return not any(R.adds_data_in(s, p, x, wr.part) for p, x in pairs)
    return True


def justified(s: State, wr: Writer) -> bool:
    """A failed validation is justified when the starting snapshot left the ref's
    ancestry or a snapshot in between overlaps the operation's partition (what L3
    NoSpuriousConflict demands; operations scoped to no partition always are)."""
    if wr.part == NO_PART:
        return True
    meta = current(s)
    pairs = R.between(meta, ref_head(meta, wr.ref), wr.start)
    return pairs is None or any(R.touches(s, p, x, wr.part) for p, x in pairs)


# -- actions --------------------------------------------------------------------------------

def _retained(meta: Meta) -> frozenset:
    """Retention (11.2) in the model: the head of every ref."""
    return frozenset(snap_of(meta, h) for h in ref_heads(meta))


def apply_actions(b, s: State, w: int, wr: Writer) -> Meta:
    """The operation's actions as a pure function of the base metadata."""
    base = mget(s.metas, wr.base)
    op = OpInfo(wr.kind, wr.start, wr.files, wr.target, wr.part, wr.ref, wr.row)
    kind = wr.kind
    if kind in (ROLLBACK, FAST_FORWARD):
        return Meta(wr.base, wr.target, base.snaps, op, base.last_seq, base.refs)
    if kind == TAG_OP:
        return Meta(wr.base, base.head, base.snaps, op, base.last_seq, mput(base.refs, TAG, wr.target))
    if kind == EXPIRE:
        return Meta(wr.base, base.head, _retained(base), op, base.last_seq, base.refs)
    head = snap_of(base, base.head if b.variant == "branch-commit-on-main" else ref_head(base, wr.ref))
    seq = base.last_seq + 1
    fid = (w, wr.k)
    mobj = manifest_obj(wr, w)
    files, deletes, manifests = head.files, head.deletes, frozenset({mobj})
    if kind == APPEND:
        files, manifests = head.files | {fid}, head.manifests | {mobj}
    elif kind == OVERWRITE:
        files = (head.files - R.files_in(s, head.files, wr.part)) | {fid}
    elif kind == DELETE:
        files = head.files - wr.files
    elif kind == REWRITE:
        files = (head.files - wr.files) | {fid}
    elif kind == ROW_DELETE:
        deletes, manifests = head.deletes | {fid}, head.manifests | {mobj}
    else:
        assert kind in (ROW_UPDATE, UPSERT, CDC_UPDATE), kind
        files, deletes, manifests = head.files | {fid}, head.deletes | {fid}, head.manifests | {mobj}
    dseq = tuple(sorted((f, mget(head.dseq, f) if f in head.files or f in head.deletes
                         else (wr.mseq or seq)) for f in files | deletes))
    snap = Snap(fid, head.id, files, ("l", w, wr.k, wr.attempt), manifests, seq, deletes, dseq)
    if wr.ref == MAIN:
        return Meta(wr.base, fid, base.snaps | {snap}, op, seq, base.refs)
    return Meta(wr.base, base.head, base.snaps | {snap}, op, seq, mput(base.refs, wr.ref, fid))


def expire_cleanup_objects(b, pre: Meta, post: Meta) -> frozenset:
    """After an acknowledged expiry: what only the expired snapshots reached."""
    expired = pre.snaps - post.snaps
    if b.variant == "expire-deleted-entries":
        by_id = {x.id: x for x in pre.snaps}
        return frozenset(("d", f[0], f[1], 0) for x in expired if x.parent in by_id
                         for f in by_id[x.parent].files - x.files)
    if b.variant == "expire-keeps-main-only":
        kept = [snap_of(post, sid) for sid in ancestors(post, post.head)]
    else:
        kept = post.snaps
    keep = frozenset().union(*(reach(x) for x in kept))
    return frozenset().union(*(reach(x) for x in expired)) - keep


__all__ = ["Plan", "apply_actions", "current", "expire_cleanup_objects", "head_snap", "justified",
           "manifest_obj", "plan_operation", "starting_snapshot", "validate"]
