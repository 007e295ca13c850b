"""A Hudi-style timeline, parameterized by knobs, as its own transition system (TLA+
module HudiTimeline, whose actions carry the same names as the functions below).

The table: file groups holding keyed rows; data files (base or log) are tied to a
commit only by the *instant time* in their name; an instant is visible when its
completed file (`t.commit`) exists on the timeline. Two file groups exist at the
start, g1=(0, 1) with key "x" and g2=(0, 2) with key "y", committed by instant 0.

Knobs (HudiBounds):
  clock          "monotonic": a millisecond clock read by every writer; it never goes
                 back, but two writers may read the same millisecond (collision);
                 "skewed": each writer's clock may be behind (any instant 1..writers*ops).
  cc             concurrency control: "none"; "optimistic" (at completion, under a lock,
                 abort if an instant completed since this writer began touched one of its
                 file groups); "pessimistic" (a table lock from Begin to the end).
  pk_check       primary-key conflict check: also conflict on a key written by an instant
                 completed since Begin (with cc "none" it runs as its own step, unlocked).
  put_if_absent  instant files are created only if absent: Begin must take a fresh
                 instant, and a completion whose `t.commit` exists fails (and rolls back).
  table_type     "cow" (updates rewrite base files) or "mor" (updates append log files;
                 `compactions` compaction runs materialize a file group's base file; the
                 read-optimized view reads base files only).

Operations: "insert" upserts the contended key "n" (index lookup at Begin: the file
group holding "n", else a new one); "append" inserts a key of its own into a new file
group; "update" writes keys "x" and "y" (both file groups, two files). Rollback (after
a failed check or completion) deletes every data file whose name carries its instant,
as Hudi's rollback does, whoever wrote it.

Actions: Begin(w, kind, t), WriteFile(w), CheckKeys(w) (cc none + pk_check only),
Complete(w) (which may abort and roll back), Compact(0, g). After every completion
the incremental consumer polls: it takes the visible files of instants above its
watermark, then sets the watermark to the largest completed instant.

The properties, interpreted for this format (docs/variants.md repeats them). The
*snapshot view* merges the visible files of each file group in (instant, writer)
order; a *committed value* is the snapshot view right after a completion (`hist`).
  P1 LinearHistory       each completed instant was completed by one operation only
                         (an instant names one commit of one chain).
  P2 NoLostCommit        every row a completed operation wrote is in the snapshot view,
                         unless a completed operation ordered after it rewrote the key.
  P3 NoDuplicateCommit   no key appears twice in the snapshot view.
  P4 ReadersSeeCommitted every visible data file was written by a completed operation,
                         and the read-optimized view (mor) shows a committed value.
  P5 ValidationSound     no operation completed although an operation that completed
                         after it began wrote one of its file groups or keys.
  P6 Isolation           each committed value is the completing operation applied to the
                         previous committed value (upsert of its keys).
  P7 TimeTravelImmutable the data files of a completed instant never change afterwards.
  P8 NoDanglingRefs      every file a completed instant's commit metadata lists exists.
  P9 CleanupSafe         no data file of a completed operation is ever deleted.
  P10 IncrementalComplete every visible data file at or below the consumer's watermark
                         was consumed.
  L1 LoneWriterCommits / L2 OperationsTerminate as for Iceberg (final states).
"""
from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, fields
from typing import NamedTuple

from icefloe.model.checks import lone_not_committed, pending_operation
from icefloe.model.spec import ModuleSpec

INSERT, APPEND, UPDATE = "insert", "append", "update"
HUDI_KINDS = (INSERT, APPEND, UPDATE)
MONOTONIC, SKEWED = "monotonic", "skewed"
NONE, OPTIMISTIC, PESSIMISTIC = "none", "optimistic", "pessimistic"
COW, MOR = "cow", "mor"
PLAN, WRITE, CHECK, COMPLETE, DONE = "plan", "write", "check", "complete", "done"
from icefloe.model.state import COMMITTED, CONFLICT, PENDING  # noqa: E402 - one set of outcome names
INFLIGHT, COMPLETED = "inflight", "completed"
BASE, LOG, COMPACTED = "base", "log", "compacted"
G1, G2 = (0, 1), (0, 2)
BOOT = (0, 0)


@dataclass(frozen=True)
class HudiBounds:
    writers: int = 2
    ops: int = 1
    kinds: tuple = (INSERT,)
    clock: str = MONOTONIC
    cc: str = NONE
    pk_check: bool = False
    put_if_absent: bool = False
    table_type: str = COW
    compactions: int = 0
    variant: str = "hudi"

    def __post_init__(self):
        assert self.writers >= 1 and self.ops >= 1 and self.compactions >= 0, self
        assert self.kinds and set(self.kinds) <= set(HUDI_KINDS), self.kinds
        assert self.clock in (MONOTONIC, SKEWED) and self.cc in (NONE, OPTIMISTIC, PESSIMISTIC)
        assert self.table_type in (COW, MOR)
        assert self.table_type == MOR or self.compactions == 0, "compaction needs mor"


class DataFile(NamedTuple):
    t: int                      # the instant time in its name: all that ties it to a commit
    group: tuple
    writer: tuple               # (w, k) that wrote it; BOOT for the bootstrap and compaction
    kind: str                   # base | log | compacted
    rows: tuple                 # ((key, value), ...); value = the (w, k) that wrote the key


class HudiWriter(NamedTuple):
    k: int
    kind: str
    phase: str
    t: int
    todo: tuple                 # ((group, kind, rows), ...) files still to write
    keys: frozenset
    groups: frozenset
    begin_idx: int              # len(completions) at Begin: the conflict window starts there
    lone: bool


class Completion(NamedTuple):
    t: int
    op: tuple
    kind: str
    keys: frozenset
    groups: frozenset
    begin_idx: int
    files: frozenset
    value: tuple                # the snapshot view right after it (a committed value)


class HudiState(NamedTuple):
    # -- protocol variables --
    timeline: tuple             # sorted ((t, inflight|completed), ...)
    commits: tuple              # sorted ((t, files listed in t.commit), ...)
    files: frozenset            # data files in storage
    writers: tuple
    lock: int                   # writer holding the table lock, 0 if free
    clock: int                  # largest instant time handed out so far
    compactions_done: int
    watermark: int              # the incremental consumer's watermark
    consumed: frozenset         # files it has read
    # -- history (auxiliary) variables --
    completions: tuple          # Completion per completion, in order
    outcomes: tuple             # per writer, per op: (result, lone)
    deleted: frozenset          # data files ever deleted
    instant_files: tuple        # sorted ((t, files of t when first completed), ...)


def _get(pairs, key, default=None):
    for k, v in pairs:
        if k == key:
            return v
    return default


def _put(pairs, key, value) -> tuple:
    return tuple(sorted([(k, v) for k, v in pairs if k != key] + [(key, value)]))


def initial_state(b: HudiBounds) -> HudiState:
    boot = frozenset({DataFile(0, G1, BOOT, BASE, (("x", BOOT),)),
                      DataFile(0, G2, BOOT, BASE, (("y", BOOT),))})
    s = HudiState(
        timeline=((0, COMPLETED),), commits=((0, boot),), files=boot,
        writers=tuple(_idle(1, b.ops) for _ in range(b.writers)), lock=0, clock=0,
        compactions_done=0, watermark=0, consumed=boot, completions=(),
        outcomes=tuple(tuple((PENDING, False) for _ in range(b.ops)) for _ in range(b.writers)),
        deleted=frozenset(), instant_files=((0, boot),))
    return s._replace(completions=(Completion(0, BOOT, "bootstrap", frozenset({"x", "y"}),
                                              frozenset({G1, G2}), 0, boot, snapshot_view(s)),))


def _idle(k: int, ops: int) -> HudiWriter:
    return HudiWriter(k, "", PLAN if k <= ops else DONE, 0, (), frozenset(), frozenset(), 0, False)


def _set(s: HudiState, w: int, wr: HudiWriter) -> HudiState:
    ws = list(s.writers)
    ws[w - 1] = wr
    return s._replace(writers=tuple(ws))


# -- views -------------------------------------------------------------------------------------

def completed(s: HudiState) -> set:
    return {t for t, st in s.timeline if st == COMPLETED}


def visible(s: HudiState) -> list:
    done = completed(s)
    return [f for f in s.files if f.t in done]


def _merge(files) -> tuple:
    """Per file group, later (instant, compacted-last, writer) files override keys."""
    by_group: dict = {}
    for f in sorted(files, key=lambda f: (f.t, f.kind == COMPACTED, f.writer)):
        by_group.setdefault(f.group, {}).update(dict(f.rows))
    return tuple(sorted((k, v) for g in by_group.values() for k, v in g.items()))


def snapshot_view(s: HudiState) -> tuple:
    return _merge(visible(s))


def read_optimized_view(s: HudiState) -> tuple:
    return _merge(f for f in visible(s) if f.kind != LOG)


def _group_of(view_files, key):
    for f in sorted(view_files, key=lambda f: (f.t, f.writer)):
        if any(k == key for k, _ in f.rows):
            return f.group
    return None


# -- actions -----------------------------------------------------------------------------------

def instant_choices(b: HudiBounds, s: HudiState) -> list:
    if b.clock == MONOTONIC:
        ts = sorted({max(s.clock, 1), s.clock + 1})
    else:
        ts = list(range(1, b.writers * b.ops + 1))
    if b.put_if_absent:                        # creating t.inflight fails if t exists
        taken = {t for t, _ in s.timeline}
        ts = [t for t in ts if t not in taken]
    return ts


def begin(b: HudiBounds, s: HudiState, w: int, kind: str, t: int) -> HudiState:
    """Take the lock (pessimistic), draw an instant, create t.inflight, look up the index."""
    wr = s.writers[w - 1]
    assert wr.phase == PLAN and (b.cc != PESSIMISTIC or s.lock == 0)
    val = (w, wr.k)
    if kind == UPDATE:
        ftype = LOG if b.table_type == MOR else BASE
        todo = ((G1, ftype, (("x", val),)), (G2, ftype, (("y", val),)))
    elif kind == INSERT:
        g = _group_of(visible(s), "n")
        ftype = LOG if g is not None and b.table_type == MOR else BASE
        todo = ((g if g is not None else val, ftype, (("n", val),)),)
    else:
        todo = ((val, BASE, ((f"a{w}{wr.k}", val),)),)
    lone = all(o.phase == DONE for i, o in enumerate(s.writers) if i != w - 1)
    timeline = s.timeline if _get(s.timeline, t) == COMPLETED else _put(s.timeline, t, INFLIGHT)
    s = s._replace(timeline=timeline, clock=max(s.clock, t),
                   lock=w if b.cc == PESSIMISTIC else s.lock)
    new = HudiWriter(wr.k, kind, WRITE, t, todo, frozenset(k for _, _, r in todo for k, _ in r),
                     frozenset(g for g, _, _ in todo), len(s.completions), lone)
    return _set(s, w, new)


def write_file(b: HudiBounds, s: HudiState, w: int) -> HudiState:
    wr = s.writers[w - 1]
    assert wr.phase == WRITE and wr.todo, wr
    (g, ftype, rows), rest = wr.todo[0], wr.todo[1:]
    f = DataFile(wr.t, g, (w, wr.k), ftype, rows)
    nxt = WRITE if rest else (CHECK if b.cc == NONE and b.pk_check else COMPLETE)
    return _set(s._replace(files=s.files | {f}), w, wr._replace(todo=rest, phase=nxt))


def conflict(b: HudiBounds, s: HudiState, wr: HudiWriter, keys: bool, groups: bool) -> bool:
    for c in s.completions[wr.begin_idx:]:
        if (groups and c.groups & wr.groups) or (keys and c.keys & wr.keys):
            return True
    return False


def check_keys(b: HudiBounds, s: HudiState, w: int) -> HudiState:
    """cc none + pk_check: the key check runs unlocked, apart from the completion."""
    wr = s.writers[w - 1]
    assert wr.phase == CHECK and b.cc == NONE and b.pk_check, wr
    if conflict(b, s, wr, keys=True, groups=False):
        return rollback(s, w)
    return _set(s, w, wr._replace(phase=COMPLETE))


def own_files(s: HudiState, w: int, wr: HudiWriter) -> frozenset:
    return frozenset(f for f in s.files if f.writer == (w, wr.k))


def complete(b: HudiBounds, s: HudiState, w: int) -> HudiState:
    wr = s.writers[w - 1]
    assert wr.phase == COMPLETE and not wr.todo, wr
    assert b.cc != PESSIMISTIC or s.lock == w, "a pessimistic writer completes under its lock"
    locked = b.cc in (OPTIMISTIC, PESSIMISTIC)
    if locked and conflict(b, s, wr, keys=b.pk_check, groups=b.cc == OPTIMISTIC):
        return rollback(s, w)
    if b.put_if_absent and _get(s.timeline, wr.t) == COMPLETED:
        return rollback(s, w)                   # creating t.commit failed: it exists
    mine = own_files(s, w, wr)
    assert len(mine) == len(wr.groups), "one file per file group written"
    first = _get(s.timeline, wr.t) != COMPLETED
    s = s._replace(timeline=_put(s.timeline, wr.t, COMPLETED), commits=_put(s.commits, wr.t, mine))
    if first:
        tagged = frozenset(f for f in s.files if f.t == wr.t and f.kind != COMPACTED)
        s = s._replace(instant_files=_put(s.instant_files, wr.t, tagged))
    rec = Completion(wr.t, (w, wr.k), wr.kind, wr.keys, wr.groups, wr.begin_idx, mine,
                     snapshot_view(s))
    s = poll(s._replace(completions=s.completions + (rec,)))
    return finish(s, w, COMMITTED)


def rollback(s: HudiState, w: int) -> HudiState:
    """Delete every data file named with this instant (whoever wrote it); drop t.inflight."""
    wr = s.writers[w - 1]
    assert wr.phase in (CHECK, COMPLETE), wr
    gone = frozenset(f for f in s.files if f.t == wr.t)
    timeline = s.timeline if _get(s.timeline, wr.t) == COMPLETED else \
        tuple((t, st) for t, st in s.timeline if t != wr.t)
    s = s._replace(files=s.files - gone, deleted=s.deleted | gone, timeline=timeline)
    return finish(s, w, CONFLICT)


def finish(s: HudiState, w: int, res: str) -> HudiState:
    wr = s.writers[w - 1]
    outcomes = list(s.outcomes)
    row = list(outcomes[w - 1])
    assert row[wr.k - 1][0] == PENDING, (w, wr.k)
    row[wr.k - 1] = (res, wr.lone)
    outcomes[w - 1] = tuple(row)
    s = s._replace(outcomes=tuple(outcomes), lock=0 if s.lock == w else s.lock)
    return _set(s, w, _idle(wr.k + 1, len(row)))


def poll(s: HudiState) -> HudiState:
    """The incremental consumer: files of completed instants above the watermark."""
    new = frozenset(f for f in visible(s) if f.t > s.watermark and f.kind != COMPACTED)
    return s._replace(consumed=s.consumed | new, watermark=max(completed(s)))


def compact(s: HudiState, g: tuple) -> HudiState:
    """Materialize file group g's snapshot content as a base file (read-optimized view)."""
    vis = [f for f in visible(s) if f.group == g]
    assert vis, g
    t = max(f.t for f in vis)
    f = DataFile(t, g, BOOT, COMPACTED, _merge(vis))
    return s._replace(files=s.files | {f}, compactions_done=s.compactions_done + 1)


def compactable(s: HudiState) -> list:
    out = []
    vis = visible(s)
    for g in sorted({f.group for f in vis}):
        fs = [f for f in vis if f.group == g]
        base_t = max((f.t for f in fs if f.kind != LOG), default=-1)
        if any(f.kind == LOG and f.t >= base_t for f in fs) and not any(
                f.kind == COMPACTED and f.t == max(x.t for x in fs) for f in fs):
            out.append(g)
    return out


def successors(b: HudiBounds, s: HudiState):
    for w, wr in enumerate(s.writers, start=1):
        if wr.phase == PLAN:
            if b.cc == PESSIMISTIC and s.lock != 0:
                continue
            for kind in b.kinds:
                for t in instant_choices(b, s):
                    yield ("Begin", w, kind, t), begin(b, s, w, kind, t)
        elif wr.phase == WRITE:
            yield ("WriteFile", w), write_file(b, s, w)
        elif wr.phase == CHECK:
            yield ("CheckKeys", w), check_keys(b, s, w)
        elif wr.phase == COMPLETE:
            yield ("Complete", w), complete(b, s, w)
    if s.compactions_done < b.compactions:
        for g in compactable(s):
            yield ("Compact", 0, g), compact(s, g)


def is_terminal(s: HudiState) -> bool:
    return all(x.phase == DONE for x in s.writers)


# -- the properties, interpreted for a Hudi timeline (see the module docstring) ----------------

def check_linear_history(b, s: HudiState):
    by_t: dict = {}
    for c in s.completions:
        by_t.setdefault(c.t, []).append(c.op)
    twice = {t: ops for t, ops in by_t.items() if len(ops) > 1}
    return f"instants completed by more than one operation: {twice}" if twice else None


def check_no_lost_commit(b, s: HudiState):
    view = set(snapshot_view(s))
    for c in s.completions:
        for f in c.files:
            for key, val in f.rows:
                if (key, val) in view:
                    continue
                later = any(key in d.keys and (d.t, d.op) > (c.t, c.op) for d in s.completions)
                if not later:
                    return f"row {key}={val} of completed instant {c.t} ({c.op}) is not in the table"
    return None


def check_no_duplicate_commit(b, s: HudiState):
    dup = sorted(k for k, n in Counter(k for k, _ in snapshot_view(s)).items() if n > 1)
    return f"keys {dup} are live twice in the snapshot view" if dup else None


def check_readers_see_committed(b, s: HudiState):
    done = {c.op for c in s.completions}
    dirty = sorted(f.writer for f in visible(s) if f.writer not in done and f.kind != COMPACTED)
    if dirty:
        return f"readers see files of operations {dirty}, which have not completed"
    if b.table_type == MOR:
        ro = read_optimized_view(s)
        if all(ro != c.value for c in s.completions):
            return f"the read-optimized view shows {list(ro)}, which no commit produced"
    return None


def check_validation_sound(b, s: HudiState):
    for i, c in enumerate(s.completions):
        for d in s.completions[c.begin_idx:i]:
            clash = sorted(map(str, (c.groups & d.groups) | (c.keys & d.keys)))
            if clash:
                return (f"instant {c.t} ({c.op}) completed although {d.t} ({d.op}), completed "
                        f"after it began, wrote {clash}")
    return None


def check_isolation(b, s: HudiState):
    for prev, c in zip(s.completions, s.completions[1:]):
        new = {kv for f in c.files for kv in f.rows}
        want = tuple(sorted([kv for kv in prev.value if kv[0] not in c.keys] + list(new)))
        if c.value != want:
            return (f"{c.kind} at instant {c.t} ({c.op}) turned {list(prev.value)} into "
                    f"{list(c.value)}, expected {list(want)}")
    return None


def check_time_travel_immutable(b, s: HudiState):
    for t, was in s.instant_files:
        now = frozenset(f for f in s.files if f.t == t and f.kind != COMPACTED)
        if now != was:
            return f"the files of completed instant {t} changed from {len(was)} to {len(now)}"
    return None


def check_no_dangling_refs(b, s: HudiState):
    for t, listed in s.commits:
        if _get(s.timeline, t) == COMPLETED and not listed <= s.files:
            return f"commit {t} lists data files that no longer exist"
    return None


def check_cleanup_safe(b, s: HudiState):
    for c in s.completions:
        if c.files & s.deleted:
            return f"data files of completed instant {c.t} ({c.op}) were deleted"
    return None


def check_incremental_complete(b, s: HudiState):
    missed = sorted(f.t for f in visible(s)
                    if f.t <= s.watermark and f.kind != COMPACTED and f not in s.consumed)
    return (f"the incremental consumer (watermark {s.watermark}) skipped files of instants {missed}"
            if missed else None)


def check_operations_terminate(b, s: HudiState):
    return pending_operation(s.outcomes)


def check_lone_writer_commits(b, s: HudiState):
    return lone_not_committed(s.outcomes)


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
NOT_APPLICABLE: dict = {
    "L3 NoSpuriousConflict": "one partition: every concurrent commit overlaps",
}
TERMINAL_CHECKS = {
    "L1 LoneWriterCommits": check_lone_writer_commits,
    "L2 OperationsTerminate": check_operations_terminate,
}


@dataclass
class HudiSpec(ModuleSpec):
    """The Spec protocol (model/spec.py) for a Hudi timeline with the given knobs."""
    bounds: HudiBounds
    only: tuple = ()            # check just these safety properties (shortest trace for one)
    SAFETY = SAFETY_CHECKS
    TERMINAL = TERMINAL_CHECKS
    _initial = staticmethod(initial_state)
    _successors = staticmethod(successors)
    _is_terminal = staticmethod(is_terminal)

    def events(self, state, label, nxt):
        if label[0] == "Begin" and _get(state.timeline, label[3]) is not None:
            yield "instant collision"
        if label[0] in ("Complete", "CheckKeys"):
            res = nxt.outcomes[label[1] - 1][state.writers[label[1] - 1].k - 1][0]
            yield f"completion {res}"
            if res == COMMITTED and state.watermark > state.writers[label[1] - 1].t:
                yield "completed below the watermark"

    def describe(self, s: HudiState) -> str:
        tl = " ".join(f"{t}{'' if st == COMPLETED else '~'}" for t, st in s.timeline)
        ws = "; ".join(f"w{i}: op {w.k} {w.kind or '-'} {w.phase}"
                       + (f" t={w.t}" if w.phase not in (PLAN, DONE) else "")
                       for i, w in enumerate(s.writers, start=1))
        view = ", ".join(f"{k}={v}" for k, v in snapshot_view(s))
        ro = f" | ro {', '.join(f'{k}={v}' for k, v in read_optimized_view(s))}" \
            if s.compactions_done else ""
        return (f"timeline [{tl}] (~ inflight) | view {view}{ro} | files {len(s.files)}"
                f" | watermark {s.watermark} | {ws}")


# Options the explorer passes to every model for the Iceberg model's larger instances
# (partial-order reduction, a fixed kind per operation). They permit or ask for a
# smaller search; this model is small enough to search every interleaving and every
# kind choice, which is a superset, so it ignores them.
EXPLORER_ONLY = ("por", "workload")


def make(**overrides) -> HudiSpec:
    """Build a spec; accepts the explorer's --writers/--ops and every knob by name."""
    for option in EXPLORER_ONLY:
        overrides.pop(option, None)
    allowed = {f.name for f in fields(HudiBounds)}
    bad = sorted(set(overrides) - allowed)
    if bad:
        raise ValueError(f"the Hudi model has no bound {bad}; it takes {sorted(allowed)}")
    return HudiSpec(HudiBounds(**overrides))


# -- the knob grid: which settings break which property ------------------------------------------

GRID_WORKLOAD = dict(writers=2, ops=1, kinds=(INSERT, APPEND, UPDATE))


def knob_grid():
    """Every knob setting, as keyword arguments of HudiBounds."""
    for clock, cc, pk, pia, tt in itertools.product(
            (MONOTONIC, SKEWED), (NONE, OPTIMISTIC, PESSIMISTIC), (False, True), (False, True),
            (COW, MOR)):
        yield dict(clock=clock, cc=cc, pk_check=pk, put_if_absent=pia, table_type=tt,
                   compactions=1 if tt == MOR else 0)


def properties_broken(spec, max_states: int = 2_000_000) -> dict:
    """Every property violated in some reachable state (terminal ones in some final
    state), each with its first message: the whole reachable graph, not a first hit.
    Any Spec will do (the matrix test runs it on every variant, Iceberg-shaped too)."""
    start = spec.initial()
    frontier, visited = list(start), {hash(x) for x in start}
    found: dict = {}
    safety, terminal = spec.safety, spec.terminal
    while frontier:
        nxt = []
        for s in frontier:
            for name, fn in safety.items():
                if name not in found:
                    why = fn(s)
                    if why:
                        found[name] = why
            succ = list(spec.successors(s))
            if not succ and spec.is_terminal(s):
                for name, fn in terminal.items():
                    if name not in found:
                        why = fn(s)
                        if why:
                            found[name] = why
            for _, t in succ:
                h = hash(t)
                if h not in visited:
                    visited.add(h)
                    nxt.append(t)
            assert len(visited) <= max_states, f"more than {max_states} states"
        frontier = nxt
    return found
