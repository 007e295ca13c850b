"""The native write's work on files as Spark's tasks commit them (impl/spark/task_commits.py):
what is done early is done to committed task files only, and reused only for the same file.
No Spark here: the folders Hadoop's FileOutputCommitter makes are made by hand."""
from __future__ import annotations

import os
import time
from concurrent.futures import Future
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.impl.format import types as T
from icefloe.impl.format.transforms import PartitionSpec
from icefloe.impl.io.local import LocalStore
from icefloe.impl.spark.task_commits import TaskCommitWatch

SCHEMA = T.Schema((T.NestedField(1, "id", T.LONG, True),))
ARROW = pa.schema([pa.field("id", pa.int64(), False, {b"PARQUET:field_id": b"1"})])


class Deferred:
    """An executor that runs what it is given only when told: the test decides what happens
    between a scan handing a file over and the file's early work."""

    def __init__(self):
        self.queued: list = []

    def submit(self, fn, *args):
        future = Future()
        self.queued.append((future, fn, args))
        return future

    def run_all(self):
        for future, fn, args in self.queued:
            future.set_result(fn(*args))
        self.queued = []


class Persists(LocalStore):
    def __init__(self):
        super().__init__()
        self.persisted: list[str] = []

    def persist(self, location: str) -> None:
        self.persisted.append(location)
        super().persist(location)


def _put(path: Path, ids) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": list(ids)}, schema=ARROW), path)


def test_committed_task_files_are_fsynced_and_described_early_and_reused_for_the_same_file(tmp_path):
    """Goal: a scan hands over the Parquet files of committed task folders (task_*), not those of
    attempts still running (_temporary/<n>/_temporary/attempt_*), each once; after the job's
    commit renames them into place, their early entries are used (for the final location),
    unless the file at the final place is another file (rewritten: another inode), which is
    described anew. Method: the committer's folders by hand, a deferred pool, a recording store."""
    prefix_dir = tmp_path / "data" / "spark-j"
    prefix = f"file://{prefix_dir}/"
    task = prefix_dir / "_temporary" / "0" / "task_1"
    _put(task / "cat=a" / "part-0.parquet", range(3))
    _put(task / "cat=b" / "part-0.parquet", range(5))
    _put(prefix_dir / "_temporary" / "0" / "_temporary" / "attempt_2" / "part-1.parquet", range(7))
    store, pool = Persists(), Deferred()
    watch = TaskCommitWatch(prefix, SCHEMA, PartitionSpec(0, ()), pool, store)
    assert watch.scan() == 2 and watch.scan() == 0  # the running attempt's file is not handed over; none twice
    pool.run_all()
    assert sorted(p.rsplit("/", 2)[-2] for p in store.persisted) == ["cat=a", "cat=b"]
    assert all("/_temporary/0/task_1/" in p for p in store.persisted)
    # the job's commit: task files renamed into place; one final file then replaced by another
    for name in ("cat=a", "cat=b"):
        (prefix_dir / name).mkdir()
        os.rename(task / name / "part-0.parquet", prefix_dir / name / "part-0.parquet")
    _put(prefix_dir / "cat=b" / "part-0.parquet.new", range(11))
    os.replace(prefix_dir / "cat=b" / "part-0.parquet.new", prefix_dir / "cat=b" / "part-0.parquet")
    final = [f"{prefix}cat=a/part-0.parquet", f"{prefix}cat=b/part-0.parquet"]
    files = watch.describe(None, final)
    assert [(f.file_path, f.record_count) for f in files] == [(final[0], 3), (final[1], 11)]
    watch.stop()


def test_a_file_moved_before_its_early_work_is_described_after_the_job(tmp_path):
    """Goal: the job's commit may rename a file between the scan that saw it and its early
    work; the early work then fails quietly and the file is described (and left to the
    write's own fsyncs) after the job. Also: a watch that never scanned describes all."""
    prefix_dir = tmp_path / "spark-j"
    prefix = f"file://{prefix_dir}/"
    task = prefix_dir / "_temporary" / "0" / "task_1"
    _put(task / "part-0.parquet", range(4))
    store, pool = Persists(), Deferred()
    watch = TaskCommitWatch(prefix, SCHEMA, PartitionSpec(0, ()), pool, store)
    assert watch.scan() == 1
    os.rename(task / "part-0.parquet", prefix_dir / "part-0.parquet")
    pool.run_all()
    assert store.persisted == [] and watch.early == {}
    files = watch.describe(None, [f"{prefix}part-0.parquet"])
    assert [(f.file_path, f.record_count) for f in files] == [(f"{prefix}part-0.parquet", 4)]
    idle = TaskCommitWatch(prefix, SCHEMA, PartitionSpec(0, ()), Deferred(), None)
    assert [f.record_count for f in idle.describe(None, [f"{prefix}part-0.parquet"])] == [4]


def test_the_watch_thread_finds_task_files_while_it_runs_and_stops_with_its_work_done(tmp_path):
    """Goal: as a context, the watch's own thread scans until the context ends, and on leaving
    it every early fsync and footer read is over (the write then reads `early` safely). A task
    folder appears whole: the task's commit renames its attempt folder."""
    from concurrent.futures import ThreadPoolExecutor
    prefix_dir = tmp_path / "spark-j"
    prefix = f"file://{prefix_dir}/"
    store = Persists()
    with ThreadPoolExecutor(2) as pool:
        with TaskCommitWatch(prefix, SCHEMA, PartitionSpec(0, ()), pool, store, poll_s=0.001) as watch:
            attempt = prefix_dir / "_temporary" / "0" / "_temporary" / "attempt_7"
            _put(attempt / "part-7.parquet", range(2))
            os.rename(attempt, prefix_dir / "_temporary" / "0" / "task_7")  # the task's commit
            for _ in range(2000):  # bounded: up to 10 s for a thread that polls every millisecond
                if watch._futures:
                    break
                time.sleep(0.005)
        assert not watch._thread.is_alive()
        assert list(watch.early) == ["part-7.parquet"] and watch.early["part-7.parquet"].entry.record_count == 2
        assert len(store.persisted) == 1
