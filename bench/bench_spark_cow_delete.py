"""Copy-on-write deletes through Spark (impl/spark/cow_delete.py, session 13) against the
driver path they replaced: `icefloe.impl.spark.delete(..., mode="copy-on-write")`, where a
first Spark job counts each planned file's live and matching rows and a second writes the
survivors of the touched files with Spark's Parquet writer on the executors, against
impl/table's `Table.delete(row_filter, mode="copy-on-write")` (producer.DeleteWhere: pyarrow
reads and rewrites every touched file in the driver process), side by side in one
local-mode session.

A delete changes its table, so every round deletes from tables of its own: before the
rounds, one table per side and round (warm-up rounds included) is written by
`icefloe.impl.spark.write` from the same frame (the same rows in the same files; not
timed), and removed after the rows are checked. The two sides take turns in balanced
orders after unrecorded warm-up rounds (bench_spark.alternate); figures are medians, CPU
seconds those of this process tree (the driver's Python, Spark's JVM and its Python
workers). Both sides must leave the same rows (count and sum of ids, read by icefloe's
scan) and the same operation; the Spark side must have run its Spark jobs (its snapshot
names the job), not the driver fallback.
"""
from __future__ import annotations

import itertools
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_spark import _load_range, _timed, alternate, ratio_interval  # noqa: E402

TITLE = "Spark: copy-on-write deletes, Spark's jobs vs Table.delete in the driver"

# rows, data files, recorded rounds (10^7 rows: the driver path took ~2 s a round in a first run at 4 x 10^6,
# far under a minute, so the full scale is kept; 3 rounds, as each needs two fresh 10^7-row tables written)
FULL_SCALES = ((1_000_000, 4, 5), (10_000_000, 16, 3))
QUICK_SCALES = ((100_000, 4, 1),)
WARMUP = 1
# (label, the filter given to both sides; {first}: the first file's rows, its ids are 0..first-1)
SHAPES = (("1% of rows in every file (`hundredth = 0`)", "hundredth = 0"),
          ("1% of one file's rows (`id < {first} and hundredth = 0`)", "id < {first} and hundredth = 0"))


def _frame(spark, n: int, files: int):
    return spark.range(n, numPartitions=files).selectExpr(
        "id", "cast(id % 8 as string) as cat", "cast(id as double) * 1.5 as v",
        "concat('row-', cast(id * 7919 % 1000003 as string)) as s", "cast(id % 100 as int) as hundredth")


def _state(opts: dict, name: str) -> dict:
    """What a delete left: live rows, sum of ids, data files, the snapshot's operation and
    whether its summary names a Spark job (cow_delete's commit does, Table.delete's not)."""
    import pyarrow.compute as pc
    from icefloe.impl.spark.options import open_table, table_ref
    from icefloe.impl.spark.producers import SUMMARY_JOB_ID
    table = open_table(table_ref(opts, name))
    snap = table.current_snapshot()
    ids = table.scan(columns=["id"]).column("id")
    return {"rows": len(ids), "sum": pc.sum(ids).as_py(), "operation": snap.operation,
            "files": len(table.tree.live_data_paths(snap)), "job": SUMMARY_JOB_ID in snap.summary,
            "removed": int(snap.summary.get("deleted-data-files", 0))}


def _ratio(times: dict) -> str:
    a, b = statistics.median(times["spark"]), statistics.median(times["driver"])
    lo, hi = ratio_interval(times["spark"], times["driver"])
    return f"**{b / a:.2f}** ({lo:.2f}-{hi:.2f})"


def _row(what: str, times: dict, cpu: dict, loads: list, state: dict) -> str:
    med = {k: statistics.median(v) for k, v in times.items()}
    c = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"{what}: {times}, cpu {cpu}, loads {loads}, state {state}", file=sys.stderr, flush=True)
    return (f"| {what} | {med['spark']:.2f} ({state['count']:.2f} / {state['write']:.2f}) | {med['driver']:.2f} | {_ratio(times)} | "
            f"{c['spark']:.1f} / {c['driver']:.1f} | {state['removed']} | {state['files']['spark']} / {state['files']['driver']} | {state['rows']:,} / {state['sum']:,} | "
            f"{len(times['spark'])} | {_load_range(loads)} |")


def _compare(spark, df, work: Path, n: int, files: int, version: int, row_filter: str, rounds: int,
             warmup: int) -> tuple[dict, dict, list, dict]:
    """Both deletes of `row_filter`, each round on a fresh table per side; their times, CPU
    seconds, loads and the (equal) state they left."""
    from icefloe.impl.spark import delete, write
    from icefloe.impl.spark.options import open_table, table_ref
    work = Path(tempfile.mkdtemp(dir=work))  # a catalog and warehouse of its own (names recur across rows)
    opts = {"catalog-uri": f"sqlite:///{work / 'catalog.db'}", "warehouse": str(work / "wh")}
    serial = itertools.count()
    fresh = {"spark": [], "driver": []}
    for side in fresh:
        for _ in range(warmup + rounds):
            name = f"icefloe.bench.v{version}_{n}_{side}_{next(serial)}"
            write(df, name, {**opts, "create-table": "true", "format-version": str(version)})
            fresh[side].append(name)
    done = {"spark": [], "driver": []}

    def spark_side():
        name = fresh["spark"].pop(0)
        delete(spark, name, opts, row_filter, mode="copy-on-write")
        done["spark"].append(name)

    def driver_side():
        name = fresh["driver"].pop(0)
        open_table(table_ref(opts, name)).delete(row_filter, mode="copy-on-write")
        done["driver"].append(name)

    from icefloe.impl.spark import cow_delete
    phases = {"count": [], "write": []}
    real_counts, real_write = cow_delete._counts, cow_delete.write_frame
    cow_delete._counts = _timed(real_counts, phases["count"])  # Spark job 1: live and matching rows per file
    cow_delete.write_frame = _timed(real_write, phases["write"])  # Spark job 2: the survivors written
    try:
        times, cpu, loads = alternate({"spark": spark_side, "driver": driver_side}, rounds, warmup=warmup)
    finally:
        cow_delete._counts, cow_delete.write_frame = real_counts, real_write
    states = {side: [_state(opts, name) for name in names] for side, names in done.items()}
    first = states["spark"][0]
    for side, got in states.items():
        for s in got:
            same = {k: v for k, v in s.items() if k not in ("job", "files")} == \
                {k: v for k, v in first.items() if k not in ("job", "files")}
            assert same, (side, s, first)  # (how many files the survivors go to is each writer's own)
            assert s["job"] == (side == "spark"), (side, s)  # the Spark side ran cow_delete, not the fallback
    shutil.rmtree(work / "wh", ignore_errors=True)  # (the catalog file stays: small, maybe still open)
    return times, cpu, loads, {**first, "files": {side: got[0]["files"] for side, got in states.items()},
                                **{k: statistics.median(v[-rounds:]) for k, v in phases.items()}}


# One process per side and size: the peak resident memory of the driver's Python process over
# the delete (VmHWM, reset by /proc/self/clear_refs once the table is written; ru_maxrss would
# carry the parent's peak across exec); the JVM is another process.
MEMORY_SCRIPT = r"""
import sys
from pathlib import Path
from icefloe.impl.spark.session import local_session
from icefloe.impl.spark import write, delete
from icefloe.impl.spark.options import open_table, table_ref
side, n, files, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
spark = local_session("icefloe-bench-cow-delete-memory", cores=2, spark_driver_memory="3g")
opts = {"catalog-uri": f"sqlite:///{work / 'c.db'}", "warehouse": str(work / "wh")}
sys.path.insert(0, sys.argv[5])
from bench_spark_cow_delete import _frame  # the timed rounds' rows
write(_frame(spark, n, files), "icefloe.bench.t", {**opts, "create-table": "true", "format-version": "3"})
def status(key):
    return int(open("/proc/self/status").read().split(key + ":")[1].split()[0])
# ru_maxrss survives exec (this process would start with its parent's peak): VmHWM, reset here
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = status("VmRSS")
if side == "driver":
    open_table(table_ref(opts, "icefloe.bench.t")).delete("hundredth = 0", mode="copy-on-write")
else:
    delete(spark, "icefloe.bench.t", opts, "hundredth = 0", mode="copy-on-write")
after = status("VmHWM")
t = open_table(table_ref(opts, "icefloe.bench.t")).scan()
print("PEAK", before, after, t.num_rows)
spark.stop()
"""


def _peak_memory(n: int, files: int) -> dict:
    """side -> (resident KiB before the delete, peak KiB during it, rows left), each in a process of its own."""
    import subprocess
    out = {}
    for side in ("driver", "spark"):
        work = Path(tempfile.mkdtemp(prefix="icefloe-bench-cow-memory-"))
        try:
            done = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, side, str(n), str(files), str(work),
                                   str(Path(__file__).resolve().parent)],
                                  capture_output=True, text=True, timeout=1800)
            line = next((x for x in done.stdout.splitlines() if x.startswith("PEAK ")), None)
            if line is None:
                raise RuntimeError(f"memory run {side} failed: {done.stderr[-2000:]}")
            before, after, rows = map(int, line.split()[1:])
            out[side] = (before, after, rows)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    assert out["driver"][2] == out["spark"][2], out
    return out


def run(quick: bool) -> str:
    from icefloe.impl.spark.session import local_session
    scales = QUICK_SCALES if quick else FULL_SCALES
    warmup = 0 if quick else WARMUP
    work = Path(tempfile.mkdtemp(prefix="icefloe-bench-spark-cow-delete-"))
    load_at_start = os.getloadavg()[0]
    spark = local_session("icefloe-bench-cow-delete", cores=2, spark_driver_memory="3g")
    lines = []
    try:
        for n, files, rounds in scales:
            df = _frame(spark, n, files)
            first_file_rows = n // files
            for version in (3, 2):
                for label, template in SHAPES:
                    row_filter = template.format(first=first_file_rows)
                    times, cpu, loads, state = _compare(spark, df, work, n, files, version, row_filter, rounds,
                                                        warmup)
                    lines.append(_row(f"{n / 1e6:g} M rows in {files} files, v{version}, "
                                      f"{label.format(first=first_file_rows)}", times, cpu, loads, state))
    finally:
        spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    memory_rows = []
    for n, files, _ in scales:
        peaks = _peak_memory(n, files)
        d, k = peaks["driver"], peaks["spark"]
        memory_rows.append(f"| {n / 1e6:g} M rows in {files} files, v3, 1% of every file | "
                           f"{k[0] / 1024:.0f} -> {k[1] / 1024:.0f} (+{(k[1] - k[0]) / 1024:.0f}) | "
                           f"{d[0] / 1024:.0f} -> {d[1] / 1024:.0f} (+{(d[1] - d[0]) / 1024:.0f}) | {d[2]:,} |")
    load_at_end = os.getloadavg()[0]
    return "\n".join([
        "Tables of (id bigint, cat string, v double, s string, hundredth int = id % 100) written by "
        "`icefloe.impl.spark.write`, one data file per Spark partition (each holds consecutive ids), unpartitioned. "
        "Two shapes: 1% of the rows in every file (every file rewritten), and 1% of the first file's rows (one file "
        "rewritten). Spark: `icefloe.impl.spark.delete(spark, name, opts, filter, mode=\"copy-on-write\")` "
        "(cow_delete.py: a counting job, then Spark's writer rewrites the survivors on the executors, `local[2]`, "
        "3 GiB driver heap). Driver: `Table.delete(filter, mode=\"copy-on-write\")` on an equal table opened by "
        "`icefloe.impl.spark.options.open_table` (pyarrow reads and rewrites the touched files in this process). "
        f"Every round deletes from fresh tables written before the rounds (not timed); {warmup} unrecorded warm-up "
        "round, then the rounds given per row, the two sides in alternating order. Checked in every round: both "
        "sides leave the same live rows (count and sum of ids by icefloe's scan), the same operation (`overwrite`) and remove the same number of files; the Spark side's snapshot names "
        "its Spark job (it did not fall back to the driver). "
        f"Load average {load_at_start:.1f} at the start, {load_at_end:.1f} at the end (2 cores shared with other "
        "engineers' work; the last column is the range of the 1-minute load average over a row's rounds). "
        "Ratio: the driver's median seconds / Spark's (above 1: the Spark path is faster), bootstrap 95% interval. "
        "CPU: median seconds of this process tree per delete, Spark / driver. The Spark side's two jobs: "
        "median seconds of its counting job (`cow_delete._counts`) and of its write (`write_frame`: Spark's write "
        "job, its footers and the fsyncs started), the rest is planning and the commit.",
        "",
        "| delete | Spark s (count job / write job) | driver s | driver / Spark (95% CI) | CPU s Spark / driver | files removed "
        "| data files after, Spark / driver | rows left / sum of ids (both sides) | rounds | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *lines,
        "",
        "Peak resident memory of the driver's Python process over one delete, each side in a process of its own "
        "(resident MiB when the delete starts -> the peak during it, `VmHWM` reset by `/proc/self/clear_refs` after "
        "the table is written by Spark in the same process; Spark's JVM is another process and not counted). Both "
        "leave the same number of rows.",
        "",
        "| delete | Spark path: MiB at start -> peak (growth) | driver path: MiB at start -> peak (growth) "
        "| rows left |",
        "|---|---|---|---|",
        *memory_rows,
    ])


if __name__ == "__main__":
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    print(run(quick=True))
