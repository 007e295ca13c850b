"""Failed tasks, retried / duplicate attempts, conflicts and unknown outcomes: which files
of a Spark job end up in the table, and which are deleted (impl/spark/job.py rules)."""
from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.functions import udf
from pyspark.sql.types import LongType

from icefloe.impl.outcomes import CommitConflictError
from icefloe.impl.spark.job import JobFiles, abort_job
from icefloe.impl.spark.source import IcefloeDataSource, spark_schema
from spark_helpers import PATHS, TABLE, batches_of, data_files_on_disk, live_paths, make_table, open_table, rows, save

pytestmark = pytest.mark.xdist_group("spark")


def _writer(opts, overwrite=False, **extra):
    source = IcefloeDataSource({**opts, "path": TABLE, **extra})
    table = open_table(opts)
    return source.writer(spark_schema(table.metadata.schema()), overwrite)


@pytest.mark.parametrize("path", PATHS)
def test_failing_task_aborts_the_job_and_leaves_no_file(spark, opts, path):
    """Goal: a task that fails after other tasks wrote files fails the job, commits nothing and
    leaves no data file. Method: a UDF raises on one row of one of 4 partitions; files are
    flushed per batch so the other tasks have written some; then list the data folder."""
    make_table(opts)
    open_table(opts).append(rows(range(4)))
    before, files_before = open_table(opts).metadata_location, data_files_on_disk(opts)

    @udf(LongType())
    def explode_on_777(x):
        if x == 777:
            raise ValueError("task failure injected at id 777")
        return x

    df = spark.range(0, 1000, numPartitions=4).selectExpr("id", "cast(id % 4 as string) as cat",
                                                         "cast(id as double) as v")
    df = df.withColumn("id", explode_on_777("id"))
    with pytest.raises(Exception, match="task failure injected"):
        save(df, opts, path, target_file_size_bytes=1)
    assert open_table(opts).metadata_location == before, "nothing was committed"
    assert data_files_on_disk(opts) == files_before, "the aborted job's files are gone"


def test_writer_run_twice_for_one_partition_commits_one_copy(opts):
    """Goal: a duplicate task attempt (retry or speculation) never puts its rows in the table twice
    and its files are removed. Method: run write() twice for partition 0 (two attempts, as
    Spark does), commit the message of one, read back; then Spark's abort after a committed
    outcome deletes nothing the table references."""
    make_table(opts)
    writer = _writer(opts)
    data = rows(range(100))
    first_attempt = writer.write(iter(batches_of(data)))
    second_attempt = writer.write(iter(batches_of(data)))
    assert first_attempt.files and second_attempt.files
    writer.commit([second_attempt])
    table = open_table(opts)
    got = table.scan()
    assert got.num_rows == 100 and sorted(got.column("id").to_pylist()) == list(range(100))
    live = live_paths(table)
    assert live == {f.file_path for f in second_attempt.files}
    on_disk = {f"file://{p}" for p in data_files_on_disk(opts)}
    assert on_disk == live, "the duplicate attempt's files were removed after the commit"
    writer.abort([second_attempt])  # Spark aborts if something fails after commit()
    assert {f"file://{p}" for p in data_files_on_disk(opts)} == live


def test_abort_deletes_this_jobs_files_only(opts):
    """Goal: abort removes every file of this job (the failed task's slot is None, so its files
    are found by the job prefix) and no file of another job. Method: two writers; one
    commits, the other writes twice (one attempt 'failed') and aborts with [message, None]."""
    make_table(opts)
    committed = _writer(opts)
    committed.commit([committed.write(iter(batches_of(rows(range(50)))))])
    kept = set(data_files_on_disk(opts))
    aborted = _writer(opts)
    ok = aborted.write(iter(batches_of(rows(range(50, 80)))))
    aborted.write(iter(batches_of(rows(range(80, 90)))))  # the attempt whose slot is None
    assert len(data_files_on_disk(opts)) > len(kept)
    aborted.abort([ok, None])
    assert set(data_files_on_disk(opts)) == kept
    assert open_table(opts).scan().num_rows == 50


def test_an_attempt_still_writing_after_the_job_ended_leaves_no_file(opts, monkeypatch):
    """Goal: a task attempt that runs on after its job was aborted or committed (Spark fails a
    job and kills its other tasks asynchronously, so abort() can list the job prefix while one
    still writes) leaves no file. Method: drive write() as such a zombie: after abort; with
    abort's listing between its put and its check (the put patched to run abort right after
    it lands); after a commit; each time it raises JobClosed and only the table's files stay."""
    from icefloe.impl.io.local import LocalStore
    from icefloe.impl.spark.job import JobClosed
    make_table(opts)
    late = _writer(opts)
    late.abort([None])
    with pytest.raises(JobClosed):
        late.write(iter(batches_of(rows(range(50)))))
    assert data_files_on_disk(opts) == []
    racing = _writer(opts)
    real_put = LocalStore.put_if_absent

    def put_then_abort(self, location, data):
        info = real_put(self, location, data)
        if location.endswith(".parquet") and "spark-" + racing.job_id in location:
            racing.abort([None])  # the abort lists the prefix after this put, before the check
        return info
    monkeypatch.setattr(LocalStore, "put_if_absent", put_then_abort)
    with pytest.raises(JobClosed):
        racing.write(iter(batches_of(rows(range(50)))))
    monkeypatch.setattr(LocalStore, "put_if_absent", real_put)
    assert data_files_on_disk(opts) == []
    done = _writer(opts)
    done.commit([done.write(iter(batches_of(rows(range(20)))))])
    with pytest.raises(JobClosed):  # a duplicate attempt finishing after the commit
        done.write(iter(batches_of(rows(range(20)))))
    assert {f"file://{p}" for p in data_files_on_disk(opts)} == live_paths(open_table(opts))
    assert open_table(opts).scan().num_rows == 20


def test_after_an_unknown_outcome_abort_deletes_nothing(opts):
    """Goal: when a commit may have landed (outcome unknown, or the commit worker died after it
    began), abort keeps every file. Method: write the job's markers as commit() does at
    those points, then abort."""
    make_table(opts)
    for marker in ("started-only", "unknown"):
        writer = _writer(opts)
        writer.write(iter(batches_of(rows(range(10)))))
        table = open_table(opts)
        job = JobFiles(table.io, table.location, writer.job_id)
        job.mark("started", {"job-id": writer.job_id})
        if marker == "unknown":
            job.mark("outcome", {"outcome": "unknown", "added-files": []})
        files = job.data_files()
        assert files and abort_job(job) == [] and job.data_files() == files


def test_serializable_overwrite_conflicts_with_a_concurrent_append(opts):
    """Goal: an overwrite by filter that started before a concurrent append of matching rows
    fails under serializable isolation (validation on retry), deletes its own files, and
    succeeds under snapshot isolation. Method: create the writer, append 'a' rows through
    icefloe, then write and commit."""
    table = make_table(opts)
    table.append(rows(range(8)))
    writer = _writer(opts, overwrite=True, **{"overwrite-filter": "cat = 'a'"})
    open_table(opts).append(rows([100, 104]))  # 'a' rows committed while the job runs
    message = writer.write(iter(batches_of(rows([200, 204]))))
    with pytest.raises(CommitConflictError, match="NoConflictingData"):
        writer.commit([message])
    assert not any("spark-" + writer.job_id in p for p in data_files_on_disk(opts))
    snapshot = _writer(opts, overwrite=True, **{"overwrite-filter": "cat = 'a'", "isolation-level": "snapshot"})
    open_table(opts).append(rows([108, 112]))  # again while the job runs
    snapshot.commit([snapshot.write(iter(batches_of(rows([300, 304]))))])
    ids = sorted(open_table(opts).scan(row_filter="cat = 'a'").column("id").to_pylist())
    assert ids == [108, 112, 300, 304]  # what the job saw is replaced; what came after it stays


_ = pa


def test_a_commit_with_an_unknown_outcome_keeps_every_file_and_can_still_land(tmp_path):
    """Goal: when the swap's outcome is unknown, neither commit nor abort deletes any file of
    the job, so the commit can still land without dangling references (apache/iceberg #2317).
    Method: a catalog that parks the swap (SwapUnknown), one retry-free commit of a job with a
    duplicate attempt; then abort; then the parked swap is delivered and the table read."""
    from icefloe.conformance.testing.faulty_catalog import FaultInjectingCatalog
    from icefloe.impl.catalog.memory import MemoryCatalog
    from icefloe.impl.format import types as T
    from icefloe.impl.format.parquet import write_data_file
    from icefloe.impl.io.local import LocalStore
    from icefloe.impl.outcomes import Unknown
    from icefloe.impl.spark.job import commit_job, job_prefix
    from icefloe.impl.spark.producers import AppendFiles
    from icefloe.impl.table.commit import RetryPolicy
    from icefloe.impl.table.table import Table, create_table
    from spark_helpers import SCHEMA
    catalog, io = FaultInjectingCatalog(MemoryCatalog()), LocalStore()
    create_table(catalog, "db.t", T.schema_from_arrow(SCHEMA), location=(tmp_path / "t").as_uri(), io=io)
    table = Table(catalog, "db.t", io, retry=RetryPolicy(num_retries=0))
    job = JobFiles(io, table.location, "unknown-outcome")
    written = []
    for attempt in (0, 1):  # attempt 0 'failed' after writing; attempt 1 is committed
        location = f"{job_prefix(table.location, job.job_id)}00000-{attempt}-0000.parquet"
        data, data_file = write_data_file(rows(range(10)), table.metadata.schema(), location)
        io.put_if_absent(location, data)
        written.append(data_file)
    catalog.delay_swaps(1)
    result = commit_job(table, job, AppendFiles([written[1]], job.job_id), "append", [written[1]])
    assert isinstance(result.outcome, Unknown) and result.deleted == []
    assert len(job.data_files()) == 2 and abort_job(job) == [] and len(job.data_files()) == 2
    catalog.deliver(catalog.pending[0])  # the parked request lands after all
    landed = Table(catalog, "db.t", io)
    assert landed.scan().num_rows == 10 and landed.current_snapshot().snapshot_id == result.outcome.snapshot_id


def test_cleanup_waits_until_the_tagged_jobs_tasks_have_ended(spark, tmp_path):
    """Goal: the native path's cleanup after a failed job waits for the job's tasks to end
    (Spark kills them asynchronously). Method: a tagged job whose tasks block until a file
    appears: wait_for_tasks gives up (False) while they run; once released and finished, it
    returns True, and the status store shows the job ended with no task running."""
    import threading
    from icefloe.impl.spark.job_tasks import _state, tagged, wait_for_tasks
    release, tags, done = tmp_path / "release", [], threading.Event()

    def blocked(x):
        import os
        import time
        for _ in range(6000):  # bounded: at most 10 minutes
            if os.path.exists(release):
                return x
            time.sleep(0.1)
        raise TimeoutError("never released")

    def run():
        with tagged(spark) as tag:
            tags.append(tag)
            spark.sparkContext.parallelize(range(2), 2).map(blocked).collect()
        done.set()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    for _ in range(600):  # until the job and its tasks are known to the status store
        if tags and _state(spark, tags[0])[2] > 0:
            break
        threading.Event().wait(0.1)
    assert wait_for_tasks(spark, tags[0], timeout_s=0.5) is False
    release.touch()
    assert wait_for_tasks(spark, tags[0]) is True
    jobs, ended, active = _state(spark, tags[0])
    assert jobs == 1 and ended and active == 0
    worker.join(60)
    assert done.is_set()
