"""Judging a concurrency campaign afterwards (issue 5 item 5; spec/PROPERTIES.md P1-P6 as
seen from outside): what the writer processes recorded, plus what the store holds once the
faults are healed, becomes an `icefloe.model.checks.history.History` for the Elle-style
checker, and two checks the checker cannot make from file sets alone:

- rows: replaying the committed operations along the final lineage (append adds its rows,
  overwrite-by-filter replaces its partition's rows, rewrite keeps the rows, rollback
  returns to an earlier snapshot's rows) must give, at every snapshot main pointed at,
  exactly the rows its data files hold: no lost row, no duplicated row, no resurrection;
- unknown outcomes: each writer's own later resolution (`resolve_unknown`, after healing)
  must agree with the lineage (committed iff its snapshot or attempt is in it).

Nothing here talks to storage: `Evidence` is plain data (the campaign gathers it), so a
test can doctor it and check that the judge notices.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from icefloe.model.state import COMMITTED, CONFLICT, NOOP, UNKNOWN  # noqa: F401 - the outcome names, for the writers
from icefloe.model.checks.history import (
    ALL, SERIALIZABLE, Anomaly, History, Operation, Read, TableHistory, VersionRecord, check_history, lineage,
    lineage_of, render,
)

APPEND, OVERWRITE, REWRITE, ROLLBACK = "append", "overwrite", "rewrite", "rollback"
KINDS = (APPEND, OVERWRITE, REWRITE, ROLLBACK)
# Outcomes a writer records. "failed" = the operation raised before writing anything (its
# refresh could not read the table): definitely not committed. "noop" = nothing to do
# (a compaction with nothing to compact): no commit at all, left out of the history.
FAILED = "failed"
OUTCOMES = (COMMITTED, CONFLICT, UNKNOWN, FAILED, NOOP)


@dataclass(frozen=True)
class OpRecord:
    """One operation as its writer process saw it."""
    op_id: str
    process: int
    kind: str
    outcome: str
    start_snapshot_id: int | None = None
    base_location: str | None = None         # the metadata file current when it started
    snapshot_id: int | None = None
    committed_location: str | None = None
    attempted_locations: tuple = ()
    attempts: int = 0
    reason: str = ""
    partition: str | None = None            # overwrite: the filter is `cat = <partition>`
    rollback_to: int | None = None
    rows: tuple = ()                         # (id, cat) pairs the operation adds
    read_files: frozenset = frozenset()
    added_files: frozenset = frozenset()
    removed_files: frozenset = frozenset()
    started_s: float = 0.0
    ended_s: float = 0.0

    def __post_init__(self):
        assert self.kind in KINDS, self.kind
        assert self.outcome in OUTCOMES, self.outcome


@dataclass
class Evidence:
    table: TableHistory             # every metadata file left in the store; current: the pointer after healing
    ops: tuple                      # OpRecord
    reads: tuple = ()               # history.Read
    observed_current: tuple = ()    # locations writers saw as current
    file_rows: dict = field(default_factory=dict)     # data file -> tuple of (id, cat)
    resolutions: dict = field(default_factory=dict)   # op_id -> (outcome, location) after healing
    unreadable: dict = field(default_factory=dict)    # (metadata file, snapshot id) -> why its files could not be listed
    missing_files: dict = field(default_factory=dict)  # data file a snapshot names -> why it could not be read

    @property
    def versions(self) -> tuple:
        return self.table.versions

    @property
    def current(self) -> str:
        return self.table.current_location


@dataclass
class Judgement:
    verdict: object                 # history.Verdict
    anomalies: list                 # the campaign's own (rows, resolutions): history.Anomaly
    snapshots_checked: int = 0

    @property
    def valid(self) -> bool | None:
        if self.anomalies or self.verdict.valid is False:
            return False
        return self.verdict.valid

    def tally(self) -> dict:
        """The campaign's headline figures: anomalies by family (lost, duplicated, dangling,
        dirty, and everything else the checker names)."""
        families = {"lost commit": "lost", "lost rows": "lost", "duplicate commit": "duplicated",
                    "duplicate or resurrected rows": "duplicated", "dangling reference": "dangling",
                    "dirty read": "dirty"}
        out = Counter({"lost": 0, "duplicated": 0, "dangling": 0, "dirty": 0, "other": 0})
        for a in list(self.verdict.anomalies) + self.anomalies:
            out[families.get(a.name, "other")] += 1
        return dict(out)

    def names(self) -> list[str]:
        return sorted({a.name for a in list(self.verdict.anomalies) + self.anomalies})

    def render(self) -> str:
        out = [render(self.verdict)]
        for a in self.anomalies:
            out.append(f"  anomaly: {a.name}: {a.explanation}")
        out.append(f"  rows checked at {self.snapshots_checked} snapshots of main")
        return "\n".join(out)


def partition_of(path: str) -> str | None:
    """The `cat` partition value of a data file, from its path (`.../data/cat=a/<uuid>.parquet`)."""
    _, _, rest = path.partition("/data/")
    head = rest.split("/", 1)[0]
    return head.split("=", 1)[1] if "=" in head else None


def _effective_mains(table: TableHistory) -> tuple[dict, TableHistory, list]:
    """The checker knows a state by the snapshot that introduced it, which a rollback breaks:
    main moves back to an old snapshot, and a writer that starts there has not seen what
    came between. So each rollback on the lineage gets a synthetic snapshot (a fresh id,
    parent the head it replaced, the target's files), later parents are renamed to it, and
    writers' starting snapshots are mapped through the version they started from.
    Returns (location -> effective main, the rewritten TableHistory, lineage)."""
    by_loc = {v.location: v for v in table.versions}
    line = lineage_of(table)
    records = dict(table.snapshots)
    taken = set(records)
    eff: dict = {}
    real_of: dict = {}                 # effective id -> real id
    synthetic: list = []
    rewritten: dict = {}
    for i, loc in enumerate(line):
        v = by_loc[loc]
        pre = by_loc[line[i - 1]] if i else None
        pre_eff = eff.get(line[i - 1]) if i else None
        old = set(pre.snapshot_ids) if pre else set()
        for sid in v.snapshot_ids:
            s = records.get(sid)
            if s is not None and sid not in old and pre is not None and s.parent_id == real_of.get(pre_eff, pre_eff):
                records[sid] = replace(s, parent_id=pre_eff)   # built on the (rolled back) head
        if i and v.main is not None and v.main in old and v.main != real_of.get(pre_eff, pre_eff):
            sid = -1 - len(synthetic)
            while sid in taken:
                sid -= 1
            taken.add(sid)
            records[sid] = replace(records[v.main], snapshot_id=sid, parent_id=pre_eff)
            synthetic.append(sid)
            real_of[sid] = v.main
            eff[loc] = sid
        elif i and v.main == real_of.get(pre_eff, pre_eff):
            eff[loc] = pre_eff           # main did not move (a metadata-only change)
        else:
            eff[loc] = v.main
        rewritten[loc] = VersionRecord(loc, v.previous, eff[loc], tuple(v.snapshot_ids) + tuple(synthetic))
    versions = tuple(rewritten.get(v.location, v) for v in table.versions)
    return eff, TableHistory(versions, records, table.current), line


class _Line:
    """The lineage and, per position on it, main's live data files (whole and by
    partition): computed once per judgement, as every operation's start consults them."""

    def __init__(self, table: TableHistory, line: list):
        by_loc = {v.location: v for v in table.versions}
        live: dict = {}
        for loc in line:
            for sid, s in table.snapshots_of(by_loc[loc]).items():
                live.setdefault(sid, s.files)
        self.pos = {loc: i for i, loc in enumerate(line)}
        self.files = [live.get(by_loc[loc].main, frozenset()) for loc in line]
        self._parts: dict = {}

    def partition(self, j: int, p: str) -> frozenset:
        key = (j, p)
        if key not in self._parts:
            self._parts[key] = frozenset(f for f in self.files[j] if partition_of(f) == p)
        return self._parts[key]


def _start_of(o: OpRecord, location, eff: dict, line: list, at: _Line):
    """The effective state an operation started from. Files are never re-added except by a
    rollback, which can restore what an operation read (partition c as at its start, then
    changed, then rolled back): its read is then equally a read of that later state, and
    the checker must place it at the latest such state before the operation's commit, or a
    write in between that the rollback undid would look like an anti-dependency it missed.
    A write after that point that changes what it read still counts against it."""
    start = eff.get(o.base_location, o.start_snapshot_id)
    pos = at.pos
    if o.kind == APPEND or o.base_location not in pos or location not in pos:
        return start

    def view(j: int):
        files = at.files[j]
        if o.kind == OVERWRITE:
            seen = at.partition(j, o.partition)
        elif o.kind == ROLLBACK:
            seen = files
        else:
            seen = frozenset()
        return seen, o.read_files & files
    first = pos[o.base_location]
    want = view(first)
    for j in range(pos[location] - 1, first, -1):
        if view(j) == want:
            return eff[line[j]]
    return start


def to_history(ev: Evidence) -> History:
    eff, rewritten, line = _effective_mains(ev.table)
    at = _Line(ev.table, line)
    ops = []
    for o in ev.ops:
        if o.outcome == NOOP:
            continue
        outcome = CONFLICT if o.outcome == FAILED else o.outcome
        location = o.committed_location
        resolved = ev.resolutions.get(o.op_id)
        if o.outcome == UNKNOWN and resolved and resolved[0] == COMMITTED and o.snapshot_id is None:
            location = resolved[1]  # a metadata-only operation lands by location only
        if o.kind == OVERWRITE:
            read = frozenset({o.partition})
        elif o.kind == ROLLBACK:
            read = ALL  # it asserts main is still where it read it
        else:
            read = frozenset()  # appends read nothing; a rewrite reads files, not a predicate
        if o.outcome == UNKNOWN and resolved and resolved[0] == COMMITTED:
            start = _start_of(o, resolved[1], eff, line, at)
        else:
            start = _start_of(o, location if outcome == COMMITTED else None, eff, line, at)
        ops.append(Operation(o.op_id, o.kind, outcome, o.snapshot_id, location, start,
                             read, o.read_files, o.added_files, o.removed_files))
    files = set(ev.file_rows)
    for s in ev.table.snapshots.values():
        files |= s.files
    return History(rewritten, operations=tuple(ops),
                   reads=tuple(r for r in ev.reads if not _reads_the_empty_table(r, ev.table, line)),
                   file_partitions={f: partition_of(f) for f in files},
                   observed_current=tuple(ev.observed_current))


def _reads_the_empty_table(r, table: TableHistory, line: list) -> bool:
    """A read of the table as created, before any commit: no snapshot and no file, while the
    lineage starts with a version without a snapshot. A committed state the checker knows
    no snapshot for, so it is judged here (a read of no snapshot that saw files, or of a
    table that never was empty, is left to the checker, which names it a dirty read)."""
    if r.snapshot_id is not None or r.files or not line:
        return False
    first = next(v for v in table.versions if v.location == line[0])
    return first.main is None


def judge(ev: Evidence, isolation: str = SERIALIZABLE) -> Judgement:
    history = to_history(ev)
    verdict = check_history(history, isolation)
    anomalies: list[Anomaly] = []
    line = lineage(history)
    landed = _landed(history, line)
    for o in ev.ops:
        if o.outcome != UNKNOWN:
            continue
        resolved = ev.resolutions.get(o.op_id, (UNKNOWN, None))[0]
        if resolved != UNKNOWN and (resolved == COMMITTED) != (o.op_id in landed):
            anomalies.append(Anomaly("unknown resolved inconsistently", (o.op_id,),
                                     f"{o.op_id} was resolved {resolved} after healing, but its commit "
                                     f"is {'' if o.op_id in landed else 'not '}in the lineage"))
    checked = _check_rows(ev, line, landed, anomalies, isolation)
    _check_dangling(ev, lineage_of(ev.table), anomalies)
    return Judgement(verdict, anomalies, checked)


def _check_dangling(ev: Evidence, line: list, anomalies: list) -> None:
    """P8 NoDanglingRefs from outside: every snapshot a committed version retains can be
    listed, and every data file it names exists. One anomaly per object, at the first
    committed version that holds it."""
    by_loc = {v.location: v for v in ev.versions}
    missing = set(ev.missing_files)
    first_at: dict = {}
    for loc in line:
        for sid in by_loc[loc].snapshot_ids:
            first_at.setdefault(sid, loc)
            why = ev.unreadable.get((loc, sid))
            if why is not None and first_at.get(("manifests", sid)) is None:
                first_at[("manifests", sid)] = loc
                anomalies.append(Anomaly("dangling reference", (str(sid),),
                                         f"snapshot {sid}, retained by committed version {loc}, cannot be "
                                         f"listed: {why}"))
    if not missing:
        return
    named = set()
    for sid, loc in first_at.items():
        record = ev.table.snapshots.get(sid) if not isinstance(sid, tuple) else None
        for f in sorted(record.files & missing) if record is not None else ():
            if f not in named:
                named.add(f)
                anomalies.append(Anomaly("dangling reference", (str(sid),),
                                         f"data file {f} of snapshot {sid} (committed version {loc}) "
                                         f"is {ev.missing_files[f]}"))


def _landed(history: History, line: list) -> dict:
    """op_id -> lineage index where its commit appears."""
    by_loc = {v.location: v for v in history.versions}
    introduced: dict[int, int] = {}
    for i in range(1, len(line)):
        old = set(by_loc[line[i - 1]].snapshot_ids)
        for sid in by_loc[line[i]].snapshot_ids:
            if sid not in old:
                introduced.setdefault(sid, i)
    pos = {loc: i for i, loc in enumerate(line)}
    out = {}
    for o in history.operations:
        if o.snapshot_id is not None and o.snapshot_id in introduced:
            out[o.op_id] = introduced[o.snapshot_id]
        elif o.committed_location in pos and o.outcome != CONFLICT:
            out[o.op_id] = pos[o.committed_location]
    return out


def _check_rows(ev: Evidence, line: list, landed: dict, anomalies: list,
                isolation: str = SERIALIZABLE) -> int:
    """Replay the landed operations along the lineage; compare with the files' rows. An
    overwrite replaces its partition's rows under serializable (nothing may have entered it
    since its start); under snapshot isolation it replaces the rows of the files it read."""
    ops = {o.op_id: o for o in ev.ops}
    at_index: dict[int, list] = {}
    for op_id, i in landed.items():
        at_index.setdefault(i, []).append(ops[op_id])
    expected: dict = {None: Counter()}
    by_loc = {v.location: v for v in ev.versions}
    files_of: dict = {}
    for loc in line:
        for sid, s in ev.table.snapshots_of(by_loc[loc]).items():
            files_of.setdefault(sid, s.files)
    for i in range(1, len(line)):
        pre, post = by_loc[line[i - 1]], by_loc[line[i]]
        here = at_index.get(i, [])
        if len(here) != 1:
            if post.main != pre.main or here:
                anomalies.append(Anomaly("unattributed commit", tuple(o.op_id for o in here),
                                         f"version {line[i]} moved main {pre.main} -> {post.main}, made by "
                                         f"{len(here)} recorded operations, not one"))
            continue
        o = here[0]
        base = expected.get(pre.main)
        if base is None:
            continue  # the state before is already unexplained (reported once, where it started)
        if o.kind == APPEND:
            after = base + Counter(o.rows)
        elif o.kind == OVERWRITE and isolation == SERIALIZABLE:
            after = Counter({r: n for r, n in base.items() if r[1] != o.partition}) + Counter(o.rows)
        elif o.kind == OVERWRITE:
            gone = Counter(r for f in o.removed_files for r in ev.file_rows.get(f, ()))
            after = base - gone + Counter(o.rows)
        elif o.kind == REWRITE:
            after = Counter(base)
        else:
            after = expected.get(post.main)
            if after is None:
                anomalies.append(Anomaly("unattributed commit", (o.op_id,),
                                         f"{o.op_id} rolled main back to {post.main}, a state never replayed"))
                continue
        if post.main in expected and expected[post.main] != after:
            anomalies.append(Anomaly("lost rows", (o.op_id,),
                                     f"snapshot {post.main} is reached twice with different contents"))
        expected[post.main] = after
    checked = 0
    for sid, want in expected.items():
        if sid is None or sid not in files_of:
            continue
        have = Counter()
        for f in files_of[sid]:
            have.update(ev.file_rows.get(f, ()))
        checked += 1
        lost, extra = want - have, have - want
        if lost:
            anomalies.append(Anomaly("lost rows", (str(sid),),
                                     f"snapshot {sid} lacks {sum(lost.values())} committed rows, "
                                     f"e.g. {sorted(lost)[:3]}"))
        if extra:
            anomalies.append(Anomaly("duplicate or resurrected rows", (str(sid),),
                                     f"snapshot {sid} holds {sum(extra.values())} rows no replay explains, "
                                     f"e.g. {sorted(extra)[:3]}"))
    return checked
