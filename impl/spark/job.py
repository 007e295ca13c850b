"""One Spark job's files and its commit (spec/PROTOCOL.md 5 "Writer phases", 9 "Commit
outcomes", 9.5 cleanup; docs/spark.md "Guarantees").

Executors write data files before the driver knows whether they will ever be committed,
so every file of a job lives under one job-unique prefix, `<table>/data/spark-<job id>/`.
The driver commits the files of the successful task attempts as one snapshot through a
`PendingCommit` (retry with validation is the commit loop's); the files of failed or
duplicate attempts are never in a commit message, and are found by listing that prefix.

Spark runs `commit()` and `abort()` in a Python worker of their own, so what the commit
learned is written down under the prefix for `abort()` to read:

    _job/closed.json    put first by commit and by abort: the job takes no more files
    _job/started.json   put before the first swap: from here on, a file may be committed
    _job/outcome.json   {"outcome": committed | conflict | unknown, ...}

Spark reports a failed job (and calls abort) while the job's other tasks may still be
running: it kills them asynchronously. So a task attempt checks `closed` after each file
it puts, and if the job is closed it deletes its own files and fails (`JobClosed`). On a
linearizable store no file escapes: a put the cleanup's listing missed came after
`closed` was put, so the task's check sees it.

Cleanup rules (apache/iceberg #2317, #4666): after Committed, delete the job's files the
snapshot does not reference; after Conflict, delete all of them; after Unknown, or when
`started` exists without an outcome (the commit worker died mid-swap), delete nothing.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from icefloe.impl.format.manifest import DataFile
from icefloe.impl.format.metadata import MAIN_BRANCH
from icefloe.impl.io.base import AlreadyExists, NotFound, ObjectStore, StoreError
from icefloe.impl.io.local import LocalStore
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.io.locations import canonical_location, local_path
from icefloe.impl.outcomes import (
    COMMITTED, CONFLICT, STORE, Committed, Conflict, IcefloeError, Outcome, Unknown, require,
)
from icefloe.impl.table.commit import PLAN, SWAP, PendingCommit
from icefloe.impl.table.validation import check_all

JOB_DIR = "_job"
JOB_PREFIX = "spark-"
CLEANUP_DELETES_MAX = 1_000_000  # a bound on one job's cleanup
PHASES_BEFORE_SWAP_MAX = 8  # plan, data, manifests, list, metadata: the first attempt's phases
PERSIST_THREADS = 4  # fsyncs in flight at once: 32 files of 15 MB in all took ~60 ms so, ~80 ms one by one


class StartingSnapshotGone(IcefloeError):
    """The snapshot a job planned at is no longer retained (expired while it ran)."""


class JobClosed(IcefloeError):
    """A task attempt wrote after its job was committed or aborted (a zombie attempt)."""


class ValidationFailed(IcefloeError):
    """A job's validations fail already on the table as the commit first reads it."""


def job_prefix(table_location: str, job_id: str) -> str:
    require(bool(job_id) and "/" not in job_id, f"not a job id: {job_id!r}")
    return f"{table_location.rstrip('/')}/data/{JOB_PREFIX}{job_id}/"


@dataclass
class JobFiles:
    io: ObjectStore
    table_location: str
    job_id: str

    @property
    def prefix(self) -> str:
        return job_prefix(self.table_location, self.job_id)

    def _marker(self, name: str) -> str:
        return f"{self.prefix}{JOB_DIR}/{name}.json"

    def mark(self, name: str, body: dict) -> None:
        try:
            self.io.put_if_absent(self._marker(name), json.dumps(body, sort_keys=True).encode())
        except AlreadyExists:
            raise AssertionError(f"job {self.job_id} wrote its {name} marker twice") from None

    def read_marker(self, name: str) -> dict | None:
        try:
            return json.loads(self.io.get(self._marker(name)))
        except NotFound:
            return None

    def close(self) -> None:
        """The fence: from now on no task attempt of this job may leave a file (idempotent)."""
        try:
            self.io.put_if_absent(self._marker("closed"), json.dumps({"job-id": self.job_id}).encode())
        except AlreadyExists:
            pass

    def is_closed(self) -> bool:
        return self.read_marker("closed") is not None

    def fence(self, written: list[str]) -> None:
        """A task attempt's check after each file it put: if the job is closed, delete the
        attempt's files and raise JobClosed (its commit message would never be used)."""
        if not self.is_closed():
            return
        for location in written:
            try:
                self.io.delete(location)
            except StoreError:
                pass  # left to orphan removal (12)
        raise JobClosed(f"job {self.job_id} ended while this task attempt was writing; "
                        f"its {len(written)} file(s) are removed")

    def data_files(self) -> list[str]:
        """Every data file any attempt of this job wrote (markers excluded)."""
        marker_dir = canonical_location(f"{self.prefix}{JOB_DIR}/")
        return [location for location in list_locations(self.io, self.prefix)
                if not canonical_location(location).startswith(marker_dir)]

    def fsyncing_store(self) -> LocalStore | None:
        """The local store under the job prefix if it fsyncs what it writes, else None."""
        store = self.io.store_for(self.prefix) if isinstance(self.io, StoreRouter) else self.io
        return store if isinstance(store, LocalStore) and store.fsync else None

    def persist(self, locations: list[str], threads: int = PERSIST_THREADS, synced: set[str] = frozenset()) -> None:
        """Make files written by another writer (Spark's Parquet writer) durable before a
        commit references them: each file (`threads` fsyncs at a time: the disk takes them
        together faster than one by one) but those in `synced` (already fsynced as the same
        file, under another name: task_commits.py), and each directory from theirs up to the
        table's data folder (Spark's committer renamed them into place: this makes the
        renames durable). A no-op on stores that make every put durable themselves (object
        stores) or were built without fsync."""
        store = self.fsyncing_store()
        if store is None or not locations:
            return
        data_dir = self.prefix[:-len(f"{JOB_PREFIX}{self.job_id}/")]
        directories = set()
        for location in locations:
            require(location.startswith(self.prefix), f"{location} is not under the job prefix {self.prefix}")
            d = location[:location.rindex("/")]
            while len(d) >= len(data_dir) - 1 and d not in directories:  # bounded by the path's depth
                directories.add(d)
                d = d[:d.rindex("/")]
        # All in any order, `threads` at a time: only their sum must be durable, before the swap
        # (a partitioned write's ~10 folders one by one took ~10-20 ms).
        targets = [location for location in locations if location not in synced] + sorted(directories)
        with ThreadPoolExecutor(min(threads, len(targets)), thread_name_prefix="icefloe-fsync") as pool:
            list(pool.map(store.persist, targets))

    def delete_except(self, keep: set[str]) -> list[str]:
        keep = {canonical_location(p) for p in keep}
        deleted = []
        for location in self.data_files()[:CLEANUP_DELETES_MAX]:
            if canonical_location(location) in keep:
                continue
            try:
                self.io.delete(location)
                deleted.append(location)
            except StoreError:
                pass  # left to orphan removal (12)
        return deleted


def list_locations(io: ObjectStore, prefix: str) -> list[str]:
    """The locations under `prefix`, sorted. A local store's `list` reads every file for
    its etag; cleanup needs only names, so local prefixes are walked by name (the store's
    own temporary and lock files, dot-named, are left out as its `list` leaves them)."""
    store = io.store_for(prefix) if isinstance(io, StoreRouter) else io
    if not isinstance(store, LocalStore):
        return [o.location for o in io.list(prefix)]
    store._count("list")
    root = local_path(prefix)
    found = []
    for directory, subdirs, names in os.walk(root if root.endswith("/") else os.path.dirname(root)):
        subdirs.sort()
        for name in names:
            path = os.path.join(directory, name)
            if not (name.startswith(".") and name.endswith((".icefloe-tmp", ".icefloe-lock"))) \
                    and path.startswith(root):
                found.append(prefix + path[len(root):])
    return sorted(found)


def set_starting_snapshot(c: PendingCommit, snapshot_id: int | None) -> None:
    """Make the snapshot the job read (or planned at) the commit's starting snapshot, so
    validation covers everything committed since the job began, not since commit time."""
    if snapshot_id is None or snapshot_id == c.starting_snapshot_id:
        return
    if c.base_at_start.snapshot_by_id(snapshot_id) is None:
        raise StartingSnapshotGone(f"snapshot {snapshot_id} the job started from is not retained")
    c.starting_snapshot_id = snapshot_id


def check_now(c: PendingCommit, reqs) -> None:
    """Fail with a typed error (before anything is written) if a validation already fails."""
    problem = check_all(reqs, c.base, c.starting_snapshot_id, c.tree)
    if problem is not None:
        raise ValidationFailed(problem)


@dataclass
class JobResult:
    outcome: Outcome
    job_id: str
    kind: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    starting_snapshot_id: int | None = None
    records: int = 0
    commit_ms: float = 0.0

    def to_json(self) -> dict:
        o = self.outcome
        base = {"job-id": self.job_id, "kind": self.kind, "outcome": type(o).__name__.lower(),
                "snapshot-id": o.snapshot_id, "attempts": o.attempts,
                "starting-snapshot-id": self.starting_snapshot_id, "records": self.records,
                "added-files": self.added, "removed-files": self.removed,
                "cleaned-files": len(self.deleted), "commit-ms": round(self.commit_ms, 1),
                "time-ms": int(time.time() * 1000)}
        if isinstance(o, Committed):
            base["metadata-location"] = o.metadata_location
        else:
            base["reason"] = o.reason
        return base


def commit_job(table, job: JobFiles, operation, kind: str, added: list[DataFile],
               removed: list[str] = (), starting_snapshot_id: int | None = None,
               commit_log: str | None = None, before_swap: Callable[[], None] | None = None,
               fence: bool = True, ready: Callable[[], None] | None = None) -> JobResult:
    """Run `operation` through the commit loop, record the outcome, clean up by the rules
    above. Errors before any swap (validation, a gone starting snapshot) are a Conflict.

    The first attempt runs up to its swap (manifests, list and metadata written), then
    `ready` is called: what must hold before the table may reference the job's files (the
    native write's fsyncs of Spark's files, which run meanwhile). If `ready` raises, nothing
    was swapped: the commit's own objects are deleted and the error propagates (the caller
    aborts the job). `ready` is called once on every path, so work it waits for is over
    before any cleanup deletes a file. Then `before_swap` (injected scheduling: the demo
    pipeline's barrier) is called, and the `started` marker put (from here on a later abort
    deletes nothing; before it, an error deletes the commit's objects). `fence=False`
    writes only the `started` marker (a later abort then deletes nothing): for a caller
    whose tasks do not check the fence and whose own abort runs before any commit (the
    native write path), `closed` and `outcome` would never be read, and each is a durable
    write on the commit's path."""
    started = time.monotonic()
    if fence:
        job.close()
    pending = table.new_commit(operation)
    waiting = [ready] if ready is not None else []

    def wait_ready() -> None:
        while waiting:
            waiting.pop()()
    try:
        for _ in range(PHASES_BEFORE_SWAP_MAX):
            if pending.done or pending.phase == SWAP:
                break
            pending.step()
        assert pending.done or pending.phase == SWAP, f"no swap after {PHASES_BEFORE_SWAP_MAX} phases"
        if not pending.done:
            try:
                wait_ready()
                if before_swap is not None:
                    before_swap()
                job.mark("started", {"job-id": job.job_id, "files": len(added)})
            except BaseException as e:
                pending.abandon(f"{type(e).__name__} before the first swap: {e}")  # deletes what it wrote
                raise
        outcome = pending.run()
    except IcefloeError as e:
        # The loop re-raises only from planning, before anything was swapped: definite.
        if pending.phase != PLAN:
            raise
        outcome = Conflict(f"{type(e).__name__}: {e}", 0, pending.snapshot_id, STORE)
        for obj in reversed(pending.written):  # planning wrote nothing; be explicit anyway
            try:
                table.io.delete(obj)
            except StoreError:
                pass
    finally:
        with contextlib.suppress(Exception):
            wait_ready()  # a commit that ended before its swap: the work is over before cleanup
    removed = list(removed) or list(getattr(operation, "removed", {}) or ())  # an overwrite's, as planned
    result = JobResult(outcome, job.job_id, kind, [f.file_path for f in added], removed,
                       starting_snapshot_id=pending.starting_snapshot_id,
                       records=sum(f.record_count for f in added))
    result.commit_ms = (time.monotonic() - started) * 1000
    if fence:
        job.mark("outcome", result.to_json())
    if isinstance(outcome, Committed):
        result.deleted = job.delete_except({f.file_path for f in added} | _extra_added(operation))
    elif isinstance(outcome, Conflict):
        result.deleted = job.delete_except(set())
    if commit_log:
        append_commit_log(commit_log, result.to_json())
    return result


def _extra_added(operation) -> set[str]:
    # Files the commit itself wrote under the job prefix (none today: survivors of a
    # copy-on-write overwrite are written by the commit loop under data/ directly).
    return {f.file_path for f in getattr(operation, "added", ())}


def abort_job(job: JobFiles) -> list[str]:
    """Spark's abort: delete the job's files unless a commit may have landed."""
    job.close()  # before listing: a task still running removes what it puts from now on
    outcome = job.read_marker("outcome")
    if outcome is None:
        if job.read_marker("started") is not None:
            return []  # a commit was under way and never reported: its outcome is unknown
        return job.delete_except(set())
    if outcome["outcome"] == CONFLICT:
        return job.delete_except(set())
    if outcome["outcome"] == COMMITTED:
        return job.delete_except(set(outcome["added-files"]))
    return []  # unknown: nothing may be deleted


def append_commit_log(path: str, record: dict) -> None:
    """One JSON line per job outcome, appended under an exclusive lock (several Spark
    applications may share one log)."""
    line = (json.dumps(record, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line)
    finally:
        os.close(fd)


def read_commit_log(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


__all__ = ["JobFiles", "JobResult", "commit_job", "abort_job", "job_prefix", "set_starting_snapshot",
           "check_now", "ValidationFailed", "JobClosed", "StartingSnapshotGone", "append_commit_log",
           "read_commit_log", "MAIN_BRANCH"]
