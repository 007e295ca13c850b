"""icefloe's native Spark paths vs Spark's own Parquet writer and reader, in one local-mode
Spark session, on the same data and files (issue 15); merge-on-read reads; planning at
10^5 and 10^6 data files (bench/spark_planning.py)."""
from __future__ import annotations

import io
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

TITLE = "Spark: icefloe's native paths vs Spark's Parquet writer and reader"

FULL_ROWS, QUICK_ROWS = 1_000_000, 100_000
FULL_REPEATS, QUICK_REPEATS = 3, 1
QUERY = ["sum(id) as s_id", "sum(v) as s_v", "max(length(s)) as m_s", "count(distinct cat) as n_cat"]


def _frame(spark, n: int):
    return spark.range(n, numPartitions=4).selectExpr(
        "id", "cast(id % 8 as string) as cat", "cast(id as double) * 1.5 as v",
        "concat('row-', cast(id * 7919 % 1000003 as string)) as s")


def _timed(fn):
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def _delete_file(table, kind: str, data_file=None, ids=None):
    """A position delete file for every 10th row of `data_file`, or an equality delete file
    on id for `ids` (Parquet with the spec's field ids), described for a row delta."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import uuid
    from icefloe.impl.format import types as T
    from icefloe.impl.format.manifest import DataFile, DataFileContent
    from icefloe.impl.format.parquet import data_file_metrics
    if kind == "position":
        n = data_file.record_count
        data = pa.table({"file_path": pa.array([data_file.file_path] * len(range(0, n, 10)), pa.string()),
                         "pos": pa.array(range(0, n, 10), pa.int64())},
                        schema=pa.schema([pa.field("file_path", pa.string(), False, {T.FIELD_ID_KEY: "2147483546"}),
                                          pa.field("pos", pa.int64(), False, {T.FIELD_ID_KEY: "2147483545"})]))
        schema = T.Schema((T.NestedField(2147483546, "file_path", T.STRING, True),
                           T.NestedField(2147483545, "pos", T.LONG, True)))
        content, extra = DataFileContent.POSITION_DELETES, {}
    else:
        data = pa.table({"id": pa.array(ids, pa.int64())},
                        schema=pa.schema([pa.field("id", pa.int64(), False, {T.FIELD_ID_KEY: "1"})]))
        schema = T.Schema((T.NestedField(1, "id", T.LONG, True),))
        content, extra = DataFileContent.EQUALITY_DELETES, {"equality_ids": (1,)}
    out = io.BytesIO()
    pq.write_table(data, out)
    raw = out.getvalue()
    location = f"{table.location}/data/{kind}-deletes-{uuid.uuid4()}.parquet"
    table.io.put_if_absent(location, raw)
    metrics = data_file_metrics(raw, schema, data)
    return DataFile(location, "PARQUET", (), content=content, file_size_in_bytes=len(raw), **metrics, **extra)


def _same(a, b) -> bool:
    """Aggregate rows equal (sums of doubles up to the order Spark added them in)."""
    import math
    return all(x.keys() == y.keys() and all(math.isclose(x[k], y[k], rel_tol=1e-12) for k in x.keys())
               for x, y in zip((r.asDict() for r in a), (r.asDict() for r in b))) and len(a) == len(b)


def run(quick: bool) -> str:
    from icefloe.impl.spark import plan, read, write
    from icefloe.impl.spark.options import open_table, table_ref
    from icefloe.impl.spark.session import local_session
    n = QUICK_ROWS if quick else FULL_ROWS
    repeats = QUICK_REPEATS if quick else FULL_REPEATS
    work = Path(tempfile.mkdtemp(prefix="icefloe-bench-spark-"))
    load_at_start = os.getloadavg()[0]
    spark = local_session("icefloe-bench", cores=2)
    lines, tables = [], {}
    try:
        df = _frame(spark, n).cache()
        df.count()
        for layout, partition_by in (("unpartitioned", None), ("partitioned by cat (8)", "cat")):
            ours_s, theirs_s = [], []
            for r in range(repeats):
                opts = {"catalog-uri": f"sqlite:///{work / 'catalog.db'}", "warehouse": str(work / "wh"),
                        "create-table": "true", **({"partition-by": partition_by} if partition_by else {})}
                name = f"icefloe.bench.t_{partition_by or 'flat'}_{r}"
                out = work / f"parquet-{partition_by or 'flat'}-{r}"

                def theirs():
                    w = df.write.mode("overwrite")
                    return (w.partitionBy(partition_by) if partition_by else w).parquet(str(out))
                first, second = (lambda: write(df, name, opts), theirs) if r % 2 == 0 else (theirs, lambda: write(df, name, opts))
                a, _ = _timed(first)
                b, _ = _timed(second)
                ours_s.append(a if r % 2 == 0 else b)
                theirs_s.append(b if r % 2 == 0 else a)
            tables[layout] = (name, opts)
            ours, theirs_t = statistics.median(ours_s), statistics.median(theirs_s)
            lines.append(f"| write, {layout} | {n / ours / 1e6:.2f} | {n / theirs_t / 1e6:.2f} | {theirs_t / ours:.2f} |")
        for layout, (name, opts) in tables.items():
            table = open_table(table_ref(opts, name))
            files = sorted(table.tree.live_data_paths(table.current_snapshot()))
            ours_s, theirs_s = [], []
            for r in range(repeats):
                a, got = _timed(lambda: read(spark, name, opts).selectExpr(*QUERY).collect())
                b, want = _timed(lambda: spark.read.parquet(*files).selectExpr(*QUERY).collect())
                assert _same(got, want), (got, want)
                ours_s.append(a)
                theirs_s.append(b)
            ours, theirs_t = statistics.median(ours_s), statistics.median(theirs_s)
            lines.append(f"| read, {layout} ({len(files)} files) | {n / ours / 1e6:.2f} | {n / theirs_t / 1e6:.2f} | "
                         f"{theirs_t / ours:.2f} |")
        # Merge-on-read: 10% of the rows of a native table deleted by position, then (on a
        # second table) by equality on id; Spark's plain read of the same data files is the
        # reference (it returns the deleted rows too).
        mor = []
        for kind in ("position", "equality"):
            base = {"catalog-uri": f"sqlite:///{work / 'catalog.db'}", "warehouse": str(work / "wh"), "create-table": "true"}
            name = f"icefloe.bench.mor_{kind}"
            write(df, name, base)
            table = open_table(table_ref(base, name))
            live = [e.data_file for _, e in table.tree.live_entries(table.current_snapshot())]
            if kind == "position":
                deletes = [_delete_file(table, kind, f) for f in live]
            else:
                deletes = [_delete_file(table, kind, ids=list(range(0, n, 10)))]
            table.add_delete_files(deletes, [f.file_path for f in live] if kind == "position" else ())
            files = sorted(f.file_path for f in live)
            ours_s, theirs_s = [], []
            for _ in range(repeats):
                a, got = _timed(lambda: read(spark, name, base).selectExpr("count(*) as n", "sum(id) as s").collect())
                b, _ = _timed(lambda: spark.read.parquet(*files).selectExpr("count(*) as n", "sum(id) as s").collect())
                ours_s.append(a)
                theirs_s.append(b)
            table.refresh()
            assert got[0]["n"] == table.scan(columns=["id"]).num_rows == n - len(range(0, n, 10)), got
            ours, theirs_t = statistics.median(ours_s), statistics.median(theirs_s)
            mor.append(f"| read, 10% deleted by {kind} deletes ({len(deletes)} delete files) | {n / ours / 1e6:.2f} | "
                       f"{n / theirs_t / 1e6:.2f} (no deletes applied) | {theirs_t / ours:.2f} |")
        scan = plan(spark, "icefloe.bench.mor_equality", base)
        planning_stats = scan.stats.to_json()
    finally:
        spark.stop()
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import spark_planning
    sizes = (10_000, 100_000) if quick else (100_000, 1_000_000)
    planned = spark_planning.measure(work / "planning", sizes)
    shutil.rmtree(work, ignore_errors=True)
    plan_rows = []
    for r in planned:
        plan_rows.append(f"| {r['size']:,} | {r['filter']} | {r['who']} ({r['mode']}) | {r['seconds']:.2f} | "
                         f"{r['files']:,} | {r['rss_mb']:.0f} | {r['requests']:,} |")
    load_at_end = os.getloadavg()[0]
    return "\n".join([
        f"{n:,} rows (id bigint, cat string, v double, s string), cached in Spark before the writes; `local[2]`; "
        f"median of {repeats} run(s), icefloe and Spark alternating; load average {load_at_start:.1f} at start, "
        f"{load_at_end:.1f} at the end (2 cores shared with other work). icefloe writes with "
        "`icefloe.impl.spark.write`: Spark's own Parquet writer under the job prefix (field ids, the partition "
        "spec's transforms computed in Spark), a Spark job reading each file's footer for its DataFile, one "
        "commit (manifest, manifest list, metadata, SQLite swap). Spark's writer is `df.write.parquet` (no table, "
        "no commit). Reads run the same aggregate over every column: `icefloe.impl.spark.read` (icefloe plans, "
        "Spark's vectorized reader reads by field id) vs `spark.read.parquet(files)` on the same files.",
        "",
        "| what | icefloe M rows/s | Spark Parquet M rows/s | ratio icefloe/Spark |",
        "|---|---|---|---|",
        *lines, *mor,
        "",
        "Merge-on-read rows: the read applies the deletes as anti-joins in Spark (position deletes on "
        "`_metadata.file_path` / `_metadata.row_index`; equality deletes on id with sequence numbers), and its "
        "count equals icefloe's own scan; Spark's plain read of the same data files returns the deleted rows as "
        f"well, so its ratio is the cost of applying the deletes. Plan stats of the equality table: {planning_stats}.",
        "",
        "Planning (bench/spark_planning.py): one synthesized snapshot of N data files in 1,000 manifests "
        "(partition, counts and id bounds per file; the files do not exist: planning never opens one), planned "
        "unfiltered and with `id >= ...` keeping 1% (pruned by column bounds, every manifest read), each planner "
        "in a fresh process: icefloe's single-process planner, icefloe's executor planner (the native read's "
        "`planning='distributed'`: the manifest list on the driver, the manifests decoded and pruned in a Spark "
        "job, file tasks back as Arrow), pyiceberg 0.12's `plan_files`. RSS: the planning process's peak (for "
        "Spark, the Python driver's, where the plan lands; the JVM's is not counted); requests: storage reads "
        "(metadata, manifest list, manifests; for Spark driver plus executors).",
        "",
        "| data files | filter | planner | seconds | files planned | peak RSS MB | storage reads |",
        "|---|---|---|---|---|---|---|",
        *plan_rows,
    ])


if __name__ == "__main__":
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    print(run(quick=True))
