"""Readers in lockstep (spec/PROTOCOL.md 10 "Readers"): the rows the engine returns, now,
at a snapshot and since a snapshot, against the rows of the model's snapshots.

Reader labels: `("ReadCurrent", 0)`, `("ReadAt", 0, (w, k))`, `("ReadIncremental", 0,
(w, k))`, with model snapshot ids (mapped to the engine's through `Lockstep.snapshot_id`).
After every step the table's current rows and main's head are compared as well
(`check_rows`, `check_head`). A read that fails is P8 (the engine cannot read what it committed).
"""
from __future__ import annotations

from icefloe.conformance import adapter as A
from icefloe.conformance.violation import AGREEMENT, Violation
from icefloe.model import iceberg
from icefloe.model import rows as R
from icefloe.model.checks import history as H
from icefloe.model.state import APPEND, OVERWRITE, ancestors, snap_of

READ_CURRENT, READ_AT, READ_INCREMENTAL, READ_FILTERED = "ReadCurrent", "ReadAt", "ReadIncremental", "ReadFiltered"
# The reads the random search draws; filtered reads are made at the end of every program
# (Lockstep.read_retained), one per comparison, so that planning's pruning meets every
# operator at a value the table holds (where an off-by-one in a bound drops a file).
DRAWN_READS = (READ_CURRENT, READ_AT, READ_INCREMENTAL)
READ_LABELS = DRAWN_READS + (READ_FILTERED,)
FILTER_OPS = ("<", "<=", ">", ">=", "=", "!=")


def row_id(fid) -> str:
    """The engine's row for a model row (a FileId, or a cdc_update's first version): "w.k"
    ("w.k.0")."""
    return ".".join(str(x) for x in fid)


class Readers:
    def __init__(self, lock):
        self.lock = lock
        self.reads: list = []                 # H.Read, for the history checker
        self.time_travel: dict = {}           # engine snapshot id -> rows first read there
        self._current = None                  # the last read of the current snapshot
        self._current_key = None              # (engine's snapshot id, model's head) at that read

    def labels(self) -> list:
        """Every reader step the engine's capabilities allow in the model's state."""
        lock = self.lock
        meta = iceberg.current(lock.model)
        out = [(READ_CURRENT, 0)]
        if A.READ_AT in lock.caps.reads:
            out += [(READ_AT, 0, s.id) for s in sorted(meta.snaps) if s.id in lock.snapshot_id]
        if A.READ_INCREMENTAL in lock.caps.reads:
            out += [(READ_INCREMENTAL, 0, sid) for sid in ancestors(meta, meta.head) if sid in lock.snapshot_id]
        return out + self.filtered_labels()

    def filtered_labels(self) -> list:
        """Reads of main's head with a filter `column op value`, every operator: on the row
        column at the median row the head holds, and on the partition column at partition
        1 (a partitioned table). Empty without the capability or before the first row."""
        lock = self.lock
        if A.READ_FILTERED not in lock.caps.reads:
            return []
        meta = iceberg.current(lock.model)
        head = iceberg.head_snap(meta)
        live = sorted(R.live_rows(lock.model, head), key=row_id)
        if head.id not in lock.snapshot_id or not live:
            return []
        out = [(READ_FILTERED, 0, head.id, A.COLUMN, op, live[len(live) // 2]) for op in FILTER_OPS]
        if lock.bounds.partitions > 1:
            out += [(READ_FILTERED, 0, head.id, A.PART_COLUMN, op, 1) for op in FILTER_OPS]
        return out

    def filtered_rows(self, snap, column: str, op: str, value) -> tuple:
        """The model's rows of `snap` whose `column` compares so with `value` (row ids as the
        strings the engine stores, partitions as numbers)."""
        def key(r):
            return (row_id(r), row_id(value)) if column == A.COLUMN else (R.part_of(self.lock.model, r), value)
        test = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
                ">=": lambda a, b: a >= b, "=": lambda a, b: a == b, "!=": lambda a, b: a != b}[op]
        return tuple(sorted(row_id(r) for r in R.live_rows(self.lock.model, snap) if test(*key(r))))

    def rows(self, files) -> tuple:
        """Every row of the data files (an incremental append read applies no deletes)."""
        content = dict(self.lock.model.content)
        return tuple(sorted(row_id(r) for f in files for r in content[f]))

    def rows_at(self, snap) -> tuple:
        """The rows a reader of the model's snapshot sees: its delete files applied by
        data sequence number (model/rows.py)."""
        return tuple(sorted(row_id(r) for r in R.live_rows(self.lock.model, snap)))

    def _appended(self, meta, sid) -> bool:
        """Whether an incremental (append) reader takes snapshot `sid`'s rows: an append,
        or an overwrite that removed nothing (its partition was empty): the spec's
        `append` operation is "only data files were added and no files were removed",
        and icefloe and pyiceberg record such an overwrite so."""
        kind = self.lock.kind_of.get(sid)
        if kind == APPEND:
            return True
        if kind != OVERWRITE:
            return False
        snap = snap_of(meta, sid)
        parent = snap_of(meta, snap.parent)
        return parent is not None and parent.files <= snap.files

    def read(self, label) -> None:
        lock = self.lock
        lock.stats.reads += 1
        meta = iceberg.current(lock.model)
        name = label[0]
        try:
            if name == READ_CURRENT:
                got = lock.table.read_current()
                want = self.rows_at(iceberg.head_snap(meta))
                prop = "P6 Isolation"
            elif name == READ_FILTERED:
                _, _, sid, column, op, value = label
                literal = row_id(value) if column == A.COLUMN else value
                got = lock.table.read_filtered(lock.snapshot_id[sid], column, op, literal)
                want = self.filtered_rows(snap_of(meta, sid), column, op, value)
                prop = AGREEMENT
            elif name == READ_AT:
                got = lock.table.read_at(lock.snapshot_id[label[2]])
                want = self.rows_at(snap_of(meta, label[2]))
                first = self.time_travel.setdefault(got.snapshot_id, got.rows)
                if first != got.rows:
                    raise Violation("P7 TimeTravelImmutable", f"snapshot {got.snapshot_id} read {got.rows}, "
                                    f"earlier {first}", first, got.rows)
                prop = "P7 TimeTravelImmutable"
            else:
                line = ancestors(meta, meta.head)
                between = line[: line.index(label[2])]
                got = lock.table.read_incremental(lock.snapshot_id[label[2]])
                want = self.rows([s for s in between if self._appended(meta, s)])
                prop = "P10 IncrementalComplete"
        except Violation:
            raise
        except Exception as e:  # noqa: BLE001 - an engine that cannot read what it committed
            raise Violation("P8 NoDanglingRefs", f"{name} failed: {type(e).__name__}: {e}", "rows", repr(e)) from e
        if got.rows != want:
            raise Violation(prop, f"{name}{label[2:]}: the model's rows are {list(want)}, the engine's "
                            f"{list(got.rows)}", want, got.rows)
        if got.files is not None and name in (READ_CURRENT, READ_AT):
            # the history checker's reads see a whole snapshot (a filtered read plans a part)
            self.reads.append(H.Read(f"r{len(self.reads) + 1}", got.snapshot_id, got.files))

    def invalidate(self) -> None:
        """The next check_rows reads in full: this step may have deleted objects without
        moving the head (an operation ended: cleanup, an expiry's deletes; orphan removal)."""
        self._current_key = None

    def check_rows(self) -> None:
        """After every step: the table's current rows are the model's. An engine that can
        name its current snapshot cheaply (`current_snapshot_id()`, optional) is read in
        full only when that or the model's head changed since the last full read, or when
        the step may have deleted objects (`invalidate`): a snapshot's rows do not change
        (P7), but its files can be lost while it stays the head."""
        lock = self.lock
        meta = iceberg.current(lock.model)
        peek = getattr(lock.table, "current_snapshot_id", None)
        try:
            if peek is not None and self._current is not None:
                if (peek(), meta.head) == self._current_key:
                    return
            got = lock.table.read_current()
        except Exception as e:  # noqa: BLE001 - an engine that cannot read what it committed
            raise Violation("P8 NoDanglingRefs", f"reading the current snapshot failed: {type(e).__name__}: {e}",
                            "rows", repr(e)) from e
        want = self.rows_at(iceberg.head_snap(meta))
        if got.rows != want:
            raise Violation("P6 Isolation", f"current rows: the model's {list(want)}, the engine's {list(got.rows)}",
                            want, got.rows)
        self._current, self._current_key = got, (got.snapshot_id, meta.head)

    def check_head(self) -> None:
        """After check_rows: main's head is the model's."""
        lock = self.lock
        meta = iceberg.current(lock.model)
        got = self._current
        engine_head = lock.snapshot_id.get(meta.head)
        if engine_head is not None and got.snapshot_id != engine_head:
            raise Violation(AGREEMENT, f"main's head: the model's {row_id(meta.head)} (snapshot {engine_head}), "
                            f"the engine's {got.snapshot_id}", engine_head, got.snapshot_id)

    def check_handle(self, w: int) -> None:
        """After writer w's operation ended: its own table handle, as it stands, shows a
        state the table really had (main's head at some value of the pointer, with that
        snapshot's rows); never the metadata of an attempt that did not land, and never a
        state older than the one its operation last built on (its base: a handle does not
        go back in time behind what its own commit read, whatever the outcome)."""
        lock = self.lock
        lock.stats.reads += 1
        heads, since = {}, set()
        floor = lock.handle_floor.get(w)
        reached = floor is None or floor not in lock.model.hist
        for mid in lock.model.hist:
            reached = reached or mid == floor
            meta = iceberg.mget(lock.model.metas, mid)
            if meta.head in lock.snapshot_id:
                heads[lock.snapshot_id[meta.head]] = self.rows_at(snap_of(meta, meta.head))
                if reached:
                    since.add(lock.snapshot_id[meta.head])
        try:
            got = lock.table.read_handle(w)
        except A.UnreadableSnapshot as e:
            if e.snapshot_id not in heads:
                raise Violation("P4 ReadersSeeCommitted", f"writer {w}'s own handle shows snapshot {e.snapshot_id}, "
                                f"which was never main's head (a commit that did not land; and its files are "
                                f"gone: {e.cause})", sorted(heads), e.snapshot_id) from e
            raise Violation("P8 NoDanglingRefs", f"writer {w}'s handle cannot read snapshot {e.snapshot_id}: "
                            f"{e.cause}", "rows", repr(e)) from e
        except Exception as e:  # noqa: BLE001 - an engine that cannot read what it committed
            raise Violation("P8 NoDanglingRefs", f"writer {w}'s handle cannot be read: {type(e).__name__}: {e}",
                            "rows", repr(e)) from e
        if got.snapshot_id not in heads:
            raise Violation("P4 ReadersSeeCommitted", f"writer {w}'s own handle shows snapshot {got.snapshot_id}, "
                            "which was never main's head (a commit that did not land)",
                            sorted(heads), got.snapshot_id)
        if got.snapshot_id not in since:
            raise Violation(AGREEMENT, f"writer {w}'s own handle went back in time: it shows snapshot "
                            f"{got.snapshot_id}, main's head only before the table state its operation last "
                            "built on (a handle that kept stale metadata after its outcome)", sorted(since),
                            got.snapshot_id)
        if got.rows != heads[got.snapshot_id]:
            raise Violation("P6 Isolation", f"writer {w}'s own handle shows snapshot {got.snapshot_id} with rows "
                            f"{list(got.rows)}, the model's {list(heads[got.snapshot_id])}",
                            heads[got.snapshot_id], got.rows)
