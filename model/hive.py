"""A Hive-style table whose state is a directory listing, as its own transition system
(TLA+ module HiveTable, whose actions carry the same names as the functions below).

There is no pointer, no snapshot and no commit point: writers put data files straight
into the table directory, and readers list it. One partition is modelled (the table).

Actions (labels are (ActionName, writer[, detail])):
  Begin(w, kind)   the job starts; an overwrite lists the directory and reads its rows.
  WriteFile(w)     an append writes its next file (task i, named `(i, copy)` with the
                   first free copy number, like Hive's `000000_0_copy_1`); an overwrite
                   writes its one file `(1, 0)`, replacing any file of that name. The
                   operation's last write ends it: it is then *completed*
                   (acknowledged to its client).
  DeleteOld(w)     an overwrite deletes every file listed in the directory now
                   (Hive's replaceFiles: delete the old contents, then move new files in).
  ReadList(0)      a reader lists the directory (the names it will open);
  ReadOpen(0)      ... and later opens them.

An append writes `append_files` new rows; an overwrite is INSERT OVERWRITE ... SELECT
from the table itself: it rewrites the rows it read plus one new row.

The properties, interpreted for this format (docs/variants.md repeats them). A
*committed value* is the directory listing at the instant an operation completed
(plus the initial listing); `hist` records them in completion order.
  P1 LinearHistory       n/a: one directory, no versions; the history is one sequence
                         by construction.
  P2 NoLostCommit        whenever no operation is in progress, every row that a
                         completed operation wrote is in the listing (a transient gap
                         while an operation runs is P4's business, not a lost commit).
  P3 NoDuplicateCommit   no row appears twice in the listing (holds here: no task
                         retries are modelled; speculative attempts writing straight
                         into the directory would break it).
  P4 ReadersSeeCommitted the rows a listing reader sees now equal some committed value.
  P5 ValidationSound     every completed overwrite read exactly the value it replaced
                         (the last committed value before its completion); Hive checks
                         nothing.
  P6 Isolation           each committed value equals the completing operation applied
                         to the previous committed value (serializable: append adds its
                         rows; overwrite keeps the rows and adds its row).
  P7 TimeTravelImmutable a file name (the only name Hive gives data) is bound to the same
                         rows in every committed value.
  P8 NoDanglingRefs      every file a reader has listed and not yet opened still exists.
  P9 CleanupSafe         no file of the last committed value has been deleted or
                         replaced while that value is still the last committed one.
  P10 IncrementalComplete n/a: Hive has no change log to follow.
  L1 LoneWriterCommits / L2 OperationsTerminate as for Iceberg (final states).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

from icefloe.model.checks import lone_not_committed, pending_operation
from icefloe.model.spec import ModuleSpec

APPEND, OVERWRITE = "append", "overwrite"
HIVE_KINDS = (APPEND, OVERWRITE)
PLAN, WRITE, DELETE, DONE = "plan", "write", "delete", "done"
from icefloe.model.state import COMMITTED, PENDING  # noqa: E402 - one set of outcome names
BOOTSTRAP_ROW = (0, 1, 1)
BOOTSTRAP_FILE = (1, 0)
COPIES_MAX = 8      # bound on the copy suffix search (never reached within the bounds)


@dataclass(frozen=True)
class HiveBounds:
    writers: int = 2
    ops: int = 1
    kinds: tuple = HIVE_KINDS
    append_files: int = 2       # files (tasks) per append
    reads: int = 1              # list-then-open reads by the one reader
    variant: str = "hive-listing"

    def __post_init__(self):
        assert self.writers >= 1 and self.ops >= 1 and self.append_files >= 1, self
        assert self.kinds and set(self.kinds) <= set(HIVE_KINDS), self.kinds
        assert self.reads >= 0


class HiveWriter(NamedTuple):
    k: int                      # current operation (1-based)
    kind: str
    phase: str
    written: int                # files written by this operation so far
    read: tuple                 # overwrite: the rows it read at Begin (sorted)
    lone: bool


class Completion(NamedTuple):
    """One committed value (auxiliary)."""
    op: tuple                   # (writer, k); (0, 0) for the initial listing
    kind: str
    read: tuple                 # overwrite: rows it read
    listing: tuple              # sorted ((name, rows), ...) at completion


class HiveState(NamedTuple):
    # -- protocol variables --
    dir: tuple                  # sorted ((name, rows), ...): the directory listing
    writers: tuple
    reader: tuple | None        # names listed by the reader and not yet opened
    reads_done: int
    # -- history (auxiliary) variables: only the checks read them --
    hist: tuple                 # Completion per committed value, in order
    acked_rows: frozenset       # rows written by completed operations
    outcomes: tuple             # per writer, per op: (result, lone)
    replaced: frozenset         # (name, rows) bindings deleted or overwritten since the last completion


def rows_of(listing: tuple) -> tuple:
    return tuple(sorted(r for _, rows in listing for r in rows))


def initial_state(b: HiveBounds) -> HiveState:
    d = ((BOOTSTRAP_FILE, (BOOTSTRAP_ROW,)),)
    return HiveState(
        dir=d, writers=tuple(_idle(1, b.ops) for _ in range(b.writers)), reader=None,
        reads_done=0, hist=(Completion((0, 0), APPEND, (), d),),
        acked_rows=frozenset({BOOTSTRAP_ROW}),
        outcomes=tuple(tuple((PENDING, False) for _ in range(b.ops)) for _ in range(b.writers)),
        replaced=frozenset())


def _idle(k: int, ops: int) -> HiveWriter:
    return HiveWriter(k, "", PLAN if k <= ops else DONE, 0, (), False)


def _set(s: HiveState, w: int, wr: HiveWriter) -> HiveState:
    ws = list(s.writers)
    ws[w - 1] = wr
    return s._replace(writers=tuple(ws))


def _put(d: tuple, name, rows) -> tuple:
    return tuple(sorted([(n, r) for n, r in d if n != name] + [(name, rows)]))


# -- actions ---------------------------------------------------------------------------------

def begin(b: HiveBounds, s: HiveState, w: int, kind: str) -> HiveState:
    wr = s.writers[w - 1]
    assert wr.phase == PLAN and kind in b.kinds, (wr, kind)
    lone = all(o.phase == DONE for i, o in enumerate(s.writers) if i != w - 1)
    read = rows_of(s.dir) if kind == OVERWRITE else ()
    phase = DELETE if kind == OVERWRITE else WRITE
    return _set(s, w, HiveWriter(wr.k, kind, phase, 0, read, lone))


def delete_old(s: HiveState, w: int) -> HiveState:
    """Delete whatever is listed now, not only what the overwrite read."""
    wr = s.writers[w - 1]
    assert wr.kind == OVERWRITE and wr.phase == DELETE
    s = s._replace(dir=(), replaced=s.replaced | frozenset(s.dir))
    return _set(s, w, wr._replace(phase=WRITE))


def write_file(b: HiveBounds, s: HiveState, w: int) -> HiveState:
    wr = s.writers[w - 1]
    assert wr.phase == WRITE
    i = wr.written + 1
    names = {n for n, _ in s.dir}
    if wr.kind == APPEND:
        free = [c for c in range(COPIES_MAX) if (i, c) not in names]
        assert free, f"more than {COPIES_MAX} copies of task {i}"
        copy = free[0]
        name, rows = (i, copy), ((w, wr.k, i),)
        last = i == b.append_files
    else:
        name, rows = BOOTSTRAP_FILE, tuple(sorted(wr.read + ((w, wr.k, 1),)))
        last = True
    old = {n: r for n, r in s.dir}
    replaced = s.replaced | ({(name, old[name])} if name in old else set())
    s = s._replace(dir=_put(s.dir, name, rows), replaced=replaced)
    wr = wr._replace(written=i)
    s = _set(s, w, wr)
    return complete(s, w) if last else s


def complete(s: HiveState, w: int) -> HiveState:
    """The job returns success: the listing now is a committed value."""
    wr = s.writers[w - 1]
    assert wr.phase == WRITE and wr.written >= 1, wr
    new_rows = {(w, wr.k, i) for i in range(1, wr.written + 1)} if wr.kind == APPEND \
        else {(w, wr.k, 1)}
    hist = s.hist + (Completion((w, wr.k), wr.kind, wr.read, s.dir),)
    outcomes = list(s.outcomes)
    row = list(outcomes[w - 1])
    assert row[wr.k - 1][0] == PENDING
    row[wr.k - 1] = (COMMITTED, wr.lone)
    outcomes[w - 1] = tuple(row)
    s = s._replace(hist=hist, acked_rows=s.acked_rows | new_rows, outcomes=tuple(outcomes),
                   replaced=frozenset())
    return _set(s, w, _idle(wr.k + 1, len(row)))


def successors(b: HiveBounds, s: HiveState):
    for w, wr in enumerate(s.writers, start=1):
        if wr.phase == PLAN:
            for kind in b.kinds:
                yield ("Begin", w, kind), begin(b, s, w, kind)
        elif wr.phase == DELETE:
            yield ("DeleteOld", w), delete_old(s, w)
        elif wr.phase == WRITE:
            yield ("WriteFile", w), write_file(b, s, w)
    if s.reader is None and s.reads_done < b.reads:
        yield ("ReadList", 0), s._replace(reader=tuple(n for n, _ in s.dir))
    if s.reader is not None:
        yield ("ReadOpen", 0), s._replace(reader=None, reads_done=s.reads_done + 1)


def is_terminal(s: HiveState) -> bool:
    return all(x.phase == DONE for x in s.writers) and s.reader is None


# -- the properties, interpreted for a directory-listing table (see the module docstring) --

def _expected(prev: tuple, c: Completion) -> tuple:
    w, k = c.op
    if c.kind == APPEND:
        new = [r for _, rows in c.listing for r in rows if r[:2] == (w, k)]
        return tuple(sorted(prev + tuple(new)))
    return tuple(sorted(prev + ((w, k, 1),)))


def check_no_lost_commit(b, s: HiveState):
    if any(x.phase not in (PLAN, DONE) for x in s.writers):
        return None
    lost = sorted(s.acked_rows - set(rows_of(s.dir)))
    return f"rows {lost} of completed operations are not in the listing" if lost else None


def check_no_duplicate_commit(b, s: HiveState):
    dup = sorted(r for r, n in Counter(rows_of(s.dir)).items() if n > 1)
    return f"rows {dup} are listed twice" if dup else None


def check_readers_see_committed(b, s: HiveState):
    now = rows_of(s.dir)
    if any(rows_of(c.listing) == now for c in s.hist):
        return None
    return f"a listing reader sees rows {list(now)}, which no completed operation left behind"


def check_validation_sound(b, s: HiveState):
    for prev, c in zip(s.hist, s.hist[1:]):
        if c.kind == OVERWRITE and c.read != rows_of(prev.listing):
            return (f"overwrite {c.op} read rows {list(c.read)} but replaced "
                    f"{list(rows_of(prev.listing))}; nothing checked it")
    return None


def check_isolation(b, s: HiveState):
    for prev, c in zip(s.hist, s.hist[1:]):
        want, got = _expected(rows_of(prev.listing), c), rows_of(c.listing)
        if got != want:
            return (f"{c.kind} {c.op} turned rows {list(rows_of(prev.listing))} into {list(got)},"
                    f" expected {list(want)}")
    return None


def check_time_travel_immutable(b, s: HiveState):
    seen: dict = {}
    for c in s.hist:
        for name, rows in c.listing:
            if seen.setdefault(name, rows) != rows:
                return f"file {name} held rows {list(seen[name])}, later rows {list(rows)}"
    return None


def check_no_dangling_refs(b, s: HiveState):
    if s.reader is None:
        return None
    missing = sorted(set(s.reader) - {n for n, _ in s.dir})
    return f"the reader listed files {missing}, which are gone before it opens them" if missing else None


def check_cleanup_safe(b, s: HiveState):
    last = set(s.hist[-1].listing)
    bad = sorted(last & s.replaced)
    return f"files {[n for n, _ in bad]} of the last committed value were deleted or replaced" if bad else None


def check_operations_terminate(b, s: HiveState):
    return pending_operation(s.outcomes)


def check_lone_writer_commits(b, s: HiveState):
    return lone_not_committed(s.outcomes)


SAFETY_CHECKS = {
    "P2 NoLostCommit": check_no_lost_commit,
    "P3 NoDuplicateCommit": check_no_duplicate_commit,
    "P4 ReadersSeeCommitted": check_readers_see_committed,
    "P5 ValidationSound": check_validation_sound,
    "P6 Isolation": check_isolation,
    "P7 TimeTravelImmutable": check_time_travel_immutable,
    "P8 NoDanglingRefs": check_no_dangling_refs,
    "P9 CleanupSafe": check_cleanup_safe,
}
NOT_APPLICABLE = {
    "P1 LinearHistory": "one directory, no versions: the history is one sequence by construction",
    "P10 IncrementalComplete": "Hive has no change log for an incremental reader to follow",
    "L3 NoSpuriousConflict": "one partition, and no validation that could conflict spuriously",
}
TERMINAL_CHECKS = {
    "L1 LoneWriterCommits": check_lone_writer_commits,
    "L2 OperationsTerminate": check_operations_terminate,
}


@dataclass
class HiveSpec(ModuleSpec):
    """The Spec protocol (model/spec.py) for a Hive directory-listing table."""
    bounds: HiveBounds
    only: tuple = ()            # check just these safety properties (shortest trace for one)
    SAFETY = SAFETY_CHECKS
    TERMINAL = TERMINAL_CHECKS
    _initial = staticmethod(initial_state)
    _successors = staticmethod(successors)
    _is_terminal = staticmethod(is_terminal)

    def events(self, state, label, nxt):
        if label[0] == "WriteFile" and len(nxt.hist) > len(state.hist):
            yield "operation completed"
        if label[0] == "DeleteOld" and state.dir:
            yield "overwrite deleted files"
        if label[0] == "Begin" and any(x.phase not in (PLAN, DONE) for x in state.writers):
            yield "began while another operation runs"

    def describe(self, s: HiveState) -> str:
        files = ", ".join(f"{n}={list(r)}" for n, r in s.dir) or "(empty)"
        ws = "; ".join(f"w{i}: op {w.k} {w.kind or '-'} {w.phase}"
                       + (f" files {w.written}" if w.kind == APPEND else "")
                       for i, w in enumerate(s.writers, start=1))
        rd = f"; reader holds {list(s.reader)}" if s.reader is not None else ""
        return f"dir {files} | {ws}{rd} | committed values {len(s.hist)}"


# Options the explorer passes to every model for the Iceberg model's larger instances
# (partial-order reduction, a fixed kind per operation). They permit or ask for a
# smaller search; this model is small enough to search every interleaving and every
# kind choice, which is a superset, so it ignores them.
EXPLORER_ONLY = ("por", "workload")


def make(**overrides) -> HiveSpec:
    """Build a spec; accepts the explorer's --writers/--ops/--kinds (hive kinds only)."""
    for option in EXPLORER_ONLY:
        overrides.pop(option, None)
    allowed = {f for f in HiveBounds.__dataclass_fields__}
    bad = sorted(set(overrides) - allowed)
    if bad:
        raise ValueError(f"the Hive model has no bound {bad}; it takes {sorted(allowed)}")
    return HiveSpec(HiveBounds(**overrides))
