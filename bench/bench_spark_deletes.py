"""Merge-on-read reads through Spark (issue 29 item 6, second bullet): a table with 10% of its
rows deleted, by deletion vectors (v3) and by position delete files (v2), both written by
icefloe's Spark delete (impl/spark/native_delete.py), read with `icefloe.impl.spark.read`
against Spark's plain read of the same data files, side by side in one local-mode session.

The sides take turns in balanced orders after unrecorded warm-up rounds (bench_spark.alternate);
figures are medians, CPU seconds are those of this process tree (the JVM and its Python
workers). Spark's plain read returns the deleted rows too, so the ratio is the cost of
applying the deletes (and of icefloe's planning), the goal being >= 0.8x.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_spark import WARMUP_ROUNDS, _frame, _row, alternate  # noqa: E402

TITLE = "Spark: reading a table with 10% of rows deleted (deletion vectors, position deletes)"

FULL_ROWS, QUICK_ROWS = 1_000_000, 100_000
FULL_REPEATS, QUICK_REPEATS = 9, 1
QUERY = ["count(*) as n", "sum(id) as s"]


def _table(spark, df, work: Path, version: int) -> tuple[str, dict, list[str], float]:
    """A table of `df` of format `version`, then 10% of its rows deleted merge-on-read by
    icefloe's Spark delete; its name, options, data files and the delete's wall seconds."""
    from icefloe.impl.spark import delete, write
    from icefloe.impl.spark.options import open_table, table_ref
    name = f"icefloe.bench.v{version}"
    opts = {"catalog-uri": f"sqlite:///{work / 'catalog.db'}", "warehouse": str(work / "wh")}
    write(df, name, {**opts, "create-table": "true", "format-version": str(version)})
    started = time.perf_counter()
    delete(spark, name, opts, "tenth = 0", mode="merge-on-read")
    took = time.perf_counter() - started
    table = open_table(table_ref(opts, name))
    return name, opts, sorted(table.tree.live_data_paths(table.current_snapshot())), took


def run(quick: bool) -> str:
    from icefloe.impl.spark import read
    from icefloe.impl.spark.session import local_session
    n = QUICK_ROWS if quick else FULL_ROWS
    repeats = QUICK_REPEATS if quick else FULL_REPEATS
    work = Path(tempfile.mkdtemp(prefix="icefloe-bench-spark-deletes-"))
    load_at_start = os.getloadavg()[0]
    spark = local_session("icefloe-bench-deletes", cores=2)
    lines, notes = [], []
    try:
        df = _frame(spark, n).selectExpr("*", "cast(id % 10 as int) as tenth").cache()
        df.count()
        expected = n - len(range(0, n, 10))
        for version, kind in ((3, "deletion vectors"), (2, "position delete files")):
            name, opts, files, delete_s = _table(spark, df, work, version)
            got = {}
            times, cpu, loads = alternate({
                "icefloe": lambda: got.setdefault("rows", read(spark, name, opts).selectExpr(*QUERY).collect()),
                "spark": lambda: spark.read.parquet(*files).selectExpr(*QUERY).collect()},
                repeats, warmup=2 if not quick else 0)
            assert got["rows"][0]["n"] == expected, (got, expected)
            lines.append(_row(f"v{version}, 10% deleted by {kind} ({len(files)} data files)", n, times, cpu, loads,
                              " (no deletes applied)"))
            notes.append(f"v{version}: icefloe's Spark delete of 10% of the rows took {delete_s:.1f} s")
    finally:
        spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    load_at_end = os.getloadavg()[0]
    return "\n".join([
        f"{n:,} rows (id bigint, cat string, v double, s string, tenth int) written by `icefloe.impl.spark.write` "
        f"in 4 data files, then every row with `tenth = 0` (10%) deleted merge-on-read by "
        f"`icefloe.impl.spark.delete` ({'; '.join(notes)}). Query: `count(*), sum(id)`; `local[2]`; "
        f"2 unrecorded warm-up rounds (of bench_spark's {WARMUP_ROUNDS} for writes), then {repeats} rounds per "
        f"comparison. Load average {load_at_start:.1f} at the start, {load_at_end:.1f} at the end (2 cores shared "
        "with other engineers' work). Ratio = Spark's plain read time / icefloe's (>= 0.8 is the goal), with a "
        "bootstrap 95% interval; CPU is icefloe / Spark seconds (this process tree) and their ratio.",
        "",
        "| read | icefloe M rows/s | Spark plain M rows/s | ratio (95% CI) | CPU s icefloe / Spark = ratio | rounds | load |",
        "|---|---|---|---|---|---|---|",
        *lines,
        "",
        "icefloe's read applies each file's deleted positions (its DV, or its position delete files, read on the "
        "driver) as a row-index filter on `_metadata.row_index`: a bitset literal per file, each file a scan of its "
        "own, no join (native_read.py `_merge_by_files`, native_dvs.py). Where the time goes is in docs/spark.md "
        "(\"Merge-on-read speed\").",
    ])
