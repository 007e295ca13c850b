"""DataFile entries for Parquet files Spark's own writer wrote (the native write path,
native_write.py; Iceberg spec "Manifests -> Data File Fields", "Appendix A -> Parquet").

In a Spark job (one task per group of files), each executor reads a file's footer and
builds its entry with impl/format's metrics code (record count, column sizes, value and
null counts, lower and upper bounds with the spec's truncation; NaN counts are optional
and left out, as the footer has none), and the partition tuple from the data: the
partition source columns of the file's first row, through impl/format/transforms.py
(Spark laid the files out by the same transforms, so every row of a file shares it).
A write of at most DRIVER_FILES_MAX files reads its few footers on the driver instead:
scheduling a Spark job costs more than that (docs/benchmarks.md, spark section).
The columns' field ids are checked against the table schema.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.impl.format import types as T
from icefloe.impl.format.manifest import DataFile, DataFileContent
from icefloe.impl.format.parquet import DataFileError, footer_metrics
from icefloe.impl.format.partitioning import partition_of_row
from icefloe.impl.format.transforms import PartitionSpec, partition_spec_from_json, partition_spec_to_json
from icefloe.impl.io.locations import local_path

FILES_PER_TASK_MAX = 64
DRIVER_FILES_MAX = 256  # up to this many files, footers are read on the driver (about 1 ms of CPU each; a Spark job costs more)
DRIVER_THREADS = 4
_driver_pool: ThreadPoolExecutor | None = None  # one per process: starting threads per write costs more than the footers
_driver_pool_lock = threading.Lock()


def driver_pool() -> ThreadPoolExecutor:
    global _driver_pool
    with _driver_pool_lock:
        if _driver_pool is None:
            _driver_pool = ThreadPoolExecutor(DRIVER_THREADS, thread_name_prefix="icefloe-footers")
        return _driver_pool


def _forget_pool() -> None:
    """In a forked child: none of the parent's threads exist there (nor may its lock be free)."""
    global _driver_pool, _driver_pool_lock
    _driver_pool, _driver_pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def _check_field_ids(fields, iceberg_fields, location: str, path: str = "") -> None:
    """Every column the file has, struct fields included, carries the table's field id (a
    reader matches columns by id: a missing or wrong id reads as nulls or as another column)."""
    by_name = {f.name: f for f in fields}
    for f in iceberg_fields:
        found = by_name.get(f.name)
        if found is None:
            continue  # an optional column the writer left out reads as null
        fid = (found.metadata or {}).get(T.FIELD_ID_KEY)
        if fid is None or int(fid) != f.field_id:
            carries = "no field id" if fid is None else f"field id {int(fid)}"
            raise DataFileError(f"column {path + f.name!r} carries {carries}, the table says {f.field_id}", location)
        if isinstance(f.type, T.StructType) and pa.types.is_struct(found.type):
            _check_field_ids(list(found.type), f.type.fields, location, f"{path}{f.name}.")


def describe_file(location: str, schema: T.Schema, spec: PartitionSpec) -> DataFile | None:
    """The entry of one data file (None for a file without rows: nothing to commit)."""
    path = local_path(location)
    parquet = pq.ParquetFile(path)
    md = parquet.metadata
    if md.num_rows == 0:
        return None
    _check_field_ids(list(parquet.schema_arrow), schema.fields, location)
    metrics = footer_metrics(md, schema)
    partition: tuple = ()
    if spec.fields:
        sources = sorted({_top_level(schema, pf.source_id) for pf in spec.fields})
        first = next(parquet.iter_batches(batch_size=1, columns=sources))
        partition = partition_of_row(pa.Table.from_batches([first.slice(0, 1)]), spec, schema)
    return DataFile(file_path=location, file_format="PARQUET", partition=tuple(partition),
                    content=DataFileContent.DATA, file_size_in_bytes=os.path.getsize(path), **metrics)


def _top_level(schema: T.Schema, field_id: int) -> str:
    for f in schema.fields:
        if f.field_id == field_id or (isinstance(f.type, T.StructType) and _within(f.type, field_id)):
            return f.name
    raise DataFileError(f"partition source field {field_id} is not in the schema")


def _within(t: T.StructType, field_id: int) -> bool:
    return any(f.field_id == field_id or (isinstance(f.type, T.StructType) and _within(f.type, field_id))
               for f in t.fields)


def describe_files(spark, locations: list[str], schema: T.Schema, spec: PartitionSpec,
                   driver_files_max: int = DRIVER_FILES_MAX) -> list[DataFile]:
    """describe_file for every location: in a Spark job on the executors, or for a job of at
    most `driver_files_max` files on the driver (a Spark job costs more than a few footers)."""
    if not locations:
        return []
    if len(locations) <= driver_files_max:
        found = driver_pool().map(lambda loc: describe_file(loc, schema, spec), locations)
        return [d for d in found if d is not None]
    schema_json, spec_json = T.schema_to_json(schema), partition_spec_to_json(spec)

    def run(group):
        s, p = T.schema_from_json(schema_json), partition_spec_from_json(spec_json)
        return [d for d in (describe_file(loc, s, p) for loc in group) if d is not None]

    slices = max(1, min(len(locations), spark.sparkContext.defaultParallelism * 2))
    per = max(1, min(FILES_PER_TASK_MAX, -(-len(locations) // slices)))
    groups = [locations[i:i + per] for i in range(0, len(locations), per)]
    return spark.sparkContext.parallelize(groups, len(groups)).flatMap(run).collect()
