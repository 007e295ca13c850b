"""P11-P14 on an engine's own v3 history, judged by the model's checks (model/checks/v3.py):
the engine's states (adapter.V3Read, one per committed version, oldest first) are read
into the model's vocabulary (abstraction function: a data file's path is a FileId, a row's
COLUMN value its key, the _row_id the engine reads its id, a DV's 0-based positions the
model's 1-based ones) and the same check functions run over it. Plus the v3 reading of P6
(each commit's effect on the rows is its operation's) from what the suite asked of it.
"""
from __future__ import annotations

from collections import Counter

from icefloe.conformance import adapter as A
from icefloe.model import v3 as V
from icefloe.model.checks import v3 as K

# The checks that read a history of table states alone (P6 needs the operation: `isolation`).
STATE_CHECKS = ("P11 OneLiveDV", "P12 DeletedRowsStayDeleted", "P13 RowIdsUnique", "P14 NextRowIdExact")


def abstract(history: list) -> tuple[V.V3State | None, str | None]:
    """(the model state whose history is the engine's, None) or (None, the P13 finding that
    makes it impossible: a data file whose rows changed their ids between versions)."""
    fids: dict = {}
    content: dict = {}
    metas, hist, prev = {}, [], V.NO_META
    for i, obs in enumerate(history, start=1):
        files = []
        for f in obs.files:
            fid = fids.setdefault(f.path, (len(fids) + 1, 0))
            # An id the engine reads as first-row-id + position is inherited (NO_ID in the
            # model's rows), so a file of an upgraded table, null ids until a v3 commit
            # assigned its first-row-id, keeps one content (spec/PROTOCOL.md 19.8).
            first = f.first_row_id
            rows = tuple(V.Row(value, V.NO_ID if rid is None or (first is not None and rid == first + i) else rid)
                         for i, (value, rid) in enumerate(zip(f.rows, f.row_ids)))
            if content.setdefault(fid, rows) != rows:
                return None, f"data file {f.path} reads _row_ids {[r.id for r in content[fid]]} in one version and " \
                             f"{[r.id for r in rows]} in a later one"
            files.append((fid, V.NO_ID if f.first_row_id is None else f.first_row_id))
        dvs = frozenset(V.DV((i, j, 0), fids.get(d.data_file, (0, -j - 1)), frozenset(p + 1 for p in d.positions))
                        for j, d in enumerate(obs.dvs))
        mid = (i, 0, 0)
        metas[mid] = V.Meta(prev, tuple(sorted(files)), dvs, frozenset(), obs.next_row_id,
                            V.OpInfo("", prev, V.NO_FILE, 0, V.NO_FILE))
        hist.append(mid)
        prev = mid
    state = V.V3State(hist[-1], frozenset(metas.items()), frozenset(content.items()), (), tuple(hist), ())
    return state, None


def judge(history: list) -> tuple[str, str] | None:
    """(property, finding) for the first of P11-P14 the engine's history breaks, or None; the
    finding in the model's words, then which of the engine's files and snapshots they are."""
    state, broken = abstract(history)
    if broken is not None:
        return "P13 RowIdsUnique", broken
    for name in STATE_CHECKS:
        why = K.SAFETY_CHECKS[name](None, state)
        if why is not None:
            return name, why + legend(history, why)
    return None


def legend(history: list, why: str) -> str:
    """Which engine data file and snapshot each model id in `why` stands for (abstract's
    numbering: files in order of first sight, versions from 1)."""
    paths: list = []
    for obs in history:
        paths += [f.path for f in obs.files if f.path not in paths]
    names = [f"data file ({i}, 0) = {p}" for i, p in enumerate(paths, start=1) if f"({i}, 0)" in why]
    names += [f"version ({i}, 0, 0) = snapshot {obs.snapshot_id}" for i, obs in enumerate(history, start=1)
              if f"({i}, 0, 0)" in why]
    return f" [{'; '.join(names)}]" if names else ""


def isolation(pre: A.V3Read, post: A.V3Read, spec: A.OpSpec) -> str | None:
    """P6 (v3 reading, model/checks/v3.check_isolation): the commit's effect on the table's
    rows is its operation applied to the version it replaced: an append adds its rows, a
    row_delete or cow_delete removes every copy of the row, a row_update keeps exactly one,
    a rewrite changes none."""
    if pre.rows is None or post.rows is None:
        return None                       # an unreadable version: P11 or A0 says why
    before, after = Counter(v for v, _ in pre.rows), Counter(v for v, _ in post.rows)
    want = before.copy()
    if spec.kind == A.APPEND:
        want.update(spec.rows)
    elif spec.kind in (A.ROW_DELETE, A.COW_DELETE, A.ROW_UPDATE) and spec.row is not None:
        del want[spec.row]
        if spec.kind == A.ROW_UPDATE:
            want[spec.row] = 1
    if after != want:
        return (f"{spec.kind} {spec.row or ''} leaves rows {sorted(after.elements())}; applied to the version it "
                f"replaced it gives {sorted(want.elements())}")
    return None
