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
            try:
                future.set_result(fn(*args))
            except Exception as e:  # noqa: BLE001 - as a pool does: kept in the future
                future.set_exception(e)
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
    assert store.persisted == []  # the fsyncs are the pool's
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
    assert watch.synced(final) == {final[0]}  # the replaced file is fsynced after the job
    files = watch.describe(None, final)
    assert [(f.file_path, f.record_count) for f in files] == [(final[0], 3), (final[1], 11)]
    watch.stop()


def test_a_file_moved_before_its_early_fsync_is_fsynced_after_the_job(tmp_path):
    """Goal: the job's commit may rename a file between the scan that read its footer and its
    early fsync; that fsync then fails quietly and the file is left to the write's own
    fsyncs after the job (its footer, of the same file, is used). Also: a watch that never
    scanned describes all."""
    prefix_dir = tmp_path / "spark-j"
    prefix = f"file://{prefix_dir}/"
    task = prefix_dir / "_temporary" / "0" / "task_1"
    _put(task / "part-0.parquet", range(4))
    store, pool = Persists(), Deferred()
    watch = TaskCommitWatch(prefix, SCHEMA, PartitionSpec(0, ()), pool, store)
    assert watch.scan() == 1
    os.rename(task / "part-0.parquet", prefix_dir / "part-0.parquet")
    pool.run_all()
    assert watch.synced([f"{prefix}part-0.parquet"]) == set()
    assert watch.early["part-0.parquet"].described
    files = watch.describe(None, [f"{prefix}part-0.parquet"])
    assert [(f.file_path, f.record_count) for f in files] == [(f"{prefix}part-0.parquet", 4)]
    idle = TaskCommitWatch(prefix, SCHEMA, PartitionSpec(0, ()), Deferred(), None)
    assert [f.record_count for f in idle.describe(None, [f"{prefix}part-0.parquet"])] == [4]


def test_a_file_changed_after_its_early_fsync_is_not_counted_as_synced(tmp_path):
    """Goal: an early fsync counts only for the file as it was: a file rewritten in place (same
    inode, other size or modification time) or replaced (another inode) after it is fsynced
    after the job; a file only renamed is not fsynced again. Method: three task files, one
    left alone, one appended to, one replaced, then the job's renames by hand."""
    prefix_dir = tmp_path / "spark-j"
    prefix = f"file://{prefix_dir}/"
    task = prefix_dir / "_temporary" / "0" / "task_1"
    for k in range(3):
        _put(task / f"part-{k}.parquet", range(k + 1))
    store, pool = Persists(), Deferred()
    watch = TaskCommitWatch(prefix, SCHEMA, PartitionSpec(0, ()), pool, store)
    assert watch.scan() == 3
    pool.run_all()
    with open(task / "part-1.parquet", "ab") as f:
        f.write(b"x")
    _put(task / "part-2.new", range(9))
    os.replace(task / "part-2.new", task / "part-2.parquet")
    final = [f"{prefix}part-{k}.parquet" for k in range(3)]
    for k in range(3):
        os.rename(task / f"part-{k}.parquet", prefix_dir / f"part-{k}.parquet")
    assert watch.synced(final) == {final[0]}


def test_the_watch_thread_finds_task_files_while_it_runs_and_stops_with_its_work_done(tmp_path):
    """Goal: as a context, the watch's own thread scans until the context ends, and on leaving
    it every early footer read is over (the write then reads `early` safely); `synced` waits
    for the early fsyncs. A task folder appears whole: the task's commit renames its attempt
    folder."""
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
                if watch.early:
                    break
                time.sleep(0.005)
        assert not watch._thread.is_alive()
        assert list(watch.early) == ["part-7.parquet"] and watch.early["part-7.parquet"].entry.record_count == 2
        os.rename(prefix_dir / "_temporary" / "0" / "task_7" / "part-7.parquet", prefix_dir / "part-7.parquet")
        assert watch.synced([f"{prefix}part-7.parquet"]) == {f"{prefix}part-7.parquet"}
        assert len(store.persisted) == 1


def test_with_the_job_folders_watched_a_task_commit_wakes_the_watch_without_polling(tmp_path, monkeypatch):
    """Goal: once the prefix, `_temporary` and `_temporary/<n>` exist, the watch thread sleeps
    until inotify reports a new entry (a task's commit renames its attempt folder into
    `_temporary/<n>/`), not on a timer. Method: both timers set to an hour; the folders made
    before the watch starts; a task commit by hand must be found within 10 s."""
    from concurrent.futures import ThreadPoolExecutor
    import icefloe.impl.spark.task_commits as TC
    monkeypatch.setattr(TC, "WATCHED_WAIT_S", 3600.0)
    prefix_dir = tmp_path / "spark-j"
    prefix = f"file://{prefix_dir}/"
    attempts = prefix_dir / "_temporary" / "0" / "_temporary"
    attempts.mkdir(parents=True)
    store = Persists()
    with ThreadPoolExecutor(2) as pool:
        with TaskCommitWatch(prefix, SCHEMA, PartitionSpec(0, ()), pool, store, poll_s=3600.0) as watch:
            for _ in range(50):  # bounded: until the thread has made its first look (and added its watches)
                if len(watch._events._watched) == 3:
                    break
                time.sleep(0.01)
            _put(attempts / "attempt_3" / "part-3.parquet", range(6))
            os.rename(attempts / "attempt_3", prefix_dir / "_temporary" / "0" / "task_3")
            for _ in range(1000):  # bounded: 10 s
                if watch.early:
                    break
                time.sleep(0.01)
            found = len(watch.early)
        assert found == 1 and watch.early["part-3.parquet"].entry.record_count == 6


def test_folder_events_report_new_entries_and_wakes_and_refuse_missing_folders(tmp_path):
    """Goal: FolderEvents watches existing folders only; its wait returns on a folder created
    in a watched folder, on a file renamed into it from elsewhere, and on wake(); close()
    frees it. Method: each time a thread waits an hour and must be done within 30 s of the
    change (a missing event leaves it waiting: the test fails)."""
    import threading
    from icefloe.impl.spark.folder_events import FolderEvents
    watched, elsewhere = tmp_path / "w", tmp_path / "o"
    watched.mkdir()
    elsewhere.mkdir()
    (elsewhere / "f.txt").write_text("x")
    events = FolderEvents()
    assert not events.watch(str(tmp_path / "missing"))
    assert events.watch(str(watched)) and events.watch(str(watched))
    for change in (lambda: (watched / "made").mkdir(),
                   lambda: os.rename(elsewhere / "f.txt", watched / "f.txt"),
                   events.wake):
        waiter = threading.Thread(target=events.wait, args=(3600,), daemon=True)
        waiter.start()
        change()
        waiter.join(30)
        assert not waiter.is_alive()
    events.close()
    events.wake()  # after close: nothing happens
