"""The ref-lifecycle family: directed programs the model cannot give, run against icefloe's
own table API on each store the suite runs (issue 30 item 4; spec/PROTOCOL.md 8 "Refs",
11 "Expiry"; Iceberg spec "Snapshot Retention Policy"; Iceberg-Java
`ManageSnapshots.createBranch`, `RemoveSnapshots`).

The model bootstraps its branch and tag once and expires with one retention for every
branch, so neither a ref's creation racing another creator nor retention per ref is one of
its transitions. These programs step icefloe's `PendingCommit` by hand (the interleaving
explicit, no threads) and judge the outcome by the spec, not by icefloe's own retention
code: a ref creation by the rule that the ref must not exist, an expiry by the model's
per-ref retention function (model/retention.py `expire`: the refs and snapshots the spec's
"Snapshot Retention Policy" keeps), applied to the metadata the expiry planned on:

  (where, "create branch" | "create tag", "a rival creates it between plan and swap"): the
      first creator plans while the name is free, a rival creates the ref and commits, the
      first's swap loses and its retry must refuse (the ref must not exist: Conflict), the
      ref left where the rival put it;
  (where, "retention", "branch keeps its last N"): a branch with min-snapshots-to-keep 3
      and main with the table's default (1), both older than any age: expiry keeps exactly
      the heads, the branch's last 3 and nothing else;
  (where, "retention", "branch keeps its young snapshots"): a branch with
      max-snapshot-age-ms longer than main's: expiry keeps the branch's snapshots younger than
      its own age, main's only by the table's;
  (where, "retention", "expiry races a commit to the branch"): an expiry planned, then a
      commit to the branch lands before its swap: the retry plans again, and the branch's new
      last N are kept.

`where` is "memory + SQLite", "s3 + S3 catalog" (moto S3) or "memory + PostgreSQL" (when
the machine has one). These run for icefloe and its variants (the API is icefloe's); an
engine author's adapter has no ref creation or retention to drive.
"""
from __future__ import annotations

import itertools

import pyarrow as pa

FAMILY_NAME = "ref-lifecycle"
FAMILY_DESCRIPTION = ("a ref created while a rival creates it, retention per branch (last N, age), refs "
                      "expiring by max-ref-age, an expiry "
                      "racing a branch commit: icefloe's API on each store")
SQLITE, S3_CATALOG, POSTGRES = "memory + SQLite", "s3 + S3 catalog", "memory + PostgreSQL"
WHERES = (SQLITE, S3_CATALOG, POSTGRES)
CREATE_RACE = "a rival creates it between plan and swap"
LAST_N, YOUNG, EXPIRY_RACE = ("branch keeps its last N", "branch keeps its young snapshots",
                              "expiry races a commit to the branch")
REF_AGE = "a ref older than its max-ref-age expires"
KEEP_N = 3
HOUR_MS = 3_600_000


class RefProblem(Exception):
    """What icefloe did that the spec does not allow, in one sentence."""


def classes(wheres=WHERES) -> frozenset:
    return frozenset({(w, kind, CREATE_RACE) for w in wheres for kind in ("create branch", "create tag")}
                     | {(w, "retention", r) for w in wheres for r in (LAST_N, YOUNG, EXPIRY_RACE, REF_AGE)})


class Clock:
    """The wall clock every handle of a program shares (injected: snapshot timestamps and
    expiry's "now" are the program's to set)."""

    def __init__(self, start_ms: int = 10 * 24 * HOUR_MS):
        self.now_ms = start_ms

    def __call__(self) -> int:
        return self.now_ms


class Place:
    """One store and catalog for a program's tables: `handle()` opens a fresh table handle
    on the same table, as a second writer would."""

    def __init__(self, where: str, backends, seed: int):
        from icefloe.impl.table.env import Env
        self.where, self.clock = where, Clock()
        self.env = Env.seeded(seed, wall_ms=self.clock)
        n = next(backends.counter)
        self.identifier = f"db.refs{n}"
        if where == S3_CATALOG:
            from icefloe.impl.catalog.s3 import S3Catalog
            from icefloe.impl.s3.store import S3Store
            moto = backends.s3()
            self.io = S3Store(moto.client())
            self.warehouse = f"s3://{moto.bucket}/reflife/r{n}"
            self._catalog = lambda: S3Catalog(self.io, self.warehouse)
        else:
            from icefloe.impl.catalog.sql import SqlCatalog, connection_factory
            from icefloe.impl.io.memory import MemoryStore
            self.io = MemoryStore()
            self.warehouse = "memory://warehouse"
            uri = backends.postgres_dsn() if where == POSTGRES else f"sqlite:///{backends.tmp.name}/reflife{n}.db"
            dialect, connect = connection_factory(uri)
            self._catalog = lambda: SqlCatalog(uri, dialect=dialect, connect=connect)
        self.catalogs: list = []

    def catalog(self):
        c = self._catalog()
        self.catalogs.append(c)
        return c

    def create(self):
        from icefloe.impl.format.types import NestedField, Schema, StringType
        from icefloe.impl.table.table import Table, create_table
        schema = Schema((NestedField(1, "id", StringType(), True),), 0)
        location = f"{self.warehouse}/{self.identifier.replace('.', '/')}"
        create_table(self.catalog(), self.identifier, schema, location=location, io=self.io, env=self.env)
        return Table(self.catalog(), self.identifier, self.io, self.env)

    def handle(self):
        from icefloe.impl.table.table import Table
        return Table(self.catalog(), self.identifier, self.io, self.env)

    def close(self):
        for c in self.catalogs:
            close = getattr(c, "close", None)
            if close is not None:
                close()


_rows = itertools.count(1)


def _append(t, branch: str = "main") -> int:
    """One append committed; its snapshot id (the clock moves a minute per commit)."""
    from icefloe.impl.outcomes import Committed
    t.env.wall_ms.now_ms += 60_000
    rows = pa.table({"id": pa.array([f"r{next(_rows)}"], pa.string())},
                    schema=pa.schema([pa.field("id", pa.string(), nullable=False)]))
    out = t.append(rows, branch=branch)
    if not isinstance(out, Committed):
        raise RefProblem(f"an append alone on {branch} ended {out}")
    return t.refresh().metadata.refs[branch].snapshot_id


def _step_until(commit, phase: str) -> None:
    for _ in range(16):                     # a commit's phases: bounded well below this
        if commit.phase == phase or commit.done:
            return
        commit.step()


def spec_retained(m, now_ms: int, older_than_ms: int | None = None, retain_last: int | None = None):
    """What the spec keeps of table metadata `m` in an expiry at `now_ms` (model/retention.py),
    the metadata read into the model's vocabulary."""
    from icefloe.model import retention as R
    table = R.Table(tuple(R.Snapshot(s.snapshot_id, s.parent_snapshot_id, s.timestamp_ms) for s in m.snapshots),
                    {name: R.Ref(r.snapshot_id, r.type, r.min_snapshots_to_keep, r.max_snapshot_age_ms,
                                 r.max_ref_age_ms) for name, r in m.refs.items()},
                    dict(m.properties))
    return R.expire(table, now_ms, older_than_ms, retain_last)


def _judge_expiry(t, want, what: str) -> None:
    """The table after the expiry against what the spec keeps (refs and snapshots)."""
    m = t.refresh().metadata
    got, refs = {s.snapshot_id for s in m.snapshots}, set(m.refs)
    if got != want.snapshots or refs != want.refs:
        raise RefProblem(f"expiry with {what} kept snapshots {sorted(got)} and refs {sorted(refs)}; the spec keeps "
                         f"{sorted(want.snapshots)} and {sorted(want.refs)}")


def check_create_race(place: Place, ref_type: str) -> None:
    from icefloe.impl.outcomes import Committed, Conflict
    from icefloe.impl.table.refs import CreateRef
    t = place.create()
    first, second = _append(t), _append(t)
    mine, rival = place.handle(), place.handle()
    commit = mine.begin(CreateRef("x", first, ref_type))
    _step_until(commit, "swap")
    if commit.done:
        raise RefProblem(f"creating {ref_type} x ended before its swap: {commit.outcome}")
    won = rival._run(CreateRef("x", second, ref_type))
    if not isinstance(won, Committed):
        raise RefProblem(f"the rival's create of {ref_type} x alone ended {won}")
    outcome = commit.run()
    mine.adopt(commit)
    if not isinstance(outcome, Conflict):
        raise RefProblem(f"a create of {ref_type} x planned while x was free, after a rival created x, ended "
                         f"{type(outcome).__name__}, not Conflict (the ref must not exist: "
                         "AssertRefSnapshotId(x, None))")
    ref = t.refresh().metadata.refs.get("x")
    if ref is None or ref.snapshot_id != second or ref.type != ref_type:
        raise RefProblem(f"{ref_type} x is {ref}, not the rival's {ref_type} at {second}")


def check_last_n(place: Place) -> None:
    t = place.create()
    base = _append(t)
    t.create_branch("b", base, min_snapshots_to_keep=KEEP_N)
    for _ in range(KEEP_N + 2):
        _append(t, "b")
    for _ in range(3):
        _append(t)
    older_than_ms = place.clock.now_ms + 1
    # The call's retain_last replaces the table's default, never b's own setting.
    want = spec_retained(t.refresh().metadata, place.clock.now_ms, older_than_ms, retain_last=1)
    t.expire_snapshots(older_than_ms=older_than_ms, retain_last=1)
    _judge_expiry(t, want, f"branch b keeping its last {KEEP_N} (its own min-snapshots-to-keep, over the call's "
                  "retain_last 1) and main 1")


def check_young(place: Place) -> None:
    t = place.create()
    t.set_properties({"history.expire.max-snapshot-age-ms": str(HOUR_MS)})
    base = _append(t)
    t.create_branch("b", base, max_snapshot_age_ms=10 * HOUR_MS)
    for _ in range(3):
        place.clock.now_ms += 2 * HOUR_MS              # main's 2 h apart, all older than 10 h at the end
        _append(t)
    place.clock.now_ms += 5 * HOUR_MS
    for i in range(4):                                 # b's 3 h apart: the last 9 h, inside b's 10 h, outside 1 h
        place.clock.now_ms += 3 * HOUR_MS if i else 0
        _append(t, "b")
    want = spec_retained(t.refresh().metadata, place.clock.now_ms)
    if len(want.snapshots) < 4:
        raise AssertionError(f"the program keeps too little by b's age to tell it from the table's: {want}")
    t.expire_snapshots()
    _judge_expiry(t, want, "branch b's max-snapshot-age-ms 10 h and the table's 1 h")


def check_expiry_race(place: Place) -> None:
    from icefloe.impl.outcomes import Committed
    from icefloe.impl.table import operations as ops
    t = place.create()
    base = _append(t)
    t.create_branch("b", base, min_snapshots_to_keep=2)
    for _ in range(3):
        _append(t, "b")
    expirer, writer = place.handle(), place.handle()
    older_than_ms = place.clock.now_ms + 10 * 60_000
    commit = expirer.begin(ops.ExpireSnapshots(older_than_ms=older_than_ms))
    _step_until(commit, "swap")
    if commit.done:
        raise RefProblem(f"the expiry ended before its swap: {commit.outcome}")
    _append(writer, "b")                               # the branch moves under the planned expiry
    # What the retry must keep: retention planned again on the table the rival left.
    want = spec_retained(writer.refresh().metadata, place.clock.now_ms, older_than_ms)
    outcome = commit.run()
    expirer.adopt(commit)
    if not isinstance(outcome, Committed):
        raise RefProblem(f"an expiry whose retry can plan again ended {outcome}")
    _judge_expiry(t, want, "a commit to b (min-snapshots-to-keep 2) racing it: its retry must plan retention "
                  "on the new base")


def check_ref_age(place: Place) -> None:
    t = place.create()
    t.set_properties({"history.expire.max-ref-age-ms": str(2 * HOUR_MS)})
    first = _append(t)
    t.create_tag("short-tag", first, max_ref_age_ms=HOUR_MS)      # expires by its own age
    t.create_branch("by-default", first)                          # by the table's 2 h
    t.create_branch("long", first, max_ref_age_ms=10 * HOUR_MS)   # stays
    place.clock.now_ms += 3 * HOUR_MS
    _append(t)
    _append(t)                                                    # main's head is young; main never expires
    want = spec_retained(t.refresh().metadata, place.clock.now_ms)
    if want.refs != {"main", "long"}:
        raise AssertionError(f"the program must expire two refs and keep one: {want}")
    t.expire_snapshots()
    _judge_expiry(t, want, "a tag's max-ref-age-ms 1 h, the table's 2 h for a branch, a branch's own 10 h")


CHECKS = (("create branch", CREATE_RACE, lambda p: check_create_race(p, "branch")),
          ("create tag", CREATE_RACE, lambda p: check_create_race(p, "tag")),
          ("retention", LAST_N, check_last_n),
          ("retention", YOUNG, check_young),
          ("retention", EXPIRY_RACE, check_expiry_race),
          ("retention", REF_AGE, check_ref_age))


def judge(backends, wheres, seed: int = 0) -> tuple[set, list]:
    """Every program at every place: (classes covered, problems)."""
    covered, problems = set(), []
    for where in wheres:
        for kind, what, check in CHECKS:
            place = Place(where, backends, seed)
            try:
                check(place)
                covered.add((where, kind, what))
            except RefProblem as e:
                problems.append(f"{where}, {kind}, {what}: {e}")
            finally:
                place.close()
    return covered, problems
