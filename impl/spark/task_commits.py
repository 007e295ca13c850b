"""Work on a native write's files as Spark's tasks commit them, while the job still runs
(native_write.py; docs/spark.md "Writing").

Spark's Parquet writer keeps a file's row group in memory and writes it when the file
closes, and Hadoop's FileOutputCommitter (algorithm 1, Spark's default) renames a task
attempt's files to `<prefix>_temporary/<n>/task_<id>/...` when the task commits; the job's
commit renames them into place at its end. A driver thread looks for committed task
folders and, for each Parquet file in them, reads its footer (its DataFile) and has the
driver pool fsync it: the disk writes and footer reads of the first tasks overlap the later
tasks instead of following the whole job. The thread looks when inotify reports a new
entry in the job's folders (folder_events.py; a task's commit is a rename into
`_temporary/<n>/`), and every POLL_S before those folders exist or without inotify. (Looking
every 10 ms took ~20 ms of driver CPU per 0.7 s write, while Spark's tasks used both cores;
with inotify ~6 ms.)

What is done early counts only for the same file at its final place: same device, inode,
size and modification time (renamed by the job's commit, not rewritten). For such a file
the write does not fsync it again (its data and inode are on disk; the rename is made
durable by the fsyncs of the folders it lands in, which the write always makes) and uses
its early DataFile. Any other file, or one whose early work failed, is fsynced and
described after the job (JobFiles.persist, describe_files), so correctness never depends
on the watch having seen a file. A committer that renames otherwise (algorithm 2 commits
tasks in place) leaves nothing to find early.
"""
from __future__ import annotations

import dataclasses
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from icefloe.impl.format import types as T
from icefloe.impl.format.manifest import DataFile
from icefloe.impl.format.parquet import DataFileError
from icefloe.impl.format.transforms import PartitionSpec
from icefloe.impl.io.base import StoreError
from icefloe.impl.io.local import LocalStore
from icefloe.impl.io.locations import local_path
from icefloe.impl.spark.folder_events import FolderEvents
from icefloe.impl.spark.footers import DRIVER_FILES_MAX, describe_file, describe_files

POLL_S = 0.01  # a pass is two or three directory reads; tasks of a write take ~10^2 ms
WATCHED_WAIT_S = 0.5  # with the folders watched, a look this often all the same (a net, not needed)
ANCESTORS_WATCHED = 2
TEMPORARY = "_temporary"
TASK_PREFIX = "task_"


@dataclasses.dataclass(frozen=True)
class EarlyFile:
    identity: tuple[int, int, int, int]  # (device, inode, size, mtime_ns) when the watch found it
    fsync: Future | None                 # its fsync in the pool (None: the store does not fsync)
    described: bool                      # its footer read: `entry`
    entry: DataFile | None               # None: not described, or a file without rows (nothing to commit)


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class TaskCommitWatch:
    """Use as a context around the Spark job that writes under `prefix`:

        with TaskCommitWatch(prefix, schema, spec, pool, store) as watch:
            writer.parquet(prefix)
        durable = pool.submit(lambda: job.persist(written, synced=watch.synced(written)))
        files = watch.describe(spark, written)

    The watch thread reads the footers itself (a fraction of a millisecond each) and hands
    the fsyncs (disk writes of ~10 ms each) to `pool`: leaving the context waits for the
    thread only, so the fsyncs of the last tasks' files overlap what the write does next;
    `synced` waits for them (call it off the critical path). `store` is the LocalStore that
    fsyncs (None: no early fsyncs); at most `describe_max` footers are read early (the rest,
    if any, after the job as describe_files does)."""

    def __init__(self, prefix: str, schema: T.Schema, spec: PartitionSpec, pool: ThreadPoolExecutor,
                 store: LocalStore | None, describe_max: int = DRIVER_FILES_MAX, poll_s: float = POLL_S):
        self.prefix, self.root = prefix, local_path(prefix)
        self.schema, self.spec, self.pool, self.store = schema, spec, pool, store
        self.describe_max, self.poll_s = describe_max, poll_s
        self.early: dict[str, EarlyFile] = {}  # path relative to the task folder -> what was done
        self._seen: set[str] = set()
        self._described = 0
        self._stop = threading.Event()
        self._events: FolderEvents | None = None
        self._thread = threading.Thread(target=self._run, name="icefloe-task-commits", daemon=True)

    def __enter__(self) -> "TaskCommitWatch":
        self._events = FolderEvents()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """End the watch: its thread has stopped (every early footer read is over) when this
        returns; early fsyncs may still run (`synced`, `settle`)."""
        self._stop.set()
        if self._events is not None:
            self._events.wake()
        if self._thread.is_alive():
            self._thread.join()
        if self._events is not None:
            # closing an inotify instance waits for the kernel to free its watches (an RCU
            # grace period: ~15 ms measured here), so it is closed beside the write
            threading.Thread(target=self._events.close, name="icefloe-folder-events-close", daemon=True).start()
            self._events = None

    def settle(self) -> None:
        """Wait until every early fsync is over (before the job's files may be deleted)."""
        for early in list(self.early.values()):
            if early.fsync is not None:
                early.fsync.exception()  # a failure only means: fsynced after the job

    def _run(self) -> None:
        events = self._events
        while not self._stop.is_set():
            watched = self._watch(events)  # before the look: what appears after it wakes the wait
            self.scan()
            events.wait(WATCHED_WAIT_S if watched else self.poll_s)

    def _watch(self, events: FolderEvents) -> bool:
        """Watch the folders where the next step of Spark's job setup or a task's commit
        shows: the prefix's nearest existing ancestor until the prefix exists (Spark makes
        it when its job starts, after planning), then the prefix, its `_temporary` and each
        `_temporary/<n>` (where task folders appear). True if the wait need not poll."""
        if not events.watch(self.root):
            folder = self.root.rstrip("/")
            for _ in range(ANCESTORS_WATCHED):  # the data folder, the table's (a first write makes both)
                folder = os.path.dirname(folder)
                if events.watch(folder):
                    return True
            return False
        temporary = os.path.join(self.root, TEMPORARY)
        if not events.watch(temporary):
            return True  # the prefix is watched: `_temporary` appearing wakes the wait
        attempts = _subfolders(temporary)
        return all([events.watch(a) for a in attempts]) and bool(attempts)

    def scan(self) -> int:
        """One pass: for each Parquet file of the task folders committed since the last pass,
        hand its fsync to the pool and read its footer. Returns how many files it found."""
        found = 0
        for attempt in _subfolders(os.path.join(self.root, TEMPORARY)):
            for task in _subfolders(attempt):
                if not os.path.basename(task).startswith(TASK_PREFIX) or task in self._seen:
                    continue
                self._seen.add(task)
                for folder, subfolders, names in os.walk(task):
                    subfolders.sort()
                    for name in sorted(names):
                        if name.endswith(".parquet"):
                            path = os.path.join(folder, name)
                            found += self._early(path, os.path.relpath(path, task))
        return found

    def _early(self, path: str, relative: str) -> int:
        location = self.prefix + os.path.relpath(path, self.root)
        try:
            identity = _identity(os.stat(path))
        except OSError:
            return 0  # renamed meanwhile by the job's commit: all done after the job
        fsync = self.pool.submit(self.store.persist, location) if self.store is not None else None
        entry, described = None, False
        if self._described < self.describe_max:
            try:
                entry, described = describe_file(location, self.schema, self.spec), True
                self._described += 1
            except (OSError, StoreError, DataFileError):
                pass  # renamed meanwhile, or unreadable: described after the job
        self.early[relative] = EarlyFile(identity, fsync, described, entry)
        return 1

    def _same(self, location: str) -> EarlyFile | None:
        """What was done early to the file now at `location`, if it is the same file."""
        early = self.early.get(location[len(self.prefix):]) if location.startswith(self.prefix) else None
        if early is None:
            return None
        try:
            return early if _identity(os.stat(local_path(location))) == early.identity else None
        except OSError:
            return None

    def synced(self, locations: list[str]) -> set[str]:
        """The `locations` (the job's files at their final places) fsynced early, as the same
        files; waits for their early fsyncs."""
        found = set()
        for location in locations:
            early = self._same(location)
            if early is not None and early.fsync is not None and early.fsync.exception() is None:
                found.add(location)
        return found

    def describe(self, spark, locations: list[str]) -> list[DataFile]:
        """describe_files for `locations` (the job's files at their final places), reusing
        what was read early for the same files; in the order of `locations`."""
        found: dict[str, DataFile | None] = {}
        for location in locations:
            early = self._same(location)
            if early is not None and early.described:
                found[location] = None if early.entry is None else dataclasses.replace(early.entry,
                                                                                       file_path=location)
        rest = [location for location in locations if location not in found]
        described = {d.file_path: d for d in describe_files(spark, rest, self.schema, self.spec)}
        found.update((location, described.get(location)) for location in rest)
        return [found[location] for location in locations if found[location] is not None]


def _subfolders(path: str) -> list[str]:
    try:
        return sorted(e.path for e in os.scandir(path) if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


__all__ = ["TaskCommitWatch", "EarlyFile", "POLL_S"]
