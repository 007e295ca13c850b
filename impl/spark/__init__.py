"""icefloe on Spark through PySpark (docs/spark.md).

- The native paths (Spark's own Parquet reader and writer, icefloe's planning and
  commits): `write(df, table, options, mode=...)` (native_write.py) and
  `read(spark, table, options, ...)` / `plan(...)` (native_read.py), with partition
  transforms in Spark (transforms_sql.py), DataFile entries from footers on the executors
  (footers.py) and merge-on-read deletes as anti-joins.
- Row-level deletes: `delete(spark, table, options, row_filter, mode=...)`
  (native_delete.py): merge-on-read finds the rows with Spark and writes deletion vectors
  (v3) or position delete files (v2), committed by impl/table's row delta; copy-on-write.
- Row-level updates: `update(spark, table, options, set={...}, row_filter=..., mode=...)`
  (native_update.py), the rows read and written by Spark; row lineage readable with
  `read(..., columns=[..., "_row_id", "_last_updated_sequence_number"])` (lineage.py).
- The `icefloe` Python data source (source.py, writer.py, reader.py): Arrow batches
  through Spark's Python workers; for S3 tables and list / map columns, and for
  `format("icefloe")` convenience.
- Job commit and cleanup rules (job.py), planning in one process or on the executors
  (planning.py), maintenance jobs (maintenance.py).

Executors write data files; the driver commits them through icefloe's protocol
(impl/table/commit.py). Imports only icefloe.impl and pyspark.
"""
from __future__ import annotations


def register(spark) -> None:
    """Make `format("icefloe")` available in this Spark session."""
    from icefloe.impl.spark.source import IcefloeDataSource
    spark.dataSource.register(IcefloeDataSource)


def write(df, table: str, options: dict | None = None, **kwargs):
    """Write with Spark's Parquet writer and commit one snapshot (native_write.write)."""
    from icefloe.impl.spark.native_write import write as native
    return native(df, table, options, **kwargs)


def read(spark, table: str, options: dict | None = None, *, columns: list[str] | None = None, **kwargs):
    """Plan with icefloe, read with Spark's Parquet reader (native_read.read). `columns`
    selects columns by name, as Table.scan's and `icefloe scan --columns` do; on v3 tables
    they may name the row lineage columns `_row_id` and `_last_updated_sequence_number`
    (lineage.py). A column of the table's own with one of those names is that column
    (the spec reserves their field ids, not the names): the snapshot's schema decides."""
    from icefloe.impl.spark import lineage
    from icefloe.impl.table.scan import lineage_asked
    if lineage_asked(columns):  # by name only: load the schema read (one more catalog load)
        target = lineage.read_target(table, options, **kwargs)
        if lineage_asked(columns, target.schema):
            return lineage.read(spark, table, options, columns=list(columns), target=target, **kwargs)
    from icefloe.impl.spark.native_read import read as native
    df = native(spark, table, options, **kwargs)
    if columns is None:
        return df
    unknown = [c for c in columns if c not in df.columns]
    if unknown:
        from icefloe.impl.spark.options import SparkOptionError
        raise SparkOptionError(f"columns: no top-level column {', '.join(map(repr, unknown))} "
                               f"(columns: {', '.join(df.columns)})")
    return df.select(*[f"`{c}`" for c in columns])


def delete(spark, table: str, options: dict | None = None, row_filter="true", **kwargs):
    """Delete the rows matching `row_filter`: DVs (v3) or position deletes (v2) found by a
    Spark job, or copy-on-write (native_delete.delete)."""
    from icefloe.impl.spark.native_delete import delete as native
    return native(spark, table, options, row_filter, **kwargs)


def update(spark, table: str, options: dict | None = None, *, set, row_filter="true", **kwargs):
    """Set columns (`set`: column -> Spark SQL expression, Column or literal) of the rows
    matching `row_filter`: merge-on-read (DVs on v3, position deletes on v2, and the
    updated rows) or copy-on-write, rows written by Spark, `_row_id` kept on v3
    (native_update.update)."""
    from icefloe.impl.spark.native_update import update as native
    return native(spark, table, options, set=set, row_filter=row_filter, **kwargs)


def plan(spark, table: str, options: dict | None = None, **kwargs):
    """The plan of a native read and its stats (native_read.plan)."""
    from icefloe.impl.spark.native_read import plan as native
    return native(spark, table, options, **kwargs)
