"""A local-mode Spark session for icefloe (tests, the demo pipeline, the benchmark).

Spark's Python workers must import icefloe, so they run this interpreter
(`PYSPARK_PYTHON`, `spark.pyspark.python`); Spark binds 127.0.0.1 (`SPARK_LOCAL_IP`);
filter pushdown into Python data sources is on; the UI is off.
"""
from __future__ import annotations

import os
import sys


def local_session(app_name: str = "icefloe", cores: int = 2, task_attempts_max: int = 1,
                  **conf: str):
    """`local[cores, task_attempts_max]`; extra `conf` keys use '_' for '.'."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    master = f"local[{cores},{task_attempts_max}]" if task_attempts_max > 1 else f"local[{cores}]"
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.pyspark.python", sys.executable)
               .config("spark.sql.python.filterPushdown.enabled", "true")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(max(2, cores)))
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1"))
    for key, value in conf.items():
        builder = builder.config(key.replace("_", "."), value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    from icefloe.impl.spark import register
    register(spark)
    return spark
