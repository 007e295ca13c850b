"""What a snapshot holds: partitions, delete files applied by data sequence number, and
what a commit changed (spec/PROTOCOL.md 1.6 "Sequence numbers", 7.3 the row-level rows,
10.1 "Readers"; TLA+ module IcebergCommit, section "Rows").

Shared by the transition system (model/iceberg.py: planning and validation) and the
property checks (model/checks/iceberg.py): one reading of "the rows a reader sees" for
both. Readers apply delete files as the Iceberg spec's scan planning does:

- a position delete applies to a data file it names when its data sequence number is
  >= the data file's, and removes the rows it names;
- an equality delete applies to every data file of its partition whose data sequence
  number is strictly smaller than its own, and removes every row (the model's one
  equality key is the partition: an equality delete says "every row of partition p
  written before me is gone", which is what an upsert of the partition writes).
"""
from __future__ import annotations

from collections import Counter

from icefloe.model.state import EQUALITY, POSITION, Meta, Snap, State, ancestors, mget, snap_of


def part_of(s: State, f) -> int:
    """The partition of data file f."""
    return mget(s.parts, f)


def dseq_of(snap: Snap, f) -> int:
    """The data sequence number snapshot `snap` records for data or delete file f."""
    return mget(snap.dseq, f)


def deleted_rows(s: State, snap: Snap, f) -> frozenset:
    """The rows of data file f (live in snap) that snap's delete files delete."""
    out = set()
    rows = mget(s.content, f)
    fseq = dseq_of(snap, f)
    fpart = part_of(s, f)
    for d in snap.deletes:
        dfile = mget(s.dels, d)
        dseq = dseq_of(snap, d)
        if dfile.kind == POSITION:
            if dseq >= fseq:
                out.update(r for g, r in dfile.targets if g == f and r in rows)
        else:
            assert dfile.kind == EQUALITY, dfile
            if dfile.part == fpart and dseq > fseq:
                return rows
    return frozenset(out)


def live_pairs(s: State, snap: Snap) -> frozenset:
    """(data file, row) for every row a reader of snap sees."""
    out = set()
    for f in snap.files:
        gone = deleted_rows(s, snap, f) if snap.deletes else frozenset()
        out.update((f, r) for r in mget(s.content, f) if r not in gone)
    return frozenset(out)


def live_rows(s: State, snap: Snap | None, files=None) -> tuple:
    """The sorted multiset of rows a reader of snap sees (only of `files`, if given)."""
    if snap is None:
        return ()
    out = []
    content = dict(s.content)
    for f in snap.files if files is None else files:
        if f not in snap.files:
            continue
        rows = content[f]
        if snap.deletes:
            gone = deleted_rows(s, snap, f)
            rows = [r for r in rows if r not in gone]
        out.extend(rows)
    return tuple(sorted(out))


def rows_outside(s: State, snap: Snap, part: int) -> tuple:
    """live_rows of snap's data files outside partition `part`."""
    return live_rows(s, snap, [f for f in snap.files if part_of(s, f) != part])


def files_in(s: State, files, part: int) -> frozenset:
    return frozenset(f for f in files if part_of(s, f) == part)


def deletes_in(s: State, deletes, part: int) -> frozenset:
    return frozenset(d for d in deletes if mget(s.dels, d).part == part)


def multiset_minus(a: tuple, b) -> tuple:
    return tuple(sorted((Counter(a) - Counter(b)).elements()))


# -- what a snapshot changed relative to its parent (validation looks at these) -----------

def added_files(parent: Snap, x: Snap) -> frozenset:
    return x.files - parent.files


def removed_files(parent: Snap, x: Snap) -> frozenset:
    return parent.files - x.files


def added_deletes(parent: Snap, x: Snap) -> frozenset:
    return x.deletes - parent.deletes


def between(meta: Meta, head, start) -> list[tuple[Snap, Snap]] | None:
    """(parent, snapshot) for each snapshot on head's ancestry after `start` (newest
    first), or None when start is not an ancestor of head among meta's snapshots
    (PROTOCOL 7.2). Each snapshot's parent is retained: it is the next one on the line."""
    line = ancestors(meta, head)
    if start not in line:
        return None
    out = []
    for sid in line[: line.index(start)]:
        x = snap_of(meta, sid)
        out.append((snap_of(meta, x.parent), x))
    return out


def touches(s: State, parent: Snap, x: Snap, part: int) -> bool:
    """Whether snapshot x added or removed a data file of `part` or added a delete file
    of it (what overlaps an operation scoped to `part`)."""
    if any(part_of(s, f) == part for f in (x.files ^ parent.files)):
        return True
    return any(mget(s.dels, d).part == part for d in added_deletes(parent, x))


def adds_data_in(s: State, parent: Snap, x: Snap, part: int) -> bool:
    return any(part_of(s, f) == part for f in added_files(parent, x))


def adds_delete_for(s: State, parent: Snap, x: Snap, files) -> bool:
    """Whether x added a delete file that may apply to one of `files`: a position
    delete naming one, or an equality delete of one's partition (conservative: its
    sequence number is the snapshot's, newer than any file the operation read)."""
    for d in added_deletes(parent, x):
        dfile = mget(s.dels, d)
        if dfile.kind == POSITION:
            if any(g in files for g, _ in dfile.targets):
                return True
        elif any(part_of(s, f) == dfile.part for f in files):
            return True
    return False


def adds_position_delete_for(s: State, parent: Snap, x: Snap, files) -> bool:
    for d in added_deletes(parent, x):
        dfile = mget(s.dels, d)
        if dfile.kind == POSITION and any(g in files for g, _ in dfile.targets):
            return True
    return False
