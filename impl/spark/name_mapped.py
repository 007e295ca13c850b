"""Data files without field ids under Spark's Parquet reader (Iceberg spec "Column
Projection"; impl/format/name_mapping.py; docs/spark.md "Reading").

The native read path asks Spark for columns by field id. A file that carries none (a
pandas or DuckDB file committed by `add-files`) is resolved by name through the table's
name mapping, by the very function icefloe's own scan resolves it with
(`parquet._mapped`, called on the file's footer on the driver): the result is the file's
layout, (field id, the file's column name) pairs. Files of one layout are read as one
Spark scan by their own column names (a read schema without field ids, so Spark matches
by name) and projected to the table's names and types; a field the file lacks reads as
null, as in `parquet._child`.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.impl.format import types as T
from icefloe.impl.format.parquet import DataFileError, _field_id, _mapped
from icefloe.impl.io.locations import local_path
from icefloe.impl.spark.native_write import spark_type
from icefloe.impl.spark.transforms_sql import NotNative, quote

Layout = tuple  # ((field id, the file's column name), ...), by field id


def layout_of(file_schema: pa.Schema, name_mapping: dict[str, int] | None, location: str) -> Layout | None:
    """None for a file whose columns carry field ids (Spark matches those itself, as
    `parquet._project_table` does); else the columns the name mapping resolves, by
    `parquet._mapped` (DataFileError for a nested column), or DataFileError when the table
    has no mapping, both worded as icefloe's own scan words them."""
    if not len(file_schema) or any(_field_id(f) is not None for f in file_schema):
        return None
    if name_mapping is None:
        raise DataFileError("the file has no field ids and the table no name mapping "
                            "(schema.name-mapping.default)", location)
    return tuple(sorted(_mapped(file_schema, file_schema.names, name_mapping, location).items()))


def footer_schema(location: str) -> pa.Schema:
    """The Arrow schema of a local Parquet file's footer (its field ids in field metadata)."""
    try:
        return pq.read_schema(local_path(location))
    except (pa.ArrowException, OSError, ValueError) as e:
        raise DataFileError(f"cannot read the Parquet footer: {type(e).__name__}: {e}", location) from None


def split_by_layout(paths: list[str], name_mapping: dict[str, int] | None,
                    layouts: dict[str, Layout | None]) -> tuple[list[str], dict[Layout, list[str]]]:
    """(the files with field ids, the others by layout). Without a name mapping no footer
    is read (a table that never had files added without ids pays nothing; a file without
    ids then fails in Spark, as it fails icefloe's scan). `layouts` caches each file's."""
    if name_mapping is None:
        return list(paths), {}
    with_ids, mapped = [], {}
    for path in paths:
        if path not in layouts:
            layouts[path] = layout_of(footer_schema(path), name_mapping, path)
        layout = layouts[path]
        if layout is None:
            with_ids.append(path)
        else:
            mapped.setdefault(layout, []).append(path)
    return with_ids, mapped


def mapped_frame(spark, paths: list[str], layout: Layout, fields: list[T.NestedField], extra=(), *,
                 base_path: str | None = None, partition_columns=()):
    """The files of one layout as a frame of `fields` (the table's names and Spark types,
    in order), then the `extra` columns (Spark's `_metadata` ones, or the read's own).
    `base_path`: `paths` are links under it (linked_files.py) whose `partition_columns`
    ((name, Spark type name) pairs, Spark's internal row index among them) are read too."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as ST
    names = dict(layout)
    wanted = [f for f in fields if f.field_id in names]
    read_schema = ST.StructType([ST.StructField(names[f.field_id], spark_type(f.type), True) for f in wanted])
    for name, kind in partition_columns:
        read_schema = read_schema.add(name, kind)
    reader = spark.read.schema(read_schema)
    if base_path is None:
        reader = reader.option("recursiveFileLookup", "true")
    else:  # (recursiveFileLookup turns partition discovery off)
        reader = reader.option("basePath", base_path)
    df = reader.parquet(*paths)
    columns = []
    for f in fields:
        if f.field_id in names:
            columns.append(F.col(quote(names[f.field_id])).alias(f.name))
        elif f.initial_default is not None:   # the Python data source fills defaults (parquet.default_array)
            raise NotNative(f"field {f.name!r} has an initial default and files without field ids lack it")
        elif f.required:
            raise DataFileError(f"required field {f} is not in the file", paths[0])
        else:
            columns.append(F.lit(None).cast(spark_type(f.type)).alias(f.name))
    return df.select(*columns, *extra)


__all__ = ["Layout", "layout_of", "footer_schema", "split_by_layout", "mapped_frame"]
