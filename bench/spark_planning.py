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


def plan(who: str, metadata_location: str, row_filter: str | None) -> dict:
    started = time.monotonic()
    if who == "pyiceberg":
        from pyiceberg.io import pyarrow as PA
        from pyiceberg.table import StaticTable
        opened = [0]
        real = PA.PyArrowFileIO.new_input

        def counting(self, location):
            opened[0] += 1
            return real(self, location)
        PA.PyArrowFileIO.new_input = counting
        t = StaticTable.from_metadata(metadata_location)
        files = len(list(t.scan(row_filter=row_filter.replace(">=", ">=") if row_filter else "True").plan_files()))
        requests, mode = opened[0], "-"
    elif who == "icefloe":
        from icefloe.impl.format.metadata import from_json
        from icefloe.impl.io.local import LocalStore
        from icefloe.impl.table.files import TreeReader
        from icefloe.impl.table.scan import plan_files
        io = LocalStore()
        metadata = from_json(io.get(metadata_location), metadata_location)
        files = len(plan_files(TreeReader(io), metadata, metadata.current_snapshot(), row_filter))
        requests, mode = sum(io.counts.values()), "local"
    else:  # icefloe, planning on the executors (a Spark job), through the native read's planner
        from icefloe.impl.spark import plan as native_plan
        from icefloe.impl.spark.session import local_session
        spark = local_session("bench-plan", cores=2)
        spark.sparkContext.parallelize(range(4), 2).count()  # Python workers up: not the plan's cost
        started = time.monotonic()
        scan = native_plan(spark, metadata_location, {}, row_filter=row_filter, planning="distributed")
        files = scan.plan.num_rows
        requests = scan.stats.driver_requests + scan.stats.executor_requests
        mode = f"{scan.stats.mode}, {scan.stats.tasks} tasks"
    took = time.monotonic() - started
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"who": who, "seconds": took, "files": files, "requests": requests, "rss_mb": rss_mb, "mode": mode}


def measure(work: Path, sizes=(100_000, 1_000_000)) -> list[dict]:
    """Every planner at every size and filter, each in a fresh process, side by side."""
    out = []
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    for files in sizes:
        done = subprocess.run([sys.executable, __file__, "make", str(work / f"t{files}"), str(files)],
                              capture_output=True, text=True, check=True, env=env)
        location = done.stdout.strip().splitlines()[-1]
        for name, template in FILTERS.items():
            row_filter = None if template is None else template.format(cut=int(files * 1000 * 0.99))
            for who in ("icefloe", "spark", "pyiceberg"):
                done = subprocess.run([sys.executable, __file__, "plan", who, location, json.dumps(row_filter)],
                                      capture_output=True, text=True, env=env)
                if done.returncode != 0:
                    raise RuntimeError(f"{who} at {files}: {done.stderr[-2000:]}")
                result = json.loads(done.stdout.strip().splitlines()[-1])
                out.append({**result, "size": files, "filter": name})
    return out


if __name__ == "__main__":
    if sys.argv[1] == "make":
        print(make(Path(sys.argv[2]), int(sys.argv[3])))
    else:
        print(json.dumps(plan(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))))
