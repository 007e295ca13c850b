"""Deterministic replay programs for /work/shared/REGRESSIONS.md (docs/regressions.md).

A program is a tuple of steps, each a tuple whose repr is valid Python, run by `Run`
against the reference implementation (`variant=None`) or one flawed variant of
`icefloe.conformance.engines.flawed_commit` / `flawed_rename`. Writers are the
implementation's own `PendingCommit`s, stepped phase by phase (no threads); faults are
the catalog's and the store's own test hooks. `violations(run)` then judges what was
left behind by the properties of spec/PROPERTIES.md as they can be observed from outside:
the metadata chain goes to `icefloe.model.checks.history` (P1, P2, P3, P4), and the rows,
the objects and the readers' observations are checked here (P3, P6, P8, P10).

Steps (w: writer number; rows and ids are strings of the `id` column):
  ("append", w, rows)        begin an append (its plan step runs)
  ("delete", w, ids)         begin a delete of the rows whose id is in `ids`
  ("rewrite", w)             begin a compaction of every file
  ("expire", w)              begin an expiry keeping main's head only
  ("to", w, phase)           step writer w until it is in `phase`
  ("finish", w)              step writer w until it has an outcome
  ("lose_ack",)              the next swap is applied, its answer lost
  ("delay_swap",)            the next swap is parked (it may land later)
  ("deliver",)               the parked swap reaches the catalog now
  ("fail_write", pattern)    the next storage write whose location matches fails
  ("tag", name)              tag main's head (a second ref)
  ("rollback", n)            roll main back to the n-th snapshot committed (1-based)
  ("read", name)             reader `name` reads main's head (rows and snapshot id)
  ("incremental", name)      reader `name` reads what was appended since its last read
  ("orphans",)               orphan removal with the default age threshold
"""
from __future__ import annotations

import fnmatch
from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa

from icefloe.conformance.engines import flawed_commit as F
from icefloe.conformance.engines import flawed_rename as R
from icefloe.conformance.testing.faulty_catalog import FaultInjectingCatalog
from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.format import expressions as E
from icefloe.impl.format.expression_parser import parse as parse_filter
from icefloe.impl.format.metadata import MetadataError
from icefloe.impl.format.types import NestedField, Schema, StringType
from icefloe.impl.io.base import AlreadyExists, StoreError, StoreUnavailable
from icefloe.conformance.testing.faulty_store import FaultInjectingStore
from icefloe.impl.io.memory import MemoryStore
from icefloe.impl.outcomes import Committed, Conflict, Unknown
from icefloe.impl.table import operations as ops
from icefloe.impl.table import producer as P
from icefloe.impl.table.commit import DONE, PendingCommit, RetryPolicy, read_metadata
from icefloe.impl.table.env import Env
from icefloe.impl.table.files import TreeReader
from icefloe.impl.table.table import Table, create_table
from icefloe.model.checks import history as H

SCHEMA = Schema((NestedField(1, "id", StringType(), True),))
ROWS = pa.schema([pa.field("id", pa.string(), nullable=False)])
LOCATION = "memory://warehouse/db/t"

COMMIT_CLASSES = {
    "cleanup-after-unknown": F.CleanupAfterUnknownCommit,
    "pointer-status-check": F.PointerStatusCheckCommit,
    "no-lineage-check": F.NoLineageCheckCommit,
}
LISTING = {"rename-commit": dict(check="list"), "blind-put-commit": dict(check="none"),
           "version-hint": dict(check="list", hint=True)}
VARIANTS = ("no-revalidate", *COMMIT_CLASSES, "sdk-retry-swap", "expire-deleted-entries",
            "orphans-no-threshold", *LISTING)


def rows_table(rows) -> pa.Table:
    return pa.Table.from_pylist([{"id": r} for r in rows], schema=ROWS)


class _WritePlan:
    """The store's fault plan: fail the next write matching an armed pattern."""

    def __init__(self):
        self.patterns: list[str] = []

    def decide(self, kind, location):
        if kind in ("put_if_absent", "compare_and_swap"):
            for p in self.patterns:
                if fnmatch.fnmatchcase(location, p):
                    self.patterns.remove(p)
                    return "fail_before"
        return "pass"


@dataclass
class OpRecord:
    op_id: str
    kind: str
    rows: tuple = ()
    ids: frozenset = frozenset()
    commit: PendingCommit | None = None


@dataclass
class Run:
    variant: str | None = None
    attempts_max: int = 2
    seed: int = 1
    ops: list = field(default_factory=list)
    reads: dict = field(default_factory=dict)       # reader -> list of (snapshot id, rows)
    incremental: dict = field(default_factory=dict)  # reader -> (last snapshot id, rows seen)
    committed_order: list = field(default_factory=list)  # snapshot ids in commit order
    store: object = None          # default: a MemoryStore
    catalog: object = None        # default: a MemoryCatalog wrapped in FaultInjectingCatalog (its hooks)
    location: str = LOCATION

    def __post_init__(self):
        assert self.variant is None or self.variant in VARIANTS, self.variant
        self.store = self.store if self.store is not None else MemoryStore()
        self.plan = _WritePlan()
        self.io = FaultInjectingStore(self.store, self.plan)
        self.memory_catalog = FaultInjectingCatalog(MemoryCatalog()) if self.catalog is None else None
        self.catalog = self.catalog if self.catalog is not None else self.memory_catalog
        self.listing = None
        if self.variant in LISTING:
            # A store with a plain PUT (S3) is used as it is; otherwise through the fault plan.
            io = self.store if hasattr(self.store, "put") else self.io
            self.listing = self.catalog = R.ListingCatalog(io, **LISTING[self.variant])
        elif self.variant == "sdk-retry-swap":
            self.catalog = F.SdkRetryCatalog(self.catalog)
        self.env = Env.seeded(self.seed, sleep_ms=lambda ms: None)
        self.retry = RetryPolicy(self.attempts_max - 1, 0, 0)
        create_table(self.catalog, "db.t", SCHEMA, location=self.location, io=self.io, env=self.env)
        self.table = Table(self.catalog, "db.t", self.io, self.env, self.retry)
        self.writers: dict[int, OpRecord] = {}
        self.parked = []

    # -- running a program ------------------------------------------------------------------

    def play(self, program) -> "Run":
        for step in program:
            getattr(self, "_" + step[0])(*step[1:])
        return self

    def _begin(self, w: int, kind: str, operation, rows=(), ids=frozenset()) -> None:
        assert w not in self.writers or self.writers[w].commit.done, f"writer {w} is busy"
        if self.variant == "no-revalidate":
            operation = F.no_revalidate(operation)
        cls = COMMIT_CLASSES.get(self.variant, PendingCommit)
        args = (self.catalog, self.table.identifier, self.io, operation, self.env, self.retry)
        commit = R.RenameCommit(self.listing, *args) if self.listing is not None else cls(*args)
        record = OpRecord(f"{w}.{len(self.ops) + 1}", kind, tuple(rows), frozenset(ids), commit)
        self.ops.append(record)
        self.writers[w] = record
        commit.step()

    def _append(self, w, rows):
        self._begin(w, "append", P.FastAppend(rows_table(rows)), rows=rows)

    def _delete(self, w, ids):
        where = parse_filter(" or ".join(f"id = '{i}'" for i in sorted(ids)))
        self._begin(w, "delete", P.DeleteWhere(where, None), ids=ids)

    def _rewrite(self, w):
        self._begin(w, "rewrite", P.RewriteFiles(files_min=2))

    def _expire(self, w):
        cls = F.ExpireDeletedEntries if self.variant == "expire-deleted-entries" else ops.ExpireSnapshots
        self._begin(w, "expire", cls(older_than_ms=2 ** 62, retain_last=1))

    def _to(self, w, phase):
        commit = self.writers[w].commit
        for _ in range(12):
            if commit.phase == phase:
                return
            assert not commit.done, f"writer {w} finished ({commit.outcome}) before reaching {phase}"
            self._step(commit)
        raise AssertionError(f"writer {w} never reached {phase}")

    def _finish(self, w):
        commit = self.writers[w].commit
        for _ in range(40):
            if commit.done:
                break
            self._step(commit)
        assert commit.done
        if isinstance(commit.outcome, Committed) and commit.outcome.snapshot_id is not None:
            self.committed_order.append(commit.outcome.snapshot_id)

    def _step(self, commit):
        commit.step()

    def _lose_ack(self):
        self.memory_catalog.lose_acknowledgements(1)

    def _delay_swap(self):
        self.memory_catalog.delay_swaps(1)

    def _deliver(self):
        (pending,) = self.memory_catalog.pending
        self.memory_catalog.deliver(pending)

    def _fail_write(self, pattern):
        self.plan.patterns.append(pattern)

    def _tag(self, name):
        assert isinstance(self.table.create_tag(name), Committed)

    def _rollback(self, n):
        target = self.committed_order[n - 1]
        assert isinstance(self.table.rollback_to(target), Committed)

    def _read(self, name):
        try:
            self.table.refresh()
        except (StoreError, MetadataError) as e:  # what a reader gets when P8 is broken
            self.reads.setdefault(name, []).append((None, f"unreadable: {type(e).__name__}"))
            return
        snap = self.table.current_snapshot()
        rows = tuple(sorted(self.table.scan().column("id").to_pylist()))
        self.reads.setdefault(name, []).append((None if snap is None else snap.snapshot_id, rows))

    def _incremental(self, name):
        self.table.refresh()
        last, seen = self.incremental.get(name, (None, ()))
        head = self.table.current_snapshot()
        if head is None or head.snapshot_id == last:
            self.incremental[name] = (last, seen)
            return
        new = self.table.incremental_append_scan(last, head.snapshot_id).column("id").to_pylist()
        self.incremental[name] = (head.snapshot_id, seen + tuple(new))

    def _orphans(self):
        if self.variant == "orphans-no-threshold":
            F.remove_orphans_no_threshold(self.io, self.table.refresh().metadata_location, 0)
        else:
            self.table.remove_orphan_files()

    def outcome(self, w):
        return self.writers[w].commit.outcome


# -- judging what a run left behind ------------------------------------------------------------


def _chain(run: Run):
    """(versions oldest first, the metadata of each readable one, a missing location or None)."""
    try:
        location = run.catalog.load(run.table.identifier)
    except Exception as e:  # noqa: BLE001 - an unloadable pointer is what P8 reports
        return [], {}, f"pointer: {e}"
    out, metas, missing = [], {}, None
    while location is not None and len(out) < 1000:
        try:
            m = read_metadata(run.store, location)
        except (StoreError, MetadataError):
            missing = location
            break
        metas[location] = m
        previous = m.metadata_log[-1].metadata_file if m.metadata_log else None
        out.append((location, previous, m))
        location = previous
    return out[::-1], metas, missing


def _files(tree, snapshot):
    try:
        return frozenset(tree.live_data_paths(snapshot))
    except StoreError:
        return None


def violations(run: Run) -> dict[str, str]:
    """Property name -> what was found, for every property the run's end state breaks."""
    found: dict[str, str] = {}
    tree = TreeReader(run.store)
    chain, metas, missing = _chain(run)
    current = metas.get(chain[-1][0]) if chain else None

    # P8 NoDanglingRefs: the current metadata, every metadata file its log names, and
    # everything a retained snapshot reaches.
    if current is None:
        found["P8 NoDanglingRefs"] = f"the current metadata file is gone ({missing})"
    elif missing is not None:
        found["P8 NoDanglingRefs"] = f"the metadata log names {missing}, which is gone"
    if current is not None:
        for s in current.snapshots:
            try:
                reach = tree.reach(s)
            except StoreError as e:
                found.setdefault("P8 NoDanglingRefs", f"snapshot {s.snapshot_id}: {e}")
                continue
            gone = sorted(x for x in reach if not _exists(run.store, x))
            if gone:
                found.setdefault("P8 NoDanglingRefs", f"snapshot {s.snapshot_id} reaches deleted {gone[0]}")

    # P1..P4 through the history checker, over the chain that could be read.
    versions = []
    for location, previous, m in chain:
        snaps = tuple(H.SnapshotRecord(s.snapshot_id, s.parent_snapshot_id, s.operation or "",
                                       _files(tree, s) or frozenset()) for s in m.snapshots)
        versions.append((location, previous, m.current_snapshot_id, snaps))
    operations = []
    for op in run.ops:
        out = op.commit.outcome
        if out is None:
            continue
        kind = {Committed: "committed", Conflict: "conflict", Unknown: "unknown"}[type(out)]
        # Where there is a snapshot id, it decides whether the commit landed: a file-system
        # table overwrites version files in place, so a location can outlive its content.
        location = getattr(out, "metadata_location", None) if op.commit.snapshot_id is None else None
        operations.append(H.Operation(op.op_id, op.kind, kind, op.commit.snapshot_id, location))
    if current is not None:  # P4 on what the current metadata shows, even with its chain cut
        for op in run.ops:
            if isinstance(op.commit.outcome, Conflict) and _landed(op, current):
                found["P4 ReadersSeeCommitted"] = (f"failed commit landed: {op.op_id} was reported failed, "
                                                   f"yet its snapshot is on main's ancestry")
    if versions and missing is None:  # the history checker needs the whole chain
        h = H.History(H.TableHistory.from_versions(versions), tuple(operations))
        verdict = H.check_history(h)
        names = {"forked history": "P1 LinearHistory", "lost commit": "P2 NoLostCommit",
                 "duplicate commit": "P3 NoDuplicateCommit", "failed commit landed": "P4 ReadersSeeCommitted"}
        for a in verdict.anomalies:
            if a.name in names:
                found.setdefault(names[a.name], f"{a.name}: {a.explanation}")

    if current is not None and "P8 NoDanglingRefs" not in found:
        rows = _rows(run, current)
        appended = Counter(r for op in run.ops if op.kind == "append" and _landed(op, current) for r in op.rows)
        dup = sorted(r for r, n in Counter(rows).items() if n > max(1, appended[r]))
        if dup:
            found.setdefault("P3 NoDuplicateCommit", f"row {dup[0]} is live more often in main's head "
                                                     f"than committed appends wrote it")
        want = _serial_rows(run, current, chain)
        if want is not None and sorted(rows) != want:
            found.setdefault("P6 Isolation", f"main's head holds {sorted(rows)}, the committed operations "
                                             f"applied in commit order give {want}")
    # P10 IncrementalComplete: an incremental reader misses no appended row of main.
    if current is not None:
        appended = sorted(r for op in run.ops if op.kind == "append" and _landed(op, current) for r in op.rows)
        for name, (last, seen) in run.incremental.items():
            if last == current.current_snapshot_id and sorted(set(seen)) != sorted(set(appended)):
                found.setdefault("P10 IncrementalComplete",
                                 f"{name} consumed {sorted(seen)} but main's appends hold {appended}")
    return found


def _exists(store, location) -> bool:
    try:
        store.stat(location)
        return True
    except StoreError:
        return False


def _rows(run, metadata) -> list:
    snap = metadata.current_snapshot()
    if snap is None:
        return []
    from icefloe.impl.table import scan as S
    return S.scan(run.store, metadata, snap, None, None, TreeReader(run.store)).column("id").to_pylist()


def _landed(op, metadata) -> bool:
    sid = op.commit.snapshot_id
    head = metadata.current_snapshot()
    return sid is not None and head is not None and any(
        s.snapshot_id == sid for s in metadata.ancestors_of(head.snapshot_id))


def _serial_rows(run, current, chain):
    """The rows the committed operations give when applied one by one in the order their
    snapshots appear on main's ancestry (None when a rollback makes that order moot)."""
    head = current.current_snapshot()
    if head is None:
        return []
    line = [s.snapshot_id for s in current.ancestors_of(head.snapshot_id)][::-1]
    by_sid = {op.commit.snapshot_id: op for op in run.ops if op.commit.snapshot_id is not None}
    if any(op.kind == "expire" for op in run.ops) or any(sid not in by_sid for sid in line):
        return None
    rows: Counter = Counter()
    for sid in line:
        op = by_sid[sid]
        if op.kind == "append":
            rows.update(op.rows)
        elif op.kind == "delete":
            for r in op.ids:
                rows.pop(r, None)
    return sorted(rows.elements())
