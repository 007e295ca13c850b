"""The native paths (impl/spark/native_write.py, native_read.py): Spark's own Parquet files
under icefloe's commits; merge-on-read in Spark against icefloe's scan and pyiceberg's;
dynamic partition overwrite; the Unknown rule; incremental reads; executor planning."""
from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from icefloe.impl.format.manifest import ManifestContent
from icefloe.impl.outcomes import CommitConflictError, CommitStateUnknownError, Committed
from icefloe.impl.spark import plan, read, write
from icefloe.impl.spark.job import JobFiles, abort_job
from icefloe.impl.table.scan import IncrementalGap
from spark_helpers import TABLE, data_files_on_disk, live_paths, make_table, open_table, rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "impl" / "table"))
from delete_writers import equality_delete_file, position_delete_file  # noqa: E402

pytestmark = pytest.mark.xdist_group("spark")


def _ids(df) -> list[int]:
    return sorted(r.id for r in df.select("id").collect())


def _frame(spark, ids, cat=None):
    ids = list(ids)
    cat_sql = f"'{cat}'" if cat else "substr('abcd', cast(id % 4 as int) + 1, 1)"
    return spark.range(min(ids), max(ids) + 1, numPartitions=2).selectExpr(
        "id", f"{cat_sql} as cat", "cast(id as double) * 0.5 as v")


def test_native_files_are_iceberg_files(spark, opts):
    """Goal: a native write's files carry the table's field ids, hold one partition each, and
    their entries' metrics match the data. Method: write partitioned by cat and bucket(3, id);
    read each file's footer with pyarrow; compare entries with the rows of each file; the
    entries built on the executors equal those built on the driver."""
    make_table(opts, "cat, bucket(3, id)")
    result = write(_frame(spark, range(300)), TABLE, opts)
    assert isinstance(result.outcome, Committed) and result.records == 300
    table = open_table(opts)
    from icefloe.impl.format.transforms import BucketTransform
    for _, e in table.tree.live_entries(table.current_snapshot(), ManifestContent.DATA):
        f = e.data_file
        assert "/data/spark-" in f.file_path and "/cat_identity=" in f.file_path and "/id_bucket=" in f.file_path
        pf = pq.ParquetFile(f.file_path.removeprefix("file://"))
        ids = [int(pf.schema_arrow.field(n).metadata[b"PARQUET:field_id"]) for n in ("id", "cat", "v")]
        assert ids == [1, 2, 3]
        data = pf.read()
        assert {(c, BucketTransform(3).apply(i)) for i, c in zip(data["id"].to_pylist(), data["cat"].to_pylist())} \
            == {f.partition}
        assert f.record_count == data.num_rows and f.value_counts[1] == data.num_rows
        from icefloe.impl.format import conversions
        from icefloe.impl.format import types as T
        assert conversions.from_bytes(T.LONG, f.lower_bounds[1]) == min(data["id"].to_pylist())
        assert conversions.from_bytes(T.LONG, f.upper_bounds[1]) == max(data["id"].to_pylist())
    assert sorted(table.scan().column("id").to_pylist()) == list(range(300))
    from icefloe.impl.spark.footers import describe_files  # executors and driver describe alike
    paths = sorted(table.tree.live_data_paths(table.current_snapshot()))
    args = (paths, table.metadata.schema(), table.metadata.spec())
    assert describe_files(spark, *args, driver_files_max=0) == describe_files(spark, *args, driver_files_max=len(paths))


def test_merge_on_read_in_spark_equals_icefloe_and_pyiceberg(spark, opts, tmp_path, monkeypatch):
    """Goal: position and equality deletes applied in Spark give exactly icefloe's scan, and
    pyiceberg's where it reads them (position deletes; pyiceberg 0.12 refuses equality deletes).
    Method: native appends; a position delete file over two data files; then an equality delete
    in one partition, and a later append of a deleted key (sequence numbers decide); compare
    native reads (local and executor planning; merged a scan per file and in one scan) with both
    peers at every snapshot."""
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
    make_table(opts, "cat")
    write(_frame(spark, range(200)), TABLE, opts)
    table = open_table(opts)
    files = sorted(table.tree.live_data_paths(table.current_snapshot()))
    deleted = [(files[0], 0), (files[0], 2), (files[1], 1)]
    partition = next(e.data_file.partition for _, e in table.tree.live_entries(table.current_snapshot())
                     if e.data_file.file_path == files[0])
    assert isinstance(table.add_delete_files([position_delete_file(table, deleted[:2], partition)], [files[0]]),
                      Committed)
    table.refresh()
    other = next(e.data_file.partition for _, e in table.tree.live_entries(table.current_snapshot())
                 if e.data_file.file_path == files[1])
    table.add_delete_files([position_delete_file(table, deleted[2:], other)], [files[1]])
    table.refresh()
    theirs = PyIcebergSqlCatalog("icefloe", uri=opts["catalog-uri"], warehouse=f"file://{tmp_path}/warehouse")
    position_only = table.current_snapshot().snapshot_id
    pyiceberg_ids = sorted(theirs.load_table("db.t").scan().to_arrow().column("id").to_pylist())
    assert _ids(read(spark, TABLE, opts)) == pyiceberg_ids == sorted(table.scan().column("id").to_pylist())
    assert len(pyiceberg_ids) == 197

    table.add_delete_files([equality_delete_file(table, "id", [4, 8, 12, 5], ("a",))])  # 5 is not in 'a'
    table.refresh()
    write(_frame(spark, [8], cat="a"), TABLE, opts)  # a deleted key appended again: visible
    table.refresh()
    import icefloe.impl.spark.native_read as NR
    per_file = NR.MERGE_BRANCHES_MAX     # read once: the loop sets it to 0 for its last pair
    for snapshot in table.metadata.snapshots:
        want = sorted(table.scan(snapshot_id=snapshot.snapshot_id).column("id").to_pylist())
        for planning, branches in (("local", per_file), ("distributed", per_file),
                                   ("local", 0)):  # a scan per file, or one scan matched by path (_merge_by_rows)
            monkeypatch.setattr(NR, "MERGE_BRANCHES_MAX", branches)
            got = _ids(read(spark, TABLE, opts, snapshot_id=snapshot.snapshot_id, planning=planning))
            assert got == want, (snapshot.summary, planning, branches)
    monkeypatch.undo()
    final = _ids(read(spark, TABLE, opts))
    assert 4 not in final and 12 not in final and 5 in final and final.count(8) == 1
    filtered = _ids(read(spark, TABLE, opts, row_filter="cat = 'a' and id < 40"))
    assert filtered == sorted(table.scan(row_filter="cat = 'a' and id < 40").column("id").to_pylist())
    assert _ids(read(spark, TABLE, opts, snapshot_id=position_only)) == pyiceberg_ids


def test_dynamic_partition_overwrite(spark, opts, monkeypatch):
    """Goal: mode='dynamic' replaces exactly the partitions the job wrote, and conflicts under
    serializable isolation when another writer added to one of them meanwhile. Method: write
    four partitions, dynamically overwrite two; then start a dynamic overwrite, let an append to
    one of its partitions commit first, and expect CommitConflictError and no file left."""
    make_table(opts, "cat")
    write(_frame(spark, range(100)), TABLE, opts)
    result = write(_frame(spark, range(1000, 1010), cat="b").union(_frame(spark, range(2000, 2004), cat="c")),
                   TABLE, opts, mode="dynamic")
    assert isinstance(result.outcome, Committed) and open_table(opts).current_snapshot().operation == "overwrite"
    got = read(spark, TABLE, opts)
    assert got.filter("cat = 'b'").count() == 10 and got.filter("cat = 'c'").count() == 4
    assert got.filter("cat = 'a'").count() == 25 and got.filter("cat = 'd'").count() == 25

    from icefloe.impl.spark.task_commits import TaskCommitWatch
    real = TaskCommitWatch.describe

    def append_meanwhile(*args, **kwargs):  # runs between Spark's write and the commit
        open_table(opts).append(rows([3000], cats=("b",)))
        return real(*args, **kwargs)

    monkeypatch.setattr(TaskCommitWatch, "describe", append_meanwhile)
    with pytest.raises(CommitConflictError, match="NoNewDataInPartitions"):
        write(_frame(spark, range(4000, 4003), cat="b"), TABLE, opts, mode="dynamic")
    monkeypatch.undo()
    assert not any("4000" in p for p in data_files_on_disk(opts))
    assert _ids(read(spark, TABLE, opts, row_filter="cat = 'b'")) == list(range(1000, 1010)) + [3000]


def test_unknown_outcome_keeps_every_file(spark, opts, monkeypatch):
    """Goal: when the native commit's outcome is unknown, no file of the job is deleted (by the
    commit or by a later abort), and the parked swap can still land. Method: the table's catalog
    parks the swap (FaultInjectingCatalog), no retries; write; abort; deliver; read."""
    from icefloe.conformance.testing.faulty_catalog import FaultInjectingCatalog
    from icefloe.impl.catalog.sql import SqlCatalog
    from icefloe.impl.io.local import LocalStore
    from icefloe.impl.table.commit import RetryPolicy
    from icefloe.impl.table.table import Table
    import icefloe.impl.spark.source as source
    make_table(opts)
    catalog = FaultInjectingCatalog(SqlCatalog(opts["catalog-uri"], name="icefloe"))
    monkeypatch.setattr(source, "open_table",
                        lambda ref: Table(catalog, "db.t", LocalStore(), retry=RetryPolicy(num_retries=0)))
    catalog.delay_swaps(1)
    with pytest.raises(CommitStateUnknownError):
        write(_frame(spark, range(50)), TABLE, opts)
    job_dirs = {p.split("/data/")[1].split("/")[0] for p in data_files_on_disk(opts)}
    assert len(job_dirs) == 1
    job = JobFiles(LocalStore(), open_table(opts).location, job_dirs.pop().removeprefix("spark-"))
    files = job.data_files()
    assert files and abort_job(job) == [] and job.data_files() == files
    catalog.deliver(catalog.pending[0])
    assert _ids(read(spark, TABLE, opts)) == list(range(50))


def test_incremental_read_and_executor_planning(spark, opts):
    """Goal: the incremental read returns the rows of the appends between two snapshots along
    main's ancestry (not an overwrite's), and fails on a start that is not an ancestor; the
    executor planner plans the same files as the local one and says so in its stats. Method:
    three appends and an overwrite; incremental reads between them; plan both ways."""
    make_table(opts)
    for k in range(3):
        write(_frame(spark, range(k * 10, k * 10 + 10)), TABLE, opts)
    write(_frame(spark, range(500, 505), cat="a"), TABLE, opts, mode="overwrite", overwrite_filter="cat = 'a'")
    write(_frame(spark, range(600, 602)), TABLE, opts)
    s = [x.snapshot_id for x in open_table(opts).history()]
    assert _ids(read(spark, TABLE, opts, start_snapshot_id=s[0], end_snapshot_id=s[2])) == list(range(10, 30))
    assert _ids(read(spark, TABLE, opts, start_snapshot_id=s[1])) == list(range(20, 30)) + [600, 601]
    table = open_table(opts)
    table.rollback_to(s[1])
    write(_frame(spark, range(700, 702)), TABLE, opts)
    with pytest.raises(IncrementalGap):
        read(spark, TABLE, opts, start_snapshot_id=s[2])
    local, distributed = plan(spark, TABLE, opts, planning="local"), plan(spark, TABLE, opts, planning="distributed")
    assert local.stats.mode == "local" and distributed.stats.mode == "distributed" and distributed.stats.tasks >= 1
    assert sorted(local.plan.column("file_path").to_pylist()) == sorted(distributed.plan.column("file_path").to_pylist())
    assert plan(spark, TABLE, {**opts}).stats.mode == "local"  # a small table plans on the driver


def test_a_cached_frame_is_written_as_stored_with_its_field_ids(spark, opts):
    """Goal: a frame Spark has cached, whose columns are the table's, is relabelled with the
    field ids rather than copied through a projection (the plan written is the cache itself),
    and its files carry the ids; a frame PySpark believes cached but Spark's cache manager no
    longer holds, and a cached frame that needs a cast, go through the aliased projection
    and carry the ids too. Method: conform such frames; look at the optimized plan's root;
    write each and read every file's Parquet schema."""
    from icefloe.impl.spark.native_write import conform
    make_table(opts, None)
    table = open_table(opts)
    schema = table.metadata.schema()
    cached = _frame(spark, range(100)).cache()
    cached.count()
    root = conform(cached, schema)._jdf.queryExecution().optimizedPlan().getClass().getSimpleName()
    assert root == "InMemoryRelation"  # no projection between the cache and the writer
    widened = spark.range(100, 200, numPartitions=2).selectExpr(
        "cast(id as int) as id", "'a' as cat", "cast(id as float) as v").cache()
    widened.count()
    assert conform(widened, schema)._jdf.queryExecution().optimizedPlan().getClass().getSimpleName() == "Project"
    forgotten = _frame(spark, range(200, 300)).cache()
    forgotten.count()
    spark.catalog.clearCache()  # PySpark's is_cached stays True
    assert forgotten.is_cached
    for frame in (cached, widened, forgotten):
        assert isinstance(write(frame, TABLE, opts).outcome, Committed)
    table = open_table(opts)
    for path in table.tree.live_data_paths(table.current_snapshot()):
        pf = pq.ParquetFile(path.removeprefix("file://"))
        assert [int(f.metadata[b"PARQUET:field_id"]) for f in pf.schema_arrow] == [1, 2, 3]
    assert sorted(table.scan().column("id").to_pylist()) == list(range(300))
    cached.unpersist()
    widened.unpersist()


def test_a_column_dropped_and_added_again_is_written_with_its_new_field_id(spark, opts):
    """Goal: the JVM values conform reuses between writes (the relabelling type, an aliased
    column with its field id) are told apart by the field ids they carry: after `v` is dropped
    and added again (field id 4), the same cached frame and the same uncached frame are written
    with 4, not the 3 of their first write. Method: write both frames, evolve the schema, write
    them again; read every file's Parquet field ids."""
    from icefloe.impl.table import schema_evolution as SE
    make_table(opts, None)
    cached = _frame(spark, range(100)).cache()
    cached.count()
    computed = _frame(spark, range(100, 200))

    def ids_of_new_files(before):
        table = open_table(opts)
        paths = table.tree.live_data_paths(table.current_snapshot()) - before
        assert len(paths) >= 2
        return {tuple(int(f.metadata[b"PARQUET:field_id"])
                      for f in pq.ParquetFile(p.removeprefix("file://")).schema_arrow) for p in paths}
    for frame in (cached, computed):
        before = live_paths(open_table(opts))
        write(frame, TABLE, opts)
        assert ids_of_new_files(before) == {(1, 2, 3)}
    table = open_table(opts)
    for change in (SE.drop_column_change("v"), SE.add_column_change("v", "double")):
        commit = table.begin(change)
        commit.run()
        assert isinstance(table.adopt(commit), Committed)
    table = open_table(opts)
    assert table.metadata.schema().find_field("v").field_id == 4
    for frame in (cached, computed):
        before = live_paths(open_table(opts))
        write(frame, TABLE, opts)
        assert ids_of_new_files(before) == {(1, 2, 4)}
    assert len(read(spark, TABLE, opts).where("v is not null").collect()) == 200  # the rows written with id 4
    cached.unpersist()


def test_partition_columns_join_the_conforming_projection_when_the_columns_are_as_stored(spark, opts):
    """Goal: when a frame's columns are the table's as they are, the partition columns are
    computed in the same projection as the field ids (one analysis, one projection over the
    cache), and otherwise in a projection over the conformed columns (a widened `cat` read
    through its cast); either way the files carry the ids and the right partition tuples.
    Method: conform with a one-step partition column and count the analysed plan's
    projections; write both frames to a table partitioned by cat; read files and entries."""
    from icefloe.impl.spark.native_write import conform
    make_table(opts, "cat")
    schema = open_table(opts).metadata.schema()
    cached = _frame(spark, range(100)).cache()
    cached.count()
    also = [("cat_identity", "`cat`")]

    def projections(frame):
        plan = frame._jdf.queryExecution().analyzed()
        found = []
        while plan.getClass().getSimpleName() == "Project":
            found.append(plan)
            plan = plan.child()
        return len(found)
    one = conform(cached, schema, also=also)
    assert one.columns == ["id", "cat", "v", "cat_identity"]
    assert projections(one) == 1 + projections(cached)
    renamed = cached.withColumnRenamed("cat", "CAT")  # matched case-insensitively: not as stored
    two = conform(renamed, schema, also=also)
    assert two.columns == ["id", "cat", "v", "cat_identity"]
    assert projections(two) == 2 + projections(renamed)
    for frame in (cached, renamed):
        assert isinstance(write(frame, TABLE, opts).outcome, Committed)
    table = open_table(opts)
    entries = [e.data_file for _, e in table.tree.live_entries(table.current_snapshot(), ManifestContent.DATA)]
    assert len(entries) >= 8
    for f in entries:
        data = pq.read_table(f.file_path.removeprefix("file://"))
        assert [int(x.metadata[b"PARQUET:field_id"]) for x in data.schema] == [1, 2, 3]
        assert set(data["cat"].to_pylist()) == {f.partition[0]}
    assert sorted(table.scan().column("id").to_pylist()) == sorted(list(range(100)) * 2)
    cached.unpersist()


def test_native_write_conforms_columns_to_the_table(spark, opts):
    """Goal: the native write matches columns to the table by name (case-insensitively when
    unambiguous), widens only safely, fills a missing optional column with nulls, refuses extra,
    narrowed and missing required columns, fails the job on a null in a required column, gives
    every column (struct fields included) its field id, writes timestamps as INT64 micros and
    restores the session's timestamp setting. Method: a table with a struct and a timestamp;
    write frames that differ from it in each way; read the Parquet schema and the rows back."""
    import pyarrow as pa
    from icefloe.impl.catalog.sql import SqlCatalog
    from icefloe.impl.format import types as T
    from icefloe.impl.io.local import LocalStore
    from icefloe.impl.table.append_schema import SchemaMismatch
    from icefloe.impl.table.table import create_table
    schema = T.schema_from_arrow(pa.schema([
        pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
        pa.field("pt", pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.float64())])),
        pa.field("ts", pa.timestamp("us")), pa.field("note", pa.string())]))
    create_table(SqlCatalog(opts["catalog-uri"], name="icefloe"), "db.t", schema, None,
                 f"file://{opts['warehouse']}/db.db/t", io=LocalStore())
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    frame = spark.range(3).selectExpr("cast(id as int) as ID", "named_struct('x', cast(id as short), 'y', "
                                      "cast(id as float)) as pt", "timestamp_ntz'2024-01-01 00:00:00' as ts",
                                      "cast(id as string) as name")  # no `note`; int and short widen
    write(frame, TABLE, opts)
    assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "INT96"
    table = open_table(opts)
    paths = sorted(p.removeprefix("file://") for p in table.tree.live_data_paths(table.current_snapshot()))
    for path in paths:
        parquet = pq.ParquetFile(path)
        arrow = parquet.schema_arrow
        ids = {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in arrow}
        assert ids == {f.name: f.field_id for f in schema.fields}  # `note` too, as nulls
        nested = {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in arrow.field("pt").type}
        assert nested == {f.name: f.field_id for f in schema.find_field(3).type.fields}
        ts = parquet.schema.column(parquet.schema.names.index("ts"))
        assert ts.physical_type == "INT64"  # micros, not INT96
    got = sorted(tuple(r) for r in read(spark, TABLE, opts).select("id", "name", "pt.x", "note").collect())
    assert got == [(0, "0", 0, None), (1, "1", 1, None), (2, "2", 2, None)]

    for bad, message in ((frame.selectExpr("*", "1 as extra"), "not in the table"),
                         (frame.selectExpr("cast(ID as string) as id"), "does not fit"),
                         (frame.drop("ID"), "required column 'id' is missing"),
                         (frame.selectExpr("cast(ID as byte) as id", "cast(ts as date) as ts"), "does not fit")):
        with pytest.raises(SchemaMismatch, match=message):
            write(bad, TABLE, opts)
    with pytest.raises(Exception, match="required column 'id' has a null"):
        write(frame.selectExpr("case when ID = 1 then null else ID end as id"), TABLE, opts)
    assert len(open_table(opts).history()) == 1
    assert data_files_on_disk(opts) == paths


def test_a_file_whose_struct_fields_lack_their_field_ids_is_refused(tmp_path):
    """Goal: the native write's footer check covers struct fields, not only top-level columns
    (a reader matches columns by id, so a struct field without its id would read as nulls).
    Method: Parquet files with the top-level ids right and a struct field's id missing, then
    wrong; describe_file raises DataFileError naming the field; with every id right it passes."""
    import pyarrow as pa
    from icefloe.impl.format import types as T
    from icefloe.impl.format.parquet import DataFileError
    from icefloe.impl.format.transforms import PartitionSpec
    from icefloe.impl.spark.footers import describe_file
    schema = T.Schema((T.NestedField(1, "id", T.LONG, True),
                       T.NestedField(2, "pt", T.StructType((T.NestedField(3, "x", T.INT, False),)), False)))

    def ids(n):
        return {b"PARQUET:field_id": str(n).encode()}
    for inner, message in ((None, "'pt.x' carries no field id"), (ids(9), "'pt.x' carries field id 9, the table says 3"),
                           (ids(3), None)):
        x = pa.field("x", pa.int32(), metadata=inner)
        arrow = pa.schema([pa.field("id", pa.int64(), False, ids(1)), pa.field("pt", pa.struct([x]), metadata=ids(2))])
        path = tmp_path / f"f{len(list(tmp_path.iterdir()))}.parquet"
        pq.write_table(pa.table({"id": [1], "pt": [{"x": 1}]}, schema=arrow), path)
        if message is None:
            assert describe_file(f"file://{path}", schema, PartitionSpec(0, ())).record_count == 1
        else:
            with pytest.raises(DataFileError, match=message):
                describe_file(f"file://{path}", schema, PartitionSpec(0, ()))


def test_footers_are_read_in_a_process_forked_after_a_write(tmp_path):
    """Goal: the driver's footer thread pool, kept between writes, works in a process forked
    after it started (the child has none of its threads; a stale pool would wait forever).
    Method: describe a file in this process, fork, describe it in the child within a bound."""
    import multiprocessing

    import pyarrow as pa
    from icefloe.impl.format import types as T
    from icefloe.impl.format.transforms import PartitionSpec
    from icefloe.impl.spark.footers import describe_files
    schema = T.Schema((T.NestedField(1, "id", T.LONG, True),))
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"id": [1, 2]}, schema=pa.schema([pa.field("id", pa.int64(), False,
                                                                        {b"PARQUET:field_id": b"1"})])), path)
    args = (None, [f"file://{path}"], schema, PartitionSpec(0, ()))
    assert [f.record_count for f in describe_files(*args)] == [2]
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert [f.record_count for f in pool.apply_async(describe_files, args).get(timeout=60)] == [2]


def test_data_files_are_made_durable_before_the_commit_references_them(spark, opts, monkeypatch):
    """Goal: Spark's Parquet writer closes its files without an fsync; the native write fsyncs
    every data file and every directory from theirs up to the table's data folder, before
    the swap that makes them part of the table (as icefloe's own puts are durable). Method:
    record LocalStore.persist's locations and the order of the first swap; a partitioned write."""
    from icefloe.impl.catalog.sql import SqlCatalog
    from icefloe.impl.io.local import LocalStore
    events = []
    real_persist, real_swap = LocalStore.persist, SqlCatalog.swap

    def persist(self, location):
        events.append(("persist", location))
        return real_persist(self, location)

    def swap(self, *args, **kwargs):
        events.append(("swap", None))
        return real_swap(self, *args, **kwargs)
    monkeypatch.setattr(LocalStore, "persist", persist)
    monkeypatch.setattr(SqlCatalog, "swap", swap)
    make_table(opts, "cat")
    write(_frame(spark, range(200)), TABLE, opts)
    table = open_table(opts)
    files = sorted(table.tree.live_data_paths(table.current_snapshot()))
    synced = [loc for kind, loc in events if kind == "persist"]
    # each file fsynced at its place, or while the job ran in its task folder, as the same file
    by_place = {_task_relative(s).removeprefix("file://") for s in synced}
    assert len(files) >= 4 and {f.removeprefix("file://") for f in files} <= by_place
    job_dir = files[0][:files[0].index("/", files[0].index("/data/spark-") + 6)]
    data_dir = job_dir[:job_dir.rindex("/")]
    want_dirs = {f[:f.rindex("/")] for f in files} | {job_dir, data_dir}
    assert want_dirs <= set(synced)
    assert events.index(("swap", None)) > max(i for i, (kind, _) in enumerate(events) if kind == "persist")


def _task_relative(location: str) -> str:
    """`<prefix>_temporary/<n>/task_<id>/<file>` as `<prefix><file>` (where the job's commit puts it)."""
    if "/_temporary/" not in location:
        return location
    head, tail = location.split("/_temporary/", 1)
    return head + "/" + tail.split("/", 2)[2]


def test_a_data_file_that_cannot_be_made_durable_fails_the_write_and_leaves_nothing(spark, opts, monkeypatch):
    """Goal: an fsync that fails (a full or failing disk) fails the write before any commit,
    with the store's typed error, and the job's files go. Method: LocalStore.persist raises
    StoreUnavailable for every fsync of the write's third file (wherever it is: the fsyncs
    made while the job runs fail alike); the table keeps no snapshot and data/ no file."""
    from icefloe.impl.io.base import StoreUnavailable
    from icefloe.impl.io.local import LocalStore
    real_persist, names = LocalStore.persist, []

    def persist(self, location):
        name = "/".join(location.split("/")[-2:])  # partition folder and file name
        if name.endswith(".parquet") and name not in names:
            names.append(name)
        if name in names[2:3]:
            raise StoreUnavailable(location, "fsync failed: [Errno 5] Input/output error")
        return real_persist(self, location)
    monkeypatch.setattr(LocalStore, "persist", persist)
    make_table(opts, "cat")
    metadata_dir = Path(opts["warehouse"], "db.db", "t", "metadata")
    before = sorted(p.name for p in metadata_dir.iterdir())
    with pytest.raises(StoreUnavailable, match="fsync failed"):
        write(_frame(spark, range(200)), TABLE, opts)
    assert open_table(opts).current_snapshot() is None
    assert data_files_on_disk(opts) == []
    # the commit wrote its manifest, list and metadata beside the fsyncs: they went too
    assert sorted(p.name for p in metadata_dir.iterdir()) == before


def test_the_commit_writes_its_metadata_beside_the_fsyncs_and_swaps_after_them(spark, opts, monkeypatch):
    """Goal: the fsyncs of Spark's files hold back only the swap: the commit writes its
    manifests, manifest list and metadata while they run (each is a new, unreferenced object
    until the swap). Method: the first fsync after the job (of a data file or of a folder the
    job's commit renamed files into) waits until the commit has put its metadata JSON (it
    would wait forever, here 60 s, if the commit waited for the fsyncs first); the swap comes
    after every fsync. (The fsyncs made while the job runs, in Spark's task folders, are not
    the ones watched.)"""
    import threading
    from icefloe.impl.catalog.sql import SqlCatalog
    from icefloe.impl.io.local import LocalStore
    make_table(opts)
    events, metadata_put = [], threading.Event()
    real_persist, real_put, real_swap = LocalStore.persist, LocalStore.put_if_absent, SqlCatalog.swap

    def persist(self, location):
        final = "/_temporary/" not in location  # not one of the fsyncs made while the job runs
        if final and not any(kind == "persist" for kind, _ in events):  # a file's, or its folder's
            events.append(("metadata put during the fsyncs", metadata_put.wait(timeout=60)))
        if final:
            events.append(("persist", location))
        return real_persist(self, location)

    def put_if_absent(self, location, data):
        out = real_put(self, location, data)
        if location.endswith(".metadata.json"):
            metadata_put.set()
        return out

    def swap(self, *args, **kwargs):
        events.append(("swap", None))
        return real_swap(self, *args, **kwargs)
    monkeypatch.setattr(LocalStore, "persist", persist)
    monkeypatch.setattr(LocalStore, "put_if_absent", put_if_absent)
    monkeypatch.setattr(SqlCatalog, "swap", swap)
    write(_frame(spark, range(100)), TABLE, opts)
    assert events[0] == ("metadata put during the fsyncs", True)
    assert [kind for kind, _ in events].count("swap") == 1 and events[-1] == ("swap", None)
    assert _ids(read(spark, TABLE, opts)) == list(range(100))
