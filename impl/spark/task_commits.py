"""Work on a native write's files as Spark's tasks commit them, while the job still runs
(native_write.py; docs/spark.md "Writing").

Spark's Parquet writer keeps a file's row group in memory and writes it when the file
closes, and Hadoop's FileOutputCommitter (algorithm 1, Spark's default) renames a task
attempt's files to `<prefix>_temporary/<n>/task_<id>/...` when the task commits; the job's
commit renames them into place at its end. A driver thread looks for committed task
folders every POLL_S and, for each Parquet file in them, fsyncs it and reads its footer
(its DataFile) in the driver pool: the disk writes and footer reads of the first tasks
overlap the later tasks instead of following the whole job.

Nothing here is needed for correctness. After the job, the write still makes every
written file and folder durable (JobFiles.persist; a file already on disk takes little),
and an entry read early is used only for the same file at its final place (same inode
and size: renamed, not rewritten); any other file, or one whose early work failed, is
described then. A committer that renames otherwise (algorithm 2 commits tasks in place)
leaves nothing to find early.
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
from icefloe.impl.spark.footers import DRIVER_FILES_MAX, describe_file, describe_files

POLL_S = 0.01  # a pass is two or three directory reads; tasks of a write take ~10^2 ms
TEMPORARY = "_temporary"
TASK_PREFIX = "task_"


@dataclasses.dataclass(frozen=True)
class EarlyFile:
    inode: int
    size: int
    entry: DataFile | None  # None: a file without rows (nothing to commit)


class TaskCommitWatch:
    """Use as a context around the Spark job that writes under `prefix`:

        with TaskCommitWatch(prefix, schema, spec, pool, store) as watch:
            writer.parquet(prefix)
        files = watch.describe(spark, written)

    `store` is the LocalStore that fsyncs (None: no early fsyncs); at most `describe_max`
    footers are read early (the rest, if any, after the job as describe_files does)."""

    def __init__(self, prefix: str, schema: T.Schema, spec: PartitionSpec, pool: ThreadPoolExecutor,
                 store: LocalStore | None, describe_max: int = DRIVER_FILES_MAX, poll_s: float = POLL_S):
        self.prefix, self.root = prefix, local_path(prefix)
        self.schema, self.spec, self.pool, self.store = schema, spec, pool, store
        self.describe_max, self.poll_s = describe_max, poll_s
        self.early: dict[str, EarlyFile] = {}  # path relative to the task folder -> what was read
        self._seen: set[str] = set()
        self._futures: list[Future] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="icefloe-task-commits", daemon=True)

    def __enter__(self) -> "TaskCommitWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """End the watch: its thread has stopped and its work is over when this returns."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        for f in self._futures:
            f.exception()  # waited for; a failure is redone after the job

    def _run(self) -> None:
        while not self._stop.is_set():
            self.scan()
            self._stop.wait(self.poll_s)

    def scan(self) -> int:
        """One pass: hand the Parquet files of task folders committed since the last pass to
        the pool. Returns how many files it handed over."""
        handed = 0
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
                            self._futures.append(self.pool.submit(self._early, path, os.path.relpath(path, task),
                                                                  len(self._futures) < self.describe_max))
                            handed += 1
        return handed

    def _early(self, path: str, relative: str, describe: bool) -> None:
        location = self.prefix + os.path.relpath(path, self.root)
        try:
            st = os.stat(path)
            if self.store is not None:
                self.store.persist(location)
            if describe:
                entry = describe_file(location, self.schema, self.spec)
                self.early[relative] = EarlyFile(st.st_ino, st.st_size, entry)
        except (OSError, StoreError, DataFileError):
            pass  # renamed meanwhile by the job's commit, or unreadable: done after the job

    def describe(self, spark, locations: list[str]) -> list[DataFile]:
        """describe_files for `locations` (the job's files at their final places), reusing
        what was read early for the same files; in the order of `locations`."""
        found: dict[str, DataFile | None] = {}
        for location in locations:
            early = self.early.get(location[len(self.prefix):]) if location.startswith(self.prefix) else None
            if early is None:
                continue
            try:
                st = os.stat(local_path(location))
            except OSError:
                continue
            if (st.st_ino, st.st_size) == (early.inode, early.size):
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
