"""icefloe on Spark through PySpark (docs/spark.md): the `icefloe` Python data source
(source.py, writer.py, reader.py), its job commit and cleanup rules (job.py), planning
(planning.py) and maintenance jobs (maintenance.py).

Executors write data files; the driver commits them through icefloe's protocol
(impl/table/commit.py). Imports only icefloe.impl and pyspark.
"""
from __future__ import annotations


def register(spark) -> None:
    """Make `format("icefloe")` available in this Spark session."""
    from icefloe.impl.spark.source import IcefloeDataSource
    spark.dataSource.register(IcefloeDataSource)
