"""Iceberg-Java 1.10.2 (Spark 3.5.9 in `.venv-java`, java_env) reads what the native write
path wrote: the same rows, and the same files planned for each filter."""
from __future__ import annotations

import json
import textwrap

import pytest

from icefloe.conformance.testing import java_env
from icefloe.impl.spark import plan, write
from icefloe.impl.io.locations import canonical_location
from spark_helpers import TABLE, live_paths, open_table

pytestmark = pytest.mark.xdist_group("spark")

# (Spark SQL for Java's rows, Iceberg-Java expression for its planner, icefloe filter)
FILTERS = [("true", ["true"], None), ("cat = 'b'", ["eq", "cat", "b"], "cat = 'b'"),
           ("id >= 150", ["gte", "id", 150], "id >= 150"),
           ("day = date'2024-01-03'", ["eq", "day", "2024-01-03"], "day = '2024-01-03'"),
           ("cat = 'c' and id < 40", ["and", ["eq", "cat", "c"], ["lt", "id", 40]], "cat = 'c' and id < 40"),
           ("amount > 50.00", ["gt", "amount", "50.00"], "amount > 50.00"),
           ("note is null", ["isnull", "note"], "note is null")]

JAVA_SCRIPT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    conf = json.loads(sys.argv[1])
    builder = SparkSession.builder
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    X = spark._jvm.org.apache.iceberg.expressions.Expressions

    def expr(e):
        op, args = e[0], e[1:]
        if op == "true":
            return X.alwaysTrue()
        if op == "and":
            return getattr(X, "and")(expr(args[0]), expr(args[1]))
        if op == "isnull":
            return X.isNull(args[0])
        return {"eq": X.equal, "gte": X.greaterThanOrEqual, "lt": X.lessThan, "gt": X.greaterThan}[op](*args)

    out = {}
    for sql, iceberg, _ in json.loads(sys.argv[3]):
        df = spark.read.format("iceberg").load(sys.argv[2])
        table = df._jdf.queryExecution().analyzed().collectLeaves().head().table().table()
        tasks = table.newScan().filter(expr(iceberg)).planFiles()
        files, it = [], tasks.iterator()
        while it.hasNext():
            files.append(str(it.next().file().location()))
        tasks.close()
        out[sql] = {"rows": sorted([r.id, r.cat, str(r.amount), r.note] for r in df.filter(sql).collect()),
                    "files": sorted(files)}
    print("RESULT " + json.dumps(out))
""")


def test_iceberg_java_reads_the_native_write_path(spark, opts, tmp_path):
    """Goal: a table written by Spark's own Parquet writer under icefloe's commits is read by
    Iceberg-Java with the same rows and the same pruning. Method: native writes (identity, bucket
    and day partitions; decimals; nulls; a dynamic overwrite); Java loads the metadata file and
    runs each filter: its rows equal icefloe's native read, and the files Iceberg-Java's planner
    keeps (Table.newScan().filter(...).planFiles()) are the ones icefloe's plan keeps, and the
    partition and column-bound filters prune (fewer files than the whole table)."""
    java_env.require()  # `make java-venv`: a missing reference engine fails, it is not a skip
    df = spark.range(0, 240, numPartitions=3).selectExpr(
        "id", "substr('abcd', cast(id % 4 as int) + 1, 1) as cat",
        "cast(id * 0.75 as decimal(9, 2)) as amount", "case when id % 5 = 0 then null else concat('n', id) end as note",
        "date_add(date'2024-01-01', cast(id % 6 as int)) as day")
    options = {**opts, "create-table": "true", "partition-by": "cat, bucket(4, id), day(day)"}
    write(df, TABLE, options)
    write(df.filter("cat = 'b'").selectExpr("id + 1000 as id", "cat", "amount", "note", "day"), TABLE, opts,
          mode="dynamic")
    table = open_table(opts)
    conf = java_env.spark_conf("unused", "hadoop", warehouse=f"file://{tmp_path}/java-wh")
    script = tmp_path / "java_read.py"
    script.write_text(JAVA_SCRIPT)
    done = java_env.run_script(script, json.dumps(conf), table.metadata_location, json.dumps(FILTERS), timeout_s=600)
    assert done.returncode == 0, done.stderr[-3000:]
    java = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])
    for sql, _, ours_filter in FILTERS:
        scan = plan(spark, TABLE, opts, row_filter=ours_filter)
        ours = sorted([r.id, r.cat, str(r.amount), r.note] for r in scan.to_dataframe().collect())
        assert java[sql]["rows"] == ours, sql
        ours_files = sorted(canonical_location(p) for p in scan.plan.column("file_path").to_pylist())
        assert [canonical_location(p) for p in java[sql]["files"]] == ours_files, sql
    every = len(java["true"]["files"])
    assert len(java["true"]["rows"]) == 240 and every == len(live_paths(table))
    pruned = {sql: len(java[sql]["files"]) for sql, _, _ in FILTERS[1:]}
    assert all(0 < n < every for n in pruned.values()), (every, pruned)
