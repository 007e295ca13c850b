"""Helpers shared by the Spark tests (a unique module name: tests/ has no __init__.py)."""
from __future__ import annotations

import pyarrow as pa

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format import types as T
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.io.local import LocalStore
from icefloe.impl.table.table import Table, create_table

TABLE = "icefloe.db.t"  # catalog "icefloe" (the SQL catalog's default name), namespace db, table t
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string()),
                    pa.field("v", pa.float64())])


def rows(ids, cats=("a", "b", "c", "d")) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": [cats[i % len(cats)] for i in ids],
                     "v": [i * 0.5 for i in ids]}, schema=SCHEMA)


def make_table(opts: dict, partition_by: str | None = "cat", name: str = "db.t") -> Table:
    schema = T.schema_from_arrow(SCHEMA)
    spec = parse_partition_spec(partition_by, schema) if partition_by else None
    ns, table = name.split(".")
    location = f"file://{opts['warehouse']}/{ns}.db/{table}"
    return create_table(SqlCatalog(opts["catalog-uri"], name="icefloe"), name, schema, spec, location,
                        io=LocalStore())


def open_table(opts: dict, name: str = "db.t") -> Table:
    return Table(SqlCatalog(opts["catalog-uri"], name="icefloe"), name, LocalStore())


def data_files_on_disk(opts: dict, name: str = "db.t") -> list[str]:
    """Every Parquet file under the table's data folder (committed or not)."""
    from pathlib import Path
    ns, table = name.split(".")
    return sorted(str(p) for p in Path(opts["warehouse"], f"{ns}.db", table, "data").rglob("*.parquet"))


def live_paths(table: Table) -> set[str]:
    table.refresh()
    return table.tree.live_data_paths(table.current_snapshot())


def batches_of(t: pa.Table, size: int = 50) -> list[pa.RecordBatch]:
    return t.to_batches(max_chunksize=size)


PATHS = ("source", "native")  # the Python data source; Spark's own Parquet reader and writer


def save(df, opts: dict, path: str, mode: str = "append", **options) -> None:
    """Write `df` to TABLE through the data source or the native path (options as keywords, '_' for '-')."""
    extra = {k.replace("_", "-"): str(v) for k, v in options.items()}
    if path == "native":
        from icefloe.impl.spark import write
        write(df, TABLE, {**opts, **extra}, mode=mode)
        return
    df.write.format("icefloe").mode(mode).options(**opts).options(**extra).save(TABLE)


def load(spark, opts: dict, path: str, **options):
    """TABLE as a DataFrame through the data source or the native path."""
    extra = {k.replace("_", "-"): str(v) for k, v in options.items()}
    if path == "native":
        from icefloe.impl.spark import read
        return read(spark, TABLE, {**opts, **extra})
    return spark.read.format("icefloe").options(**opts).options(**extra).load(TABLE)
