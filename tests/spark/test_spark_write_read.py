"""The icefloe data source in real Spark (local mode): append / overwrite / read round
trips with schema and partitioning, time travel, typed option errors."""
from __future__ import annotations

import datetime

import pytest

from icefloe.impl.format.manifest import ManifestContent
from icefloe.impl.outcomes import Committed
from icefloe.impl.spark.options import SparkOptionError, table_ref
from spark_helpers import PATHS, TABLE, load, make_table, open_table, save

pytestmark = pytest.mark.xdist_group("spark")


def _frame(spark, start, n, cats="abcd"):
    return spark.range(start, start + n, numPartitions=2).selectExpr(
        "id", f"substr('{cats}', cast(id % {len(cats)} as int) + 1, 1) as cat", "cast(id as double) * 0.5 as v",
        "date_add(date'2024-01-01', cast(id % 30 as int)) as day",
        "timestamp'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) as ts")


def _read(spark, opts, path="source", **extra):
    return load(spark, opts, path, **extra)


def _sorted(df):
    return sorted(tuple(r) for r in df.collect())


@pytest.mark.parametrize("path", PATHS)
def test_append_overwrite_read_round_trip(spark, opts, path):
    """Goal: what Spark writes through icefloe reads back exactly, partitioned by the spec, and
    overwrite-by-filter / full overwrite replace exactly their rows, through the data source and
    the native path. Method: write, read, compare."""
    first = _frame(spark, 0, 200)
    save(first, opts, path, create_table="true", partition_by="cat, day(day)")
    back = _read(spark, opts, path)
    native = path == "native"  # Spark's file sources read every column as nullable
    assert [(f.name, f.dataType.simpleString(), f.nullable or native) for f in back.schema.fields] == [
        ("id", "bigint", native), ("cat", "string", True), ("v", "double", native),
        ("day", "date", True), ("ts", "timestamp", True)]
    assert _sorted(back) == _sorted(first)
    table = open_table(opts)
    for _, e in table.tree.live_entries(table.current_snapshot(), ManifestContent.DATA):
        part_rows = spark.read.parquet(e.data_file.file_path).select("cat").distinct().collect()
        assert [r.cat for r in part_rows] == [e.data_file.partition[0]], "one partition value per file"
    first_snapshot = table.current_snapshot().snapshot_id

    second = _frame(spark, 200, 100)
    save(second, opts, path)
    assert _read(spark, opts, path).count() == 300

    replacement = _frame(spark, 1000, 40, cats="a")
    save(replacement, opts, path, "overwrite", overwrite_filter="cat = 'a'")
    got = _read(spark, opts, path)
    assert got.filter("cat = 'a'").count() == 40 and got.filter("cat = 'a' and id < 1000").count() == 0
    assert got.filter("cat != 'a'").count() == 225  # 300 rows, 75 of them 'a'

    # time travel: the first snapshot is still readable, by id and by timestamp
    assert _sorted(_read(spark, opts, path, snapshot_id=first_snapshot)) == _sorted(first)
    table.refresh()
    ts = table.snapshot_by_id(first_snapshot).timestamp_ms
    assert _read(spark, opts, path, as_of_timestamp=ts).count() == 200
    table.create_tag("before-full-overwrite")

    save(_frame(spark, 5000, 10), opts, path, "overwrite")
    assert sorted(r.id for r in _read(spark, opts, path).select("id").collect()) == list(range(5000, 5010))
    assert _read(spark, opts, path, tag="before-full-overwrite").count() == 265
    history = [s.operation for s in open_table(opts).history()]
    assert history == ["append", "append", "overwrite", "overwrite"]


@pytest.mark.parametrize("path", PATHS)
def test_rows_outside_the_overwrite_filter_fail_the_job(spark, opts, path):
    """Goal: an overwrite whose rows do not match its filter is refused and leaves nothing.
    Method: write 'b' rows under filter cat = 'a'; the job fails, the table is unchanged and
    no data file is left on disk."""
    from spark_helpers import data_files_on_disk
    make_table(opts)
    save(_frame(spark, 0, 8).select("id", "cat", "v"), opts, path)
    before = open_table(opts).metadata_location
    files_before = data_files_on_disk(opts)
    with pytest.raises(Exception, match="do not match overwrite-filter"):
        save(_frame(spark, 100, 8).select("id", "cat", "v"), opts, path, "overwrite", overwrite_filter="cat = 'a'")
    assert open_table(opts).metadata_location == before
    assert data_files_on_disk(opts) == files_before


def test_data_source_and_compaction_name_partition_folders_as_iceberg_does(spark, opts):
    """Goal: the data source's writer and the compaction job lay files out in Iceberg's
    `field=value` folders (transforms in their human form, as the rest of impl and
    Iceberg-Java do), never raw transform numbers. Method: write through the data source with
    identity, day, month and bucket fields, compact, and compare every live file's folder under
    its job prefix with env.partition_path_of of its partition tuple."""
    import re
    from icefloe.impl.spark.maintenance import compact
    from icefloe.impl.table.env import partition_path_of
    frame = _frame(spark, 0, 120).select("id", "cat", "day", "ts")
    spec_text = "cat, day(day), month(ts), bucket(4, id)"
    for _ in range(2):  # two appends: every partition has two small files to compact
        save(frame, opts, "source", create_table="true", partition_by=spec_text)

    def folders(table):
        schema, spec = table.metadata.schema(), table.metadata.spec()
        out = []
        for _, e in table.tree.live_entries(table.current_snapshot(), ManifestContent.DATA):
            folder = re.sub(r"^.*/data/spark-[0-9a-f]+/", "", e.data_file.file_path).rsplit("/", 1)[0]
            assert folder == partition_path_of(spec, schema, e.data_file.partition), e.data_file.file_path
            out.append(folder)
        return out

    table = open_table(opts)
    written = folders(table)
    assert written and all(re.fullmatch(r"cat=[a-d]/day_day=2024-01-\d\d/ts_month=2024-01/id_bucket=[0-3]", f)
                           for f in written), written[:3]
    assert isinstance(compact(spark, TABLE, opts).outcome, Committed)
    table.refresh()
    assert table.current_snapshot().operation == "replace"
    assert sorted(set(folders(table))) == sorted(set(written))


def test_bad_options_are_typed_errors():
    """Goal: a wrong table name or option is a SparkOptionError naming the problem.
    Method: resolve bad option sets."""
    with pytest.raises(SparkOptionError, match="catalog-uri"):
        table_ref({}, "cat.db.t")
    with pytest.raises(SparkOptionError, match="expected <catalog>"):
        table_ref({"catalog-uri": "sqlite:////tmp/x.db"}, "db")
    with pytest.raises(SparkOptionError, match="needs catalog-type=s3"):
        table_ref({"catalog-uri": "sqlite:////tmp/x.db"}, "/tmp/warehouse/db.db/t")
    with pytest.raises(SparkOptionError, match="catalog-type"):
        table_ref({"catalog-type": "hive"}, "cat.db.t")
    ref = table_ref({"catalog-type": "s3", "warehouse": "s3://b/wh"}, "s3://b/wh/db.db/t")
    assert (ref.identifier.namespace, ref.identifier.name) == (("db",), "t")


def test_time_travel_options_are_exclusive(spark, opts):
    """Goal: two snapshot selectors at once, or an unknown snapshot, fail with a clear error.
    Method: load with both snapshot-id and tag; load a snapshot id that does not exist."""
    make_table(opts)
    with pytest.raises(Exception, match="choose one of"):
        _read(spark, opts, snapshot_id=1, tag="x").count()
    with pytest.raises(Exception, match="not retained"):
        _read(spark, opts, snapshot_id=12345).count()


_ = datetime  # dates and timestamps are generated by Spark SQL above
