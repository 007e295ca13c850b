"""Planning and maintenance on Spark: pushed filters prune files (counted), distributed
planning plans the same files as local planning, compaction commits a validated rewrite."""
from __future__ import annotations

import pytest
from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, StringEndsWith

from icefloe.impl.format.manifest import ManifestContent
from icefloe.impl.format.parquet import write_data_file
from icefloe.impl.spark.job import JobFiles, commit_job, job_prefix
from icefloe.impl.spark.maintenance import compact
from icefloe.impl.spark.options import table_ref
from icefloe.impl.spark.planning import plan_files_distributed
from icefloe.impl.spark.producers import RewriteDataFiles
from icefloe.impl.spark.reader import FilesPartition, ManifestsPartition
from icefloe.impl.spark.source import IcefloeDataSource
from icefloe.impl.outcomes import Committed, Conflict
from icefloe.impl.table.scan import plan_files
from spark_helpers import TABLE, data_files_on_disk, make_table, open_table, rows

pytestmark = pytest.mark.xdist_group("spark")


def _eight_appends(opts):
    table = make_table(opts)
    for k in range(8):  # ids k*100 .. k*100+99, every file narrow in id, 4 partitions by cat
        table.append(rows(range(k * 100, k * 100 + 100)))
    return open_table(opts)


def _planned_files(opts, filters, **extra) -> tuple[int, list]:
    source = IcefloeDataSource({**opts, "path": TABLE, **extra})
    reader = source.reader(source.schema())
    left = list(reader.pushFilters(filters))
    count = 0
    for p in reader.partitions():
        if isinstance(p, FilesPartition):
            count += len(p.tasks)
        else:
            assert isinstance(p, ManifestsPartition)
            count += len(p.group.manifests)
    return count, left


def test_pushed_filters_prune_files(spark, opts):
    """Goal: filters Spark pushes prune by partition and by column statistics, and results stay
    exact. Method: count the files the reader plans for cat = 'a' and id >= 700 against all
    files; then run the same queries through Spark with pushdown on."""
    table = _eight_appends(opts)
    all_files = len(table.tree.live_data_paths(table.current_snapshot()))
    assert all_files == 32
    assert _planned_files(opts, [])[0] == 32
    by_partition, left = _planned_files(opts, [EqualTo(("cat",), "a")])
    assert by_partition == 8 and left == []
    by_stats, _ = _planned_files(opts, [GreaterThanOrEqual(("id",), 700)])
    assert by_stats == 4
    both, left = _planned_files(opts, [EqualTo(("cat",), "a"), GreaterThanOrEqual(("id",), 700),
                                       StringEndsWith(("cat",), "a")])
    assert both == 1 and [type(f).__name__ for f in left] == ["StringEndsWith"]
    # A fresh load() per query: PySpark 4.3 keeps the reader it pushed filters into with the
    # loaded relation, so a later query on the same DataFrame that pushes nothing would
    # reuse the earlier query's filter (docs/spark.md "Known limits").
    def load():
        return spark.read.format("icefloe").options(**opts).load(TABLE)
    assert load().filter("cat = 'a' and id >= 700").count() == 25
    assert load().filter("cat like '%a' and id >= 700").count() == 25
    assert load().filter("v < 10 or cat = 'b'").count() == 20 + 200 - 5


def test_distributed_planning_matches_local_planning(spark, opts):
    """Goal: reading manifests in Spark tasks plans the same files, and reads the same rows, as
    planning in one process. Method: plan_files_distributed vs scan.plan_files, with and
    without a filter; a read with planning=distributed (one task per manifest group)."""
    table = _eight_appends(opts)
    table.delete("id < 50")  # a copy-on-write delete: files rewritten, manifests filtered
    table = open_table(opts)
    snapshot = table.current_snapshot()
    ref = table_ref(opts, TABLE)
    for expr in (None, "id >= 450 and cat = 'b'"):
        from icefloe.impl.format import expressions as E
        from icefloe.impl.format.expression_parser import parse as parse_filter
        e = E.AlwaysTrue() if expr is None else parse_filter(expr)
        local = {t.data_file.file_path for t in plan_files(table.tree, table.metadata, snapshot, e)}
        distributed = plan_files_distributed(spark, ref, table.metadata, snapshot, e)
        assert {t.data_file.file_path for t in distributed} == local and len(distributed) == len(local)
    count, _ = _planned_files(opts, [], planning="distributed")
    assert count == len(table.tree.manifests(snapshot))
    df = spark.read.format("icefloe").options(**opts).option("planning", "distributed").load(TABLE)
    assert sorted(r.id for r in df.select("id").collect()) == list(range(50, 800))


def test_compaction_job_rewrites_and_validates(spark, opts):
    """Goal: compaction as a Spark job keeps every row and reduces files; a rewrite whose inputs
    were deleted meanwhile is refused and removes its own files. Method: compact 8 appends;
    then commit a rewrite planned before a concurrent delete of its inputs."""
    table = _eight_appends(opts)
    before = sorted(table.scan().column("id").to_pylist())
    result = compact(spark, TABLE, opts)
    assert isinstance(result.outcome, Committed) and result.outcome.snapshot_id is not None
    table = open_table(opts)
    assert table.current_snapshot().operation == "replace"
    assert sorted(table.scan().column("id").to_pylist()) == before
    assert len(table.tree.live_data_paths(table.current_snapshot())) == 4
    assert set(data_files_on_disk(opts)) >= {p.removeprefix("file://") for p in result.added}

    table.append(rows(range(1000, 1008)))
    table = open_table(opts)
    start = table.current_snapshot()
    inputs = [e.data_file for _, e in table.tree.live_entries(start, ManifestContent.DATA)
              if e.data_file.partition == ("a",)]
    table.delete("cat = 'a'")  # removes the rewrite's inputs before it commits
    job = JobFiles(table.io, table.location, "rewrite-after-delete")
    location = f"{job_prefix(table.location, job.job_id)}cat=a/00000-0000-x.parquet"
    data, new_file = write_data_file(rows(range(0, 8, 4)), table.metadata.schema(), location, ("a",))
    table.io.put_if_absent(location, data)
    outcome = commit_job(open_table(opts), job, RewriteDataFiles(inputs, [new_file], job.job_id, start.snapshot_id),
                         "replace", [new_file], [f.file_path for f in inputs], start.snapshot_id).outcome
    assert isinstance(outcome, Conflict) and "FilesStillLive" in outcome.reason
    assert job.data_files() == []


def test_planning_tasks_are_balanced_contiguous_runs_of_manifests():
    """Goal: executor planning splits the manifests into few contiguous groups of about equal
    entries, more only where a group would exceed its bound. Method: balanced_runs on equal,
    skewed and tiny inputs; the runs cover every manifest once, in order."""
    from icefloe.impl.spark.planning import balanced_runs
    for weights, groups_max, cap in (([1000] * 1000, 4, 250_000), ([1000] * 1000, 4, 100_000),
                                     ([5, 1, 1, 1, 1, 1], 3, 100), ([7], 4, 1), ([1] * 3, 8, 10), ([], 4, 10)):
        runs = balanced_runs(weights, groups_max, cap)
        assert [i for s, e in runs for i in range(s, e)] == list(range(len(weights)))
        assert all(e > s for s, e in runs)
        if weights:
            assert len(runs) == min(len(weights), max(groups_max, -(-sum(weights) // cap)))
    assert balanced_runs([1000] * 1000, 4, 250_000) == [(0, 250), (250, 500), (500, 750), (750, 1000)]
    assert len(balanced_runs([1000] * 1000, 4, 100_000)) == 10
