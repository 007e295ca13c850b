"""The format v3 properties of spec/PROPERTIES.md (P11-P14, and P6 and L3 in their v3
reading) as checks over a state of the v3 model (model/v3.py; TLA+ module IcebergV3,
definitions of the same names: P11 OneLiveDV <-> check_one_live_dv).

Each check returns None when the property holds and a one-line explanation when it does
not. The state carries its history (`hist`, `outcomes`), so a check needs nothing else.
"""
from __future__ import annotations

from collections import Counter

from icefloe.model import v3_state as V


def _transitions(s: V.V3State):
    """(pre, post) for every commit after the bootstrap version."""
    for i in range(1, len(s.hist)):
        yield V.meta(s, s.hist[i - 1]), V.meta(s, s.hist[i])


def check_one_live_dv(b, s: V.V3State) -> str | None:
    """P11: at most one live DV per data file in the current version."""
    m = V.meta(s, s.cat)
    per_file = Counter(d.file for d in m.dvs)
    two = sorted(f for f, n in per_file.items() if n > 1)
    return f"data file {two[0]} has {per_file[two[0]]} live DVs in version {s.cat}" if two else None


def check_deleted_rows_stay_deleted(b, s: V.V3State) -> str | None:
    """P12: along the history, a data file's deleted positions only grow (a DV that replaces
    another holds all its positions), and no row deleted from the table is live again."""
    seen: set = set()
    for i, (pre, post) in enumerate(_transitions(s), start=1):
        seen |= set(V.live_keys(s, pre))
        pre_files, post_files = V._dict(pre.files), V._dict(post.files)
        for f in sorted(set(pre_files) & set(post_files)):
            lost = V.deleted_positions(pre, f) - V.deleted_positions(post, f)
            if lost:
                return f"version {s.hist[i]} undeletes positions {sorted(lost)} of data file {f}"
        before = set(V.live_keys(s, pre))
        back = sorted(k for k in set(V.live_keys(s, post)) if k in seen and k not in before)
        if back:
            return f"row {back[0]}, deleted before version {s.hist[i]}, is live again in it"
    return None


def check_row_ids_unique(b, s: V.V3State) -> str | None:
    """P13: over every version the table has had, a _row_id names one row and a row keeps
    one _row_id (unique over the whole history, stable through compaction, copy-on-write
    and updates)."""
    row_of: dict = {}
    id_of: dict = {}
    for mid in s.hist:
        m = V.meta(s, mid)
        for f, i in V.live(s, m):
            key, rid = V.rows_of(s, f)[i - 1].key, V.row_id(s, m, f, i)
            if rid == V.NO_ID:
                continue                # null: an upgraded table's row before ids were assigned
            if row_of.setdefault(rid, key) != key:
                return f"_row_id {rid} names row {row_of[rid]} and row {key} (version {mid})"
            if id_of.setdefault(key, rid) != rid:
                return f"row {key} has _row_id {id_of[key]} and {rid} (version {mid})"
    return None


def check_next_row_id_exact(b, s: V.V3State) -> str | None:
    """P14: each commit's next-row-id is its base's plus the rows of the data files it adds
    (and of an upgraded table's files it assigns first-row-ids to), and each such file's
    first-row-id range lies in between, apart from the others'."""
    for i, (pre, post) in enumerate(_transitions(s), start=1):
        before = V._dict(pre.files)
        unassigned = [f for f, first in post.files if first == V.NO_ID]
        if unassigned:
            return f"data file {unassigned[0]} has no first-row-id after v3 commit {s.hist[i]}"
        added = [(first, len(V.rows_of(s, f)), f) for f, first in post.files
                 if before.get(f, V.NO_ID) == V.NO_ID]
        want = pre.next_row_id + sum(n for _, n, _ in added)
        if post.next_row_id != want:
            return (f"version {s.hist[i]} has next-row-id {post.next_row_id}, its base's "
                    f"{pre.next_row_id} plus the rows added is {want}")
        end = pre.next_row_id
        for first, n, f in sorted(added):
            if first < end or first + n > post.next_row_id:
                return (f"data file {f} of version {s.hist[i]} has first-row-id {first}, outside the "
                        f"ids {end}..{post.next_row_id - 1} its commit assigns")
            end = first + n
    return None


def check_isolation(b, s: V.V3State) -> str | None:
    """P6 (v3 reading): each commit's effect on the table's rows equals its operation
    applied to the version it replaced: append adds its row, row_delete and cow_delete
    remove every copy of the named row, row_update keeps exactly one, rewrite nothing."""
    for i, (pre, post) in enumerate(_transitions(s), start=1):
        op = post.op
        before, after = Counter(V.live_keys(s, pre)), Counter(V.live_keys(s, post))
        if op.kind == V.APPEND:
            want = before + Counter(r.key for r in V.rows_of(s, op.new))
        elif op.kind == V.REWRITE:
            want = before
        else:
            key = V.rows_of(s, op.file)[op.pos - 1].key
            want = before.copy()
            del want[key]
            if op.kind == V.ROW_UPDATE:
                want[key] = 1
        if after != want:
            return (f"version {s.hist[i]} ({op.kind} of {op.file}, position {op.pos}) leaves rows "
                    f"{sorted(after.elements())}; applied to its base it gives {sorted(want.elements())}")
    return None


def check_no_spurious_conflict(b, s: V.V3State) -> str | None:
    """L3 (v3 reading): no operation ended in conflict by a failed validation that no commit
    on the file it names justifies (checked in every state: an outcome never changes)."""
    for w, o in enumerate(s.outcomes, start=1):
        if o.spurious:
            return f"writer {w}'s {s.writers[w - 1].kind} conflicted with no commit on the file it names"
    return None


def check_operations_terminate(b, s: V.V3State) -> str | None:
    """L2 (final states): every operation ended."""
    pending = [w for w, o in enumerate(s.outcomes, start=1) if o.res == V.PENDING]
    return f"writers {pending} never ended their operation" if pending else None


SAFETY_CHECKS = {
    "P11 OneLiveDV": check_one_live_dv,
    "P12 DeletedRowsStayDeleted": check_deleted_rows_stay_deleted,
    "P13 RowIdsUnique": check_row_ids_unique,
    "P14 NextRowIdExact": check_next_row_id_exact,
    "P6 Isolation": check_isolation,
    "L3 NoSpuriousConflict": check_no_spurious_conflict,
}
TERMINAL_CHECKS = {
    "L2 OperationsTerminate": check_operations_terminate,
}
