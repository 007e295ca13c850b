"""Planning at 10^5 and 10^6 data files (10^3 manifests) for bench_spark.py: icefloe's
single-process planner, its executor planner (a Spark job) and pyiceberg, each in a fresh
process on the same synthesized table (manifests of data files that do not exist: planning
never opens a data file). Each process reports plan time, its peak RSS (the driver's, for
the Spark planner: the plan lands there) and the storage reads it made.

    python bench/spark_planning.py make DIR FILES        # the table; prints its metadata location
    python bench/spark_planning.py plan WHO METADATA FILTER
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

MANIFESTS = 1000
FILTERS = {"all": None, "1%": "id >= {cut}"}


def make(directory: Path, files: int) -> str:
    """A v2 table whose one snapshot lists `files` data files in MANIFESTS manifests, each
    file with partition (cat), record count and id bounds (ids rise file by file)."""
    from icefloe.impl.catalog.sql import SqlCatalog
    from icefloe.impl.format import types as T
    from icefloe.impl.format.conversions import to_bytes
    from icefloe.impl.format.manifest import DataFile, DataFileContent, ManifestEntry, ManifestEntryStatus, \
        manifest_file_of
    from icefloe.impl.format.manifest_writer import write_manifest
    from icefloe.impl.format.transforms import parse_partition_spec
    from icefloe.impl.io.local import LocalStore
    from icefloe.impl.table import producer as P
    from icefloe.impl.table.env import manifest_location
    from icefloe.impl.table.table import create_table
    import pyarrow as pa
    directory.mkdir(parents=True, exist_ok=True)
    schema = T.schema_from_arrow(pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string()),
                                            pa.field("v", pa.float64())]))
    spec = parse_partition_spec("cat", schema)
    table = create_table(SqlCatalog(f"sqlite:///{directory}/catalog.db", name="bench"), "db.plan", schema, spec,
                         (directory / "db.db" / "plan").as_uri(), io=LocalStore())
    per = files // MANIFESTS

    class SyntheticAppend(P.FastAppend):
        def __init__(self):
            super().__init__(pa.table({}))
            self.listed = []

        def plan(self, c):
            return True

        def write_data(self, c):
            pass

        def write_manifests(self, c):
            for m in range(MANIFESTS):
                entries = []
                for k in range(per):
                    n = m * per + k
                    f = DataFile(f"{table.location}/data/cat={'abcd'[m % 4]}/{n:08d}-synthetic.parquet", "PARQUET",
                                 ("abcd"[m % 4],), 1000, 40_000, content=DataFileContent.DATA,
                                 column_sizes={1: 8000, 2: 2000, 3: 8000}, value_counts={1: 1000, 2: 1000, 3: 1000},
                                 null_value_counts={1: 0, 2: 0, 3: 0}, nan_value_counts={3: 0},
                                 lower_bounds={1: to_bytes(T.LONG, n * 1000), 3: to_bytes(T.DOUBLE, 0.0)},
                                 upper_bounds={1: to_bytes(T.LONG, n * 1000 + 999), 3: to_bytes(T.DOUBLE, 1.0)})
                    entries.append(ManifestEntry(ManifestEntryStatus.ADDED, f))
                location = manifest_location(c.base.location, c.env.uuid(), m)
                data = write_manifest(entries, schema, spec)
                c.write(location, data)
                self.listed.append(manifest_file_of(entries, schema, spec, manifest_path=location,
                                                    manifest_length=len(data), added_snapshot_id=c.snapshot_id))

        def manifests(self, c):
            return list(self.listed)

        def summary(self, c):
            return {"operation": "append", "added-data-files": str(files), "added-records": str(files * 1000),
                    "total-data-files": str(files), "total-records": str(files * 1000)}

    table.new_commit(SyntheticAppend()).run()
    table.refresh()
    return table.metadata_location


def _warm(x):
    """In a Spark Python worker: import the planner, as a session that has read before has."""
    import icefloe.impl.spark.planning  # noqa: F401
    return x


def plan(who: str, metadata_location: str, row_filter: str | None) -> dict:
    """Plan once in this (fresh) process; the clock starts after the imports (and, for
    Spark, after the session and its Python workers are up), as in a warm process."""
    from bench_spark import tree_cpu_s  # this directory is on sys.path (run as a script)
    if who == "pyiceberg":
        from pyiceberg.io import pyarrow as PA
        from pyiceberg.table import StaticTable
        opened = [0]
        real = PA.PyArrowFileIO.new_input

        def counting(self, location):
            opened[0] += 1
            return real(self, location)
        PA.PyArrowFileIO.new_input = counting
        started, cpu_before = time.monotonic(), tree_cpu_s()
        t = StaticTable.from_metadata(metadata_location)
        files = len(list(t.scan(row_filter=row_filter or "True").plan_files()))
        requests, mode = opened[0], "-"
    elif who == "local":  # the native read's planner in this process: the same columns the executors make
        from icefloe.impl.spark import plan as native_plan
        import icefloe.impl.spark.native_read  # noqa: F401 (imported before the clock, as in a warm process)
        started, cpu_before = time.monotonic(), tree_cpu_s()
        scan = native_plan(None, metadata_location, {}, row_filter=row_filter, planning="local")
        files, requests, mode = scan.plan.num_rows, scan.stats.driver_requests, "local"
    elif who == "icefloe":
        from icefloe.impl.format.metadata import from_json
        from icefloe.impl.io.local import LocalStore
        from icefloe.impl.table.files import TreeReader
        from icefloe.impl.table.scan import plan_files
        started, cpu_before = time.monotonic(), tree_cpu_s()
        io = LocalStore()
        metadata = from_json(io.get(metadata_location), metadata_location)
        files = len(plan_files(TreeReader(io), metadata, metadata.current_snapshot(), row_filter))
        requests, mode = sum(io.counts.values()), "plan_files"
    else:  # icefloe, planning on the executors (a Spark job), through the native read's planner
        from icefloe.impl.spark import plan as native_plan
        from icefloe.impl.spark.session import local_session
        import icefloe.impl.spark.native_read  # noqa: F401 (imported before the clock, as in a warm process)
        spark = local_session("bench-plan", cores=2)
        spark.sparkContext.parallelize(range(4), 2).map(_warm).count()  # workers up, planner imported
        started, cpu_before = time.monotonic(), tree_cpu_s()
        scan = native_plan(spark, metadata_location, {}, row_filter=row_filter, planning="distributed")
        files = scan.plan.num_rows
        requests = scan.stats.driver_requests + scan.stats.executor_requests
        mode = f"{scan.stats.mode}, {scan.stats.tasks} tasks"
    took, cpu_s = time.monotonic() - started, tree_cpu_s() - cpu_before
    # On idle cores the plan takes about its CPU outside the planning tasks (driver, JVM,
    # workers' overhead: all counted as if serial) plus the busiest worker's task CPU.
    critical_s = cpu_s
    if who == "spark":
        critical_s = cpu_s - (scan.stats.executor_cpu_ms - scan.stats.executor_cpu_busiest_ms) / 1000
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"who": who, "seconds": took, "cpu_s": cpu_s, "critical_s": critical_s, "files": files,
            "requests": requests, "rss_mb": rss_mb, "mode": mode}


PLANNERS = ("local", "spark", "icefloe", "pyiceberg")
ROUNDS = {1_000_000: 2}  # rounds per size (default 3): a round at 10^6 takes minutes of CPU
ROUNDS_DEFAULT = 3
LABELS = {"local": "icefloe native read, one process", "spark": "icefloe native read, on executors",
          "icefloe": "icefloe Table.plan_files, one process", "pyiceberg": "pyiceberg 0.12"}
BASELINE = "local"  # speed-ups are against the single-process planner that makes the same plan


def measure(work: Path, sizes=(100_000, 1_000_000), rounds: int | None = None) -> list[dict]:
    """Every planner at every size and filter, each run in a fresh process; the planners
    take turns (the order rotated each round) and each figure is the median of `rounds`."""
    import statistics
    out = []
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    for files in sizes:
        done = subprocess.run([sys.executable, __file__, "make", str(work / f"t{files}"), str(files)],
                              capture_output=True, text=True, check=True, env=env)
        location = done.stdout.strip().splitlines()[-1]
        for name, template in FILTERS.items():
            row_filter = None if template is None else template.format(cut=int(files * 1000 * 0.99))
            runs: dict = {who: [] for who in PLANNERS}
            loads = []
            for r in range(rounds or ROUNDS.get(files, ROUNDS_DEFAULT)):
                for who in PLANNERS[r % len(PLANNERS):] + PLANNERS[:r % len(PLANNERS)]:
                    done = subprocess.run([sys.executable, __file__, "plan", who, location, json.dumps(row_filter)],
                                          capture_output=True, text=True, env=env)
                    if done.returncode != 0:
                        raise RuntimeError(f"{who} at {files}: {done.stderr[-2000:]}")
                    runs[who].append(json.loads(done.stdout.strip().splitlines()[-1]))
                    print(f"planning {files} {name} {who}: {runs[who][-1]}", file=sys.stderr, flush=True)
                loads.append(os.getloadavg()[0])
            for who, results in runs.items():
                files_planned = {x["files"] for x in results}
                assert len(files_planned) == 1, (who, files_planned)
                out.append({"who": who, "size": files, "filter": name, "files": files_planned.pop(),
                            "seconds": statistics.median(x["seconds"] for x in results),
                            "cpu_s": statistics.median(x["cpu_s"] for x in results),
                            "critical_s": statistics.median(x["critical_s"] for x in results),
                            "rss_mb": max(x["rss_mb"] for x in results),
                            "requests": max(x["requests"] for x in results), "mode": results[0]["mode"],
                            "rounds": len(results), "load": f"{min(loads):.0f}-{max(loads):.0f}"})
    return out


def _scheduler_note() -> str:
    try:
        autogroup = open("/proc/sys/kernel/sched_autogroup_enabled").read().strip()
    except OSError:
        autogroup = "?"
    if autogroup == "1":
        return ("The kernel's autogroup scheduler is on (`/proc/sys/kernel/sched_autogroup_enabled` = 1) and the "
                "machine is shared, so a process tree gets one share of the CPU however many processes it runs: "
                "measured seconds understate the executor planner's parallelism.")
    return (f"The kernel's autogroup scheduler is off (`sched_autogroup_enabled` = {autogroup}): each process "
            "competes on its own, so the executor planner's two workers can use both cores, shared with other "
            "work (the load column).")


def render(planned: list[dict]) -> str:
    """The planning section's Markdown: a table, and executor planning vs one process."""
    rows = []
    by = {(r["size"], r["filter"], r["who"]): r for r in planned}
    for r in planned:
        local = by[(r["size"], r["filter"], BASELINE)]
        rows.append(f"| {r['size']:,} | {r['filter']} | {LABELS[r['who']]} ({r['mode']}) | {r['seconds']:.2f} | "
                    f"**{local['seconds'] / r['seconds']:.2f}** | {r['cpu_s']:.1f} | {r['critical_s']:.1f} | "
                    f"**{local['critical_s'] / r['critical_s']:.2f}** | {r['files']:,} | {r['rss_mb']:.0f} | "
                    f"{r['requests']:,} | {r['rounds']} | {r['load']} |")
    return "\n".join([
        "Planning (bench/spark_planning.py): one synthesized snapshot of N data files in 1,000 manifests "
        "(partition, counts and id bounds per file; the files do not exist: planning never opens one), planned "
        "unfiltered and with `id >= ...` keeping 1% (pruned by column bounds, every manifest read), each planner "
        "in a fresh process, the planners taking turns, the median of the rounds: the native read's planner in one "
        "process (`planning='local'`: manifests decoded into columns, the baseline row), the same planner on "
        "Spark's executors (`planning='distributed'`: the manifest list on the driver, the manifests decoded and "
        "pruned in a Spark job of `local[2]`, file tasks back as Arrow; the session is started and its Python "
        "workers are up before the clock starts), icefloe's `Table.plan_files` (one task object per file) and "
        "pyiceberg 0.12's `plan_files`. Speed-up: the baseline's seconds over this planner's (medians); CPU s: the "
        "CPU seconds of the planning process tree (for the executor planner: Python driver, JVM and Python "
        "workers). " + _scheduler_note() + " Critical-path CPU: for the executor planner, its CPU outside the "
        "planning tasks (driver, JVM, the workers' own overhead, all counted as if serial) plus the task CPU of the "
        "busiest of "
        "its two Python workers, i.e. about its seconds on two idle cores; for the others, their CPU. Peak RSS: the planning process's "
        "(for the executor planner the Python driver's, where the plan lands; the JVM's is not counted); storage "
        "reads: metadata, manifest list and manifests (for the executor planner, driver plus executors).",
        "",
        "| data files | filter | planner | seconds | speed-up vs one process | CPU s | critical-path CPU s "
        "| speed-up on idle cores (estimate) | files planned | peak RSS MB | storage reads | rounds | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
    ])


if __name__ == "__main__":
    if sys.argv[1] == "make":
        print(make(Path(sys.argv[2]), int(sys.argv[3])))
    else:
        print(json.dumps(plan(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))))
