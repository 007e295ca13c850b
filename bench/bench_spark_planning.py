"""Planning a scan of 10^5 and 10^6 data files (1,000 manifests): the native read's planner
in one process and on Spark's executors, icefloe's Table.plan_files and pyiceberg's
plan_files, each in a fresh process (bench/spark_planning.py does the measuring)."""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

TITLE = "Spark: planning at 10^5 and 10^6 data files, on the driver and on executors"


def run(quick: bool) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import spark_planning
    work = Path(tempfile.mkdtemp(prefix="icefloe-bench-planning-"))
    try:
        sizes = (10_000, 100_000) if quick else (100_000, 1_000_000)
        return spark_planning.render(spark_planning.measure(work, sizes, rounds=1 if quick else None))
    finally:
        shutil.rmtree(work, ignore_errors=True)
