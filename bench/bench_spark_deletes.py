"""Merge-on-read reads through Spark (issue 29 item 6, second bullet): a table with 10% of its
rows deleted, by deletion vectors (v3) and by position delete files (v2), both written by
icefloe's Spark delete (impl/spark/native_delete.py), read with `icefloe.impl.spark.read`
against Spark's plain read of the same data files, side by side in one local-mode session.

Four sides take turns in balanced orders after unrecorded warm-up rounds (bench_spark.alternate):
icefloe's read (deletes applied), Spark's plain read of the data files (`spark.read.parquet`,
no deletes applied: the goal's baseline, >= 0.8x), and icefloe's read of the same plan with
`apply_deletes=False` (the same files, no deletes: what applying the deletes itself costs),
and Spark's plain read dropping the same rows by `row_index % 10 != 0` over its internal row
index column (what a row-index filter costs in this Spark with no bitset to look up and
nothing built on the driver: the ceiling of the approach). Figures are medians; CPU seconds
are those of this process tree (the JVM and its Python workers). icefloe's side is split
into its phases: planning (`plan()`), building the DataFrame (`to_dataframe()`, Spark's analysis of each step included) and the Spark job
(`collect()`). Two scales: per-query costs weigh less against 10x the rows.
"""
from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_spark import _load_range, alternate, ratio_interval  # noqa: E402

TITLE = "Spark: reading a table with 10% of rows deleted (deletion vectors, position deletes)"

FULL_SCALES = ((1_000_000, 4, 9), (10_000_000, 16, 9))  # rows, data files, recorded rounds
QUICK_SCALES = ((100_000, 4, 1),)
WARMUP = 2
QUERY = ["count(*) as n", "sum(id) as s"]


def _frame(spark, n: int, files: int):
    return spark.range(n, numPartitions=files).selectExpr(
        "id", "cast(id % 8 as string) as cat", "cast(id as double) * 1.5 as v",
        "concat('row-', cast(id * 7919 % 1000003 as string)) as s", "cast(id % 10 as int) as tenth")


def _table(spark, df, work: Path, version: int, n: int) -> tuple[str, dict, list[str], float]:
    """A table of `df` of format `version`, then 10% of its rows deleted merge-on-read by
    icefloe's Spark delete; its name, options, data files and the delete's wall seconds."""
    from icefloe.impl.spark import delete, write
    from icefloe.impl.spark.options import open_table, table_ref
    name = f"icefloe.bench.v{version}_{n}"
    opts = {"catalog-uri": f"sqlite:///{work / 'catalog.db'}", "warehouse": str(work / "wh")}
    write(df, name, {**opts, "create-table": "true", "format-version": str(version)})
    started = time.perf_counter()
    delete(spark, name, opts, "tenth = 0", mode="merge-on-read")
    took = time.perf_counter() - started
    table = open_table(table_ref(opts, name))
    return name, opts, sorted(table.tree.live_data_paths(table.current_snapshot())), took


def _icefloe(spark, name, opts, phases: dict | None, apply_deletes: bool = True):
    """One read of `name` by icefloe's native path, its phases' seconds added to `phases`."""
    from icefloe.impl.spark import plan
    started = time.perf_counter()
    scan = plan(spark, name, opts)
    scan.apply_deletes = apply_deletes
    planned = time.perf_counter()
    df = scan.to_dataframe().selectExpr(*QUERY)
    built = time.perf_counter()
    got = df.collect()
    if phases is not None:
        for key, value in (("plan", planned - started), ("build", built - planned),
                           ("job", time.perf_counter() - built)):
            phases.setdefault(key, []).append(value)
    return got


def _row_index_floor(spark, name, opts, paths):
    """Spark's plain read of the same files dropping the same rows by a row-index
    predicate with nothing to look up (`row_index % 10 != 0`: each file holds a multiple of
    10 consecutive ids from a multiple of 10, so a row's index and its id agree mod 10),
    over the internal column the merge-on-read filters by: what a row-index filter costs
    in this Spark with no bitset and nothing built on the driver, the approach's ceiling."""
    from icefloe.impl.spark import plan
    from icefloe.impl.spark.native_dvs import ROW_INDEX_COLUMN
    schema = plan(spark, name, opts).read_schema().add(ROW_INDEX_COLUMN, "long")
    return (spark.read.schema(schema).parquet(*paths).filter(f"{ROW_INDEX_COLUMN} % 10 != 0")
            .selectExpr(*QUERY).collect())


def _ratio(times: dict, ours: str, theirs: str) -> str:
    a, b = statistics.median(times[ours]), statistics.median(times[theirs])
    lo, hi = ratio_interval(times[ours], times[theirs])
    return f"**{b / a:.2f}** ({lo:.2f}-{hi:.2f})"


def _row(what: str, n: int, times: dict, cpu: dict, phases: dict, loads: list) -> str:
    ms = {k: statistics.median(v) * 1000 for k, v in phases.items()}
    med = {k: statistics.median(v) for k, v in times.items()}
    c = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"{what}: {times}, phases {ms}, loads {loads}", file=sys.stderr, flush=True)
    return (f"| {what} | {n / med['icefloe'] / 1e6:.2f} ({med['icefloe'] * 1000:.0f} ms) | "
            f"{n / med['spark'] / 1e6:.2f} ({med['spark'] * 1000:.0f} ms) | {_ratio(times, 'icefloe', 'spark')} | "
            f"{n / med['no deletes'] / 1e6:.2f} ({med['no deletes'] * 1000:.0f} ms) | "
            f"{_ratio(times, 'icefloe', 'no deletes')} | {_ratio(times, 'row index', 'spark')} | "
            f"{ms['plan']:.0f} / {ms['build']:.0f} / {ms['job']:.0f} | "
            f"{c['icefloe']:.2f} / {c['spark']:.2f} / {c['no deletes']:.2f} | {len(times['icefloe'])} | "
            f"{_load_range(loads)} |")


def run(quick: bool) -> str:
    from icefloe.impl.spark.session import local_session
    scales = QUICK_SCALES if quick else FULL_SCALES
    warmup = 0 if quick else WARMUP
    work = Path(tempfile.mkdtemp(prefix="icefloe-bench-spark-deletes-"))
    load_at_start = os.getloadavg()[0]
    spark = local_session("icefloe-bench-deletes", cores=2, spark_driver_memory="3g")
    lines, notes = [], []
    try:
        for n, files, repeats in scales:
            df = _frame(spark, n, files)  # (not cached: 10^7 rows cached took the default 1 GiB heap)
            expected = n - len(range(0, n, 10))
            for version, kind in ((3, "deletion vectors"), (2, "position delete files")):
                name, opts, paths, delete_s = _table(spark, df, work, version, n)
                got, phases = {}, {}
                times, cpu, loads = alternate({
                    "icefloe": lambda: got.setdefault("rows", _icefloe(spark, name, opts, phases)),
                    "spark": lambda: spark.read.parquet(*paths).selectExpr(*QUERY).collect(),
                    "no deletes": lambda: got.setdefault("all", _icefloe(spark, name, opts, None, False)),
                    "row index": lambda: got.setdefault("floor", _row_index_floor(spark, name, opts, paths))},
                    repeats, warmup=warmup)
                assert got["rows"][0]["n"] == got["floor"][0]["n"] == expected and got["all"][0]["n"] == n, (got, expected)
                assert got["rows"][0]["s"] == got["floor"][0]["s"], got  # the same rows dropped
                recorded = {k: v[warmup:] for k, v in phases.items()}  # (warm-up rounds first)
                lines.append(_row(f"{n / 1e6:g} M rows, v{version}, 10% deleted by {kind} ({len(paths)} data files)",
                                  n, times, cpu, recorded, loads))
                notes.append(f"{n / 1e6:g} M v{version} {delete_s:.1f} s")
    finally:
        spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    load_at_end = os.getloadavg()[0]
    return "\n".join([
        "Tables of (id bigint, cat string, v double, s string, tenth int) written by `icefloe.impl.spark.write`, "
        "one data file per Spark partition, then every row with `tenth = 0` (10%) deleted merge-on-read by "
        f"`icefloe.impl.spark.delete` (its wall time: {'; '.join(notes)}). Query: `count(*), sum(id)`; `local[2]`; "
        f"{warmup} unrecorded warm-up rounds, then the rounds given per row, the four sides in balanced orders. "
        f"Load average {load_at_start:.1f} at the start, {load_at_end:.1f} at the end (2 cores shared with other "
        "engineers' work). Ratios are the other side's median time / icefloe's (with deletes), with a bootstrap 95% "
        "interval: against Spark's plain read of the same files (no deletes applied; >= 0.8 is the goal) and "
        "against icefloe's own read of the same plan with `apply_deletes=False` (the cost of applying the deletes "
        "alone). The row-index ceiling: Spark's plain read of the same files dropping the same rows by a predicate on "
        "Spark's internal row index column with nothing to look up (`_tmp_metadata_row_index % 10 != 0`; each file "
        "holds a multiple of 10 consecutive ids from a multiple of 10, checked: same count and sum), against the plain "
        "read: the share of the plain read's speed that a per-row row-index filter keeps in this Spark with no bitset "
        "and nothing built on the driver. "
        "Phases: icefloe's read (deletes applied) as planning / building the DataFrame / the Spark job, "
        "median ms over the recorded rounds. CPU: seconds of this process tree per read, icefloe / Spark plain / "
        "icefloe without deletes.",
        "",
        "| read | icefloe M rows/s | Spark plain M rows/s | vs Spark plain (95% CI) | icefloe, no deletes "
        "M rows/s | vs no deletes (95% CI) | Spark plain, the same rows dropped by `row_index % 10 != 0`, vs Spark plain (95% CI) | "
        "plan / build / job ms | CPU s | rounds | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *lines,
        "",
        "icefloe's read applies each file's deleted positions (its DV, or its position delete files, read on the "
        "driver) as a row-index filter: the files with deletes in one scan of links whose partition values give each "
        "row its file's constants (impl/spark/linked_files.py: the first word of its deleted positions in one packed "
        "bitset literal, how many rows the bitset covers; no `_metadata` struct, no CASE over files), its word looked "
        "up by its row index (Spark's internal `_tmp_metadata_row_index` column, probed once per session; else "
        "`_metadata.row_index`), no join while the bitset stays under BITSET_WORDS_MAX words "
        "(native_read.py `_merge_by_files`, native_dvs.py). Where the time goes is in docs/spark.md "
        "(\"Merge-on-read speed\").",
    ])
