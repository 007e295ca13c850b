"""icefloe's native Spark paths vs Spark's own Parquet writer and reader, in one local-mode
Spark session, on the same data and files (issue 15); merge-on-read reads. Planning at
10^5 and 10^6 data files is its own benchmark (bench_spark_planning.py).

The machine is shared, so the two sides of each comparison run alternately (A B, B A,
A B, ...) after an unrecorded warm-up round, the figure of each side is its median, and
the 1-minute load average is recorded at every round.
"""
from __future__ import annotations

import io
import itertools
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

TITLE = "Spark: icefloe's native paths vs Spark's Parquet writer and reader"

FULL_ROWS, QUICK_ROWS = 1_000_000, 100_000
FULL_REPEATS, QUICK_REPEATS = 20, 1  # rounds per comparison: a write of 10^6 rows takes ~1-2 s, so load swings weigh
# A write's ratio is judged against 0.95 and its fixed cost is ~3% of a write: at 20 rounds its 95%
# interval was ±5-7% wide on this shared machine (three runs of the same code: 0.93-0.99), 40 narrow it ~1.4x.
FULL_WRITE_REPEATS = 40
WARMUP_ROUNDS = 6  # a fresh JVM writes 10^6 rows in 1.4 s, and ~0.85 s only from its ~7th write on (C2 JIT), on either side
QUERY = ["sum(id) as s_id", "sum(v) as s_v", "max(length(s)) as m_s", "count(distinct cat) as n_cat"]


def _frame(spark, n: int):
    return spark.range(n, numPartitions=4).selectExpr(
        "id", "cast(id % 8 as string) as cat", "cast(id as double) * 1.5 as v",
        "concat('row-', cast(id * 7919 % 1000003 as string)) as s")


def tree_cpu_s(root: int | None = None) -> float:
    """CPU seconds (user + system, reaped children included) of this process and every
    descendant: the Spark JVM and its Python workers. Unlike wall time it hardly depends on
    how many other processes share the cores."""
    root = root or os.getpid()
    parents, ticks = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    tree, frontier = {root}, [root]
    while frontier:  # bounded by the number of processes
        parent = frontier.pop()
        children = [p for p, pp in parents.items() if pp == parent and p not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(ticks.get(p, 0) for p in tree) / os.sysconf("SC_CLK_TCK")


def balanced_orders(n: int) -> list[list[int]]:
    """Orders of n sides in which each side comes right after each other side equally often
    (Williams' design: n orders for even n, 2n for odd n). A side leaves work behind for the
    next (the JVM's garbage, the page cache's dirty pages), so with plain rotation and three
    or more sides each side would mostly follow the same one and pay for it alone."""
    first, low, high = [0], 1, n - 1
    while len(first) < n:
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    orders = [[(x + i) % n for x in first] for i in range(n)]
    return orders + [order[::-1] for order in orders] if n % 2 else orders


def alternate(sides: dict, repeats: int, warmup: int = WARMUP_ROUNDS) -> tuple[dict, dict, list]:
    """Run the sides in turn, round r in the r-th of the balanced orders (cyclically),
    `warmup` rounds unrecorded. Returns the wall seconds and the CPU seconds (tree_cpu_s)
    per side, and the 1-minute load average at each recorded round."""
    names = list(sides)
    orders = balanced_orders(len(names))
    times: dict = {n: [] for n in names}
    cpu: dict = {n: [] for n in names}
    loads = []
    for r in range(warmup + repeats):
        order = [names[i] for i in orders[r % len(orders)]]
        for name in order:
            cpu_before, started = tree_cpu_s(), time.perf_counter()
            sides[name]()
            if r >= warmup:
                times[name].append(time.perf_counter() - started)
                cpu[name].append(tree_cpu_s() - cpu_before)
        if r >= warmup:
            loads.append(os.getloadavg()[0])
    return times, cpu, loads


def _load_range(loads: list) -> str:
    return f"{min(loads):.0f}-{max(loads):.0f}" if loads else "-"


def _delete_file(table, kind: str, data_file=None, ids=None):
    """A position delete file for every 10th row of `data_file`, or an equality delete file
    on id for `ids` (Parquet with the spec's field ids), described for a row delta."""
    import uuid

    import pyarrow as pa
    import pyarrow.parquet as pq
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


def ratio_interval(ours: list, theirs: list, resamples: int = 2000, level: float = 0.95,
                   rng: random.Random | None = None) -> tuple[float, float]:
    """A bootstrap interval for median(theirs) / median(ours): both sides' rounds resampled
    with replacement, `resamples` times (seeded: the same rounds give the same interval)."""
    rng = rng or random.Random(0)
    ratios = sorted(statistics.median(rng.choices(theirs, k=len(theirs)))
                    / statistics.median(rng.choices(ours, k=len(ours))) for _ in range(resamples))
    cut = int(resamples * (1 - level) / 2)
    return ratios[cut], ratios[-1 - cut]


def _row(what: str, n: int, times: dict, cpu: dict, loads: list, theirs_note: str = "") -> str:
    a, b = statistics.median(times["icefloe"]), statistics.median(times["spark"])
    ca, cb = statistics.median(cpu["icefloe"]), statistics.median(cpu["spark"])
    lo, hi = ratio_interval(times["icefloe"], times["spark"])
    print(f"{what}: icefloe {times['icefloe']} s, spark {times['spark']} s, loads {loads}", file=sys.stderr, flush=True)
    return (f"| {what} | {n / a / 1e6:.2f} | {n / b / 1e6:.2f}{theirs_note} | **{b / a:.2f}** ({lo:.2f}-{hi:.2f}) | "
            f"{ca:.1f} / {cb:.1f} = {cb / ca:.2f} | {len(times['icefloe'])} | {_load_range(loads)} |")


def _fsync_tree(folder: Path) -> None:
    """fsync every Parquet file under `folder` (PERSIST_THREADS at a time), then the folders
    up to it and its parent: what JobFiles.persist does for a native write's files, with the
    same LocalStore.persist."""
    from concurrent.futures import ThreadPoolExecutor

    from icefloe.impl.io.local import LocalStore
    from icefloe.impl.spark.job import PERSIST_THREADS
    store = LocalStore()
    files = sorted(str(f) for f in folder.rglob("*.parquet"))
    with ThreadPoolExecutor(PERSIST_THREADS) as pool:
        list(pool.map(store.persist, files))
    for d in sorted({os.path.dirname(f) for f in files} | {str(folder), str(folder.parent)}, key=len, reverse=True):
        store.persist(d)


def _timed(fn, into: list):
    """`fn`, recording each call's seconds in `into` (where the native write's time goes)."""
    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            into.append(time.perf_counter() - started)
    return timed


def _writes(spark, df, n, work, repeats, lines, tables, breakdown) -> list[str]:
    """Appends the write rows to `lines`; returns the paragraphs they need below the table."""
    from icefloe.impl.spark import write
    from icefloe.impl.spark.job import JobFiles
    from icefloe.impl.spark.task_commits import TaskCommitWatch
    from icefloe.impl.spark.options import table_ref
    from icefloe.impl.spark.source import _load_or_create
    names, notes = itertools.count(), []
    real_describe, real_persist, real_exit = TaskCommitWatch.describe, JobFiles.persist, TaskCommitWatch.__exit__
    TaskCommitWatch.describe = _timed(real_describe, breakdown["footers"])  # the footers not read during the job
    job_ended = {}

    def exit_watch(self, *exc):  # the watch's context ends when Spark's job does
        job_ended["at"] = time.perf_counter()
        return real_exit(self, *exc)
    TaskCommitWatch.__exit__ = exit_watch
    JobFiles.persist = _timed(real_persist, breakdown["fsync"])  # the fsyncs, in a thread beside the footers
    try:
        for layout, partition_by in (("unpartitioned", None), ("partitioned by cat (8)", "cat")):
            opts = {"catalog-uri": f"sqlite:///{work / 'catalog.db'}", "warehouse": str(work / "wh"),
                    "create-table": "true", **({"partition-by": partition_by} if partition_by else {})}
            # Each write goes to a place of its own: icefloe appends to an empty table created
            # before the clock starts (a table exists before a job writes to it), Spark writes
            # a new folder (no overwrite to clean up first).
            fresh = [f"icefloe.bench.t_{partition_by or 'flat'}_{next(names)}" for _ in range(WARMUP_ROUNDS + repeats)]
            for name in fresh:
                _load_or_create(table_ref(opts, name), df.schema)
            outs = (work / f"parquet-{partition_by or 'flat'}-{k}" for k in itertools.count())
            last = {}

            def ours():
                last["name"] = fresh.pop(0)
                result = write(df, last["name"], opts)
                breakdown["tail"].append(time.perf_counter() - job_ended["at"])
                breakdown["commit"].append(result.commit_ms / 1000)

            def theirs():
                w = df.write
                (w.partitionBy(partition_by) if partition_by else w).parquet(str(next(outs)))

            def theirs_durable():
                # Spark's write, then its files made durable as the native write makes its own
                # (the same fsyncs: files four at a time, then their folders).
                out = next(outs)
                w = df.write
                (w.partitionBy(partition_by) if partition_by else w).parquet(str(out))
                _fsync_tree(out)

            def theirs_same_files():
                # The files an Iceberg table needs: the partition source column stays in every
                # file (partitionBy drops the column it lays out by, so a copy lays them out).
                copy = df.selectExpr("*", f"{partition_by} as {partition_by}_identity")
                copy.write.partitionBy(f"{partition_by}_identity").parquet(str(next(outs)))
            sides = {"icefloe": ours, "spark": theirs, "spark + fsync": theirs_durable}
            if partition_by:
                sides["same files"] = theirs_same_files
            times, cpu, loads = alternate(sides, repeats)
            tables[layout] = (last["name"], opts)
            lines.append(_row(f"write, {layout}", n, times, cpu, loads))
            lines.append(_row(f"write, {layout}: Spark's files then fsynced as icefloe's are", n,
                              {"icefloe": times["icefloe"], "spark": times["spark + fsync"]},
                              {"icefloe": cpu["icefloe"], "spark": cpu["spark + fsync"]}, loads))
            if partition_by:
                lines.append(_row(f"write, {layout}: Spark writing the same files ({partition_by} kept in each "
                                  "file, laid out by a copy of it)", n,
                                  {"icefloe": times["icefloe"], "spark": times["same files"]},
                                  {"icefloe": cpu["icefloe"], "spark": cpu["same files"]}, loads))
                same, plain = statistics.median(times["same files"]), statistics.median(times["spark"])
                lo, hi = ratio_interval(times["same files"], times["spark"])
                notes.append(
                    f"Partitioned, Spark's own writer against itself: writing the files an Iceberg table holds "
                    f"(the same files as icefloe) ran at **{plain / same:.2f}** ({lo:.2f}-{hi:.2f}) of the speed "
                    f"of its `partitionBy({partition_by})` in this run (CPU s "
                    f"{statistics.median(cpu['same files']):.1f} / {statistics.median(cpu['spark']):.1f}). Below 1, "
                    f"that is the cost of writing `{partition_by}` in every file and of the copy that lays them out, "
                    f"which no writer of these files avoids: the like-for-like row is the one against Spark writing "
                    f"the same files; a native write could come "
                    f"near `partitionBy({partition_by})` only by leaving `{partition_by}` out of its files, which "
                    "Iceberg allows (a reader fills an identity partition's values from the manifest) but a reader "
                    "that does not would read nulls.")
            breakdown["write"].extend(times["icefloe"])
    finally:
        TaskCommitWatch.describe, TaskCommitWatch.__exit__ = real_describe, real_exit
        JobFiles.persist = real_persist
    return notes


def _reads(spark, n, repeats, lines, tables):
    from icefloe.impl.spark import read
    from icefloe.impl.spark.options import open_table, table_ref
    for layout, (name, opts) in tables.items():
        table = open_table(table_ref(opts, name))
        files = sorted(table.tree.live_data_paths(table.current_snapshot()))
        got, want = {}, {}
        times, cpu, loads = alternate({
            "icefloe": lambda: got.setdefault("rows", read(spark, name, opts).selectExpr(*QUERY).collect()),
            "spark": lambda: want.setdefault("rows", spark.read.parquet(*files).selectExpr(*QUERY).collect())},
            repeats)
        assert _same(got["rows"], want["rows"]), (got, want)
        lines.append(_row(f"read, {layout} ({len(files)} files)", n, times, cpu, loads))


def _merge_on_read(spark, df, n, work, repeats, lines) -> dict:
    """10% of the rows of a native table deleted by position, then (on a second table) by
    equality on id. Spark's plain read of the same data files is the reference (it returns
    the deleted rows too); icefloe's own scan and pyiceberg's (position deletes; pyiceberg
    0.12 refuses equality deletes) read the same tables in this process, once each."""
    from icefloe.impl.spark import plan, read, write
    from icefloe.impl.spark.options import open_table, table_ref
    base = {"catalog-uri": f"sqlite:///{work / 'catalog.db'}", "warehouse": str(work / "wh"), "create-table": "true"}
    expected = n - len(range(0, n, 10))
    refs = {}
    for kind in ("position", "equality"):
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
        got = {}
        query = ["count(*) as n", "sum(id) as s"]
        times, cpu, loads = alternate({
            "icefloe": lambda: got.setdefault("rows", read(spark, name, base).selectExpr(*query).collect()),
            "spark": lambda: spark.read.parquet(*files).selectExpr(*query).collect()}, repeats)
        table.refresh()
        started = time.perf_counter()
        own = table.scan(columns=["id"]).num_rows
        own_s = time.perf_counter() - started
        assert got["rows"][0]["n"] == own == expected, (got, own, expected)
        extra = f"icefloe's own scan (one process) {n / own_s / 1e6:.2f} M rows/s"
        if kind == "position":
            from pyiceberg.table import StaticTable
            started = time.perf_counter()
            theirs = StaticTable.from_metadata(table.metadata_location).scan(selected_fields=("id",)).to_arrow()
            py_s = time.perf_counter() - started
            assert theirs.num_rows == expected, theirs.num_rows
            extra += f", pyiceberg 0.12 {n / py_s / 1e6:.2f} M rows/s (same count)"
        else:
            extra += ", pyiceberg 0.12 refuses equality deletes"
        lines.append(_row(f"read, 10% deleted by {kind} deletes ({len(deletes)} delete files)", n,
                          times, cpu, loads, " (no deletes applied)"))
        refs[kind] = extra
    refs["stats"] = plan(spark, "icefloe.bench.mor_equality", base).stats.to_json()
    return refs


def run(quick: bool) -> str:
    from icefloe.impl.spark.session import local_session
    n = QUICK_ROWS if quick else FULL_ROWS
    repeats = QUICK_REPEATS if quick else FULL_REPEATS
    write_repeats = QUICK_REPEATS if quick else FULL_WRITE_REPEATS
    work = Path(tempfile.mkdtemp(prefix="icefloe-bench-spark-"))
    load_at_start = os.getloadavg()[0]
    spark = local_session("icefloe-bench", cores=2)
    lines, tables, breakdown = [], {}, {"write": [], "footers": [], "fsync": [], "commit": [],
                                                 "tail": []}
    try:
        df = _frame(spark, n).cache()
        df.count()
        notes = _writes(spark, df, n, work, write_repeats, lines, tables, breakdown)
        _reads(spark, n, repeats, lines, tables)
        mor = _merge_on_read(spark, df, n, work, repeats, lines)
    finally:
        spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    load_at_end = os.getloadavg()[0]
    med = {k: statistics.median(v) if v else 0.0 for k, v in breakdown.items()}
    return "\n".join([
        f"{n:,} rows (id bigint, cat string, v double, s string), cached in Spark before the writes; `local[2]`. "
        f"Each comparison: {WARMUP_ROUNDS} unrecorded warm-up rounds, then {write_repeats} rounds (a write) or "
        f"{repeats} (a read) with the sides "
        "taking turns in balanced orders (each side comes right after each other side equally often: a side leaves garbage and dirty pages for the next); figures are medians. Load average "
        f"{load_at_start:.1f} at the start, {load_at_end:.1f} at the end; the last column is the range of the "
        "1-minute load average over a comparison's rounds (2 cores shared with other engineers' work). icefloe "
        "writes with `icefloe.impl.spark.write` into an empty table created before the clock starts: Spark's own Parquet writer under the job prefix (field ids, the "
        "partition spec's transforms computed in Spark), each file's footer read for its DataFile (on the driver "
        "for at most 256 files, else in a Spark job) and the files and their folders fsynced "
        "(Spark's writer closes them without one; the table's commit must not point at data a crash could take "
        "back; Spark's `df.write.parquet` does not fsync, so a row compares with Spark's write followed by the "
        "same fsyncs), one commit (manifest, manifest list, metadata, SQLite swap). The files of tasks Spark has "
        "committed are fsynced and their footers read while the job's later tasks run (docs/spark.md; a file so "
        "fsynced is not fsynced again, its folder is after the job), and the commit writes its objects beside the "
        "fsyncs; only its swap waits. "
        "The cached frame's columns are the table's, so icefloe relabels them with their field ids and Spark writes "
        "the cache as stored, as it does for `df.write.parquet` (a frame that needs a cast or a null check goes "
        "through a projection, which over a computed frame folds into the one before it). "
        "Spark's writer is `df.write.parquet` into a new folder (no table, no commit); partitioned, `partitionBy(cat)` "
        "leaves `cat` out of the files, which icefloe's files keep, as Iceberg's writers do (below the table: why), "
        "so a third side has Spark write the files icefloe writes: `cat` kept, laid out by a copy of it. Reads run the same aggregate over every "
        "column: `icefloe.impl.spark.read` (icefloe plans, Spark's vectorized reader reads by field id) vs "
        "`spark.read.parquet(files)` on the same files. The wall ratio is Spark's median seconds over icefloe's "
        "(above 1: icefloe faster), with a 95% bootstrap interval (both sides' rounds resampled 2000 times): "
        "on this shared machine a run's ratio is known to about ±5-8% (a write's too, at 40 rounds: other work sets the pace of both sides); the CPU column gives the median CPU seconds of the whole process tree (Python "
        "driver, Spark's JVM, its Python workers) per run of each side and Spark's over icefloe's, a figure the "
        "load hardly moves.",
        "",
        "| what | icefloe M rows/s | Spark Parquet M rows/s | ratio icefloe/Spark (wall; 95% interval) | CPU s icefloe / Spark "
        "= ratio | rounds | load |",
        "|---|---|---|---|---|---|---|",
        *lines,
        "",
        f"Where a native write's time goes (medians over every recorded write): {med['write']:.2f} s per write, "
        f"of which {med['tail']:.3f} s from the end of Spark's job to the end of the commit: in it, footers not "
        f"read during the job {med['footers']:.3f} s, the fsyncs after the job {med['fsync']:.3f} s (beside the "
        f"footers and the commit's writes) and the commit {med['commit']:.3f} s; the rest is Spark's own Parquet "
        "write job and the driver's preparation of it.",
        "",
        *[x for note in notes for x in (note, "")],
        "Merge-on-read: the read applies the deletes as anti-joins in Spark (position deletes on "
        "`_metadata.file_path` / `_metadata.row_index`; equality deletes on id with sequence numbers) and its "
        "count equals icefloe's own scan (and pyiceberg's, for position deletes); Spark's plain read of the same "
        "data files returns the deleted rows as well, so its ratio is the cost of applying the deletes. In the same "
        f"run: position deletes: {mor['position']}; equality deletes: {mor['equality']}. Plan stats of the "
        f"equality table: {mor['stats']}.",
    ])


if __name__ == "__main__":
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    print(run(quick=True))
