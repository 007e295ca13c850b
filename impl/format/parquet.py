"""Parquet data files (Iceberg spec: "Appendix A: Format-specific Requirements -> Parquet",
"Manifests -> Data File Fields" for the metrics, "Partitioning" for splitting rows).

Written files carry `PARQUET:field_id` on every column. Metrics come from the Parquet
footer: value/null counts and column sizes for every leaf column, lower/upper bounds for
primitive leaves outside lists and maps, serialized as in Appendix D. String and binary
bounds are truncated to `BOUND_TRUNCATE_LENGTH` (Java's default `truncate(16)` metrics
mode): the lower bound to a prefix, the upper bound to a prefix with its last unit
incremented, so both still enclose every value. NaN counts come from the data itself, as
the footer has none and bounds must exclude NaN.

Reading matches columns by field id, never by name, so files from other writers (or
written before a rename) project onto the table schema.

TLA+ (tla/IcebergCommit.tla): the bytes written by `WriteData`; opaque to the spec.
"""
from __future__ import annotations

import io
import uuid
from decimal import Decimal
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe.impl.format import conversions, integrity, types as T
from icefloe.impl.format.manifest import DataFile, DataFileContent
from icefloe.impl.outcomes import IcefloeError

__all__ = ["DataFileError", "BOUND_TRUNCATE_LENGTH", "write_data_file", "data_file_metrics", "footer_metrics",
           "read_data_file", "iter_data_file", "truncate_lower", "truncate_upper"]

BOUND_TRUNCATE_LENGTH = 16
ROW_GROUP_ROWS_MAX = 1 << 20
_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


class DataFileError(IcefloeError):
    """A data file that cannot be written or read against the table schema."""

    def __init__(self, message: str, location: str | None = None):
        super().__init__(f"{location}: {message}" if location else message)
        self.location = location


# -- bound truncation ----------------------------------------------------------------------

def truncate_lower(value: str | bytes, length: int = BOUND_TRUNCATE_LENGTH) -> str | bytes:
    """A prefix: never above the value (code points for strings, bytes for binary)."""
    return value[:length]


def truncate_upper(value: str | bytes, length: int = BOUND_TRUNCATE_LENGTH) -> str | bytes | None:
    """The shortest `length`-unit prefix, last unit incremented, that is at least `value`;
    None when no such prefix exists (every unit is already the maximum)."""
    if len(value) <= length:
        return value
    prefix = value[:length]
    for i in range(len(prefix) - 1, -1, -1):  # bounded by `length`
        if isinstance(prefix, bytes):
            if prefix[i] < 0xFF:
                return prefix[:i] + bytes([prefix[i] + 1])
        else:
            point = ord(prefix[i]) + 1
            if point in _SURROGATES:
                point = _SURROGATES.stop
            if point <= _MAX_CODE_POINT:
                return prefix[:i] + chr(point)
    return None


# -- writing and metrics -------------------------------------------------------------------

def _conform(table: pa.Table, schema: T.Schema) -> pa.Table:
    """The table's columns (by name) cast to the schema's Arrow types with field ids."""
    target = T.schema_to_arrow(schema)
    unknown = sorted(set(table.column_names) - set(target.names))
    if unknown:  # silently dropping data is worse than refusing it
        raise DataFileError(f"columns {unknown} are not in schema {schema.schema_id}")
    missing = [f.name for f in target if f.name not in table.column_names]
    columns = []
    for f, field in zip(target, schema.fields):
        if f.name in missing:
            if field.write_default is not None:  # v3 "Default values": the writer supplies it
                columns.append(default_array(field, table.num_rows, "write_default"))
                continue
            if not f.nullable:
                raise DataFileError(f"required column {f.name!r} is missing (and has no write-default)")
            columns.append(pa.nulls(table.num_rows, f.type))
            continue
        col = table.column(f.name)
        if not f.nullable and col.null_count:
            raise DataFileError(f"required column {f.name!r} has {col.null_count} nulls")
        try:
            columns.append(col.cast(f.type) if col.type != f.type else col)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise DataFileError(f"column {f.name!r} of type {col.type} does not fit {f.type}: {e}") from None
    return pa.Table.from_arrays(columns, schema=target)


def write_data_file(table: pa.Table, schema: T.Schema, file_path: str, partition: tuple = (), *,
                    row_group_rows_max: int = ROW_GROUP_ROWS_MAX) -> tuple[bytes, DataFile]:
    """Parquet bytes of `table` (columns matched to `schema` by name) and the DataFile
    describing them, with metrics from the footer."""
    conformed = _conform(table, schema)
    out = io.BytesIO()
    pq.write_table(conformed, out, row_group_size=row_group_rows_max)
    data = out.getvalue()
    metrics = data_file_metrics(data, schema, conformed)
    return data, DataFile(file_path=file_path, file_format="PARQUET", partition=tuple(partition),
                          content=DataFileContent.DATA, file_size_in_bytes=len(data), **metrics)


def _leaves(t: T.IcebergType, path: str, repeated: bool) -> Iterator[tuple[str, T.NestedField | None, bool]]:
    """Parquet column paths below a field of type `t`, with the leaf and whether it is
    inside a list or map (Parquet's 3-level list and map naming)."""
    if isinstance(t, T.StructType):
        for f in t.fields:
            yield from _field_leaves(f, f"{path}.{f.name}", repeated)
    elif isinstance(t, T.ListType):
        yield from _field_leaves(t.element_field, f"{path}.list.element", True)
    elif isinstance(t, T.MapType):
        yield from _field_leaves(t.key_field, f"{path}.key_value.key", True)
        yield from _field_leaves(t.value_field, f"{path}.key_value.value", True)


def _field_leaves(f: T.NestedField, path: str, repeated: bool):
    if f.type.is_primitive:
        yield path, f, repeated
    else:
        yield from _leaves(f.type, path, repeated)


def _internal(t: T.IcebergType, stats: Any, which: str) -> Any:
    """A footer min or max as icefloe's internal value, or None when the file's physical
    encoding is not the one icefloe writes (e.g. INT96 or millisecond timestamps)."""
    value, raw = getattr(stats, which), getattr(stats, f"{which}_raw")
    if isinstance(t, (T.TimeType, T.TimestampType, T.TimestamptzType)):
        micros = "microseconds" in str(stats.logical_type)
        return raw if micros and isinstance(raw, int) else None
    if isinstance(t, (T.IntegerType, T.LongType, T.DateType)):
        return raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    if isinstance(t, (T.FloatType, T.DoubleType, T.BooleanType)):
        return raw
    if isinstance(t, T.UUIDType):
        return uuid.UUID(bytes=bytes(value))
    if isinstance(t, T.DecimalType):
        return Decimal(value)
    if isinstance(t, T.StringType):
        return value if isinstance(value, str) else bytes(value).decode("utf-8")
    return bytes(value)


def _nan_counts(array: pa.Array, t: T.IcebergType, field_id: int, out: dict[int, int]) -> None:
    """NaN counts of float leaves, walking nested arrays with parent nulls applied."""
    if isinstance(array, pa.ChunkedArray):
        for chunk in array.chunks:
            _nan_counts(chunk, t, field_id, out)
        return
    if t in (T.FLOAT, T.DOUBLE):
        out[field_id] = out.get(field_id, 0) + (pc.sum(pc.is_nan(array)).as_py() or 0)
    elif isinstance(t, T.StructType):
        for f, child in zip(t.fields, array.flatten()):
            _nan_counts(child, f.type, f.field_id, out)
    elif isinstance(t, T.ListType):
        _nan_counts(array.flatten(), t.element_type, t.element_id, out)
    elif isinstance(t, T.MapType):
        _nan_counts(array.keys, t.key_type, t.key_id, out)
        _nan_counts(array.items, t.value_type, t.value_id, out)


def data_file_metrics(data: bytes, schema: T.Schema, table: pa.Table | None = None) -> dict[str, Any]:
    """record_count, column_sizes, value/null/NaN counts, bounds and split_offsets of a
    Parquet file written against `schema` (NaN counts need the `table` it holds)."""
    return footer_metrics(pq.ParquetFile(io.BytesIO(data)).metadata, schema, table)


def footer_metrics(md: pq.FileMetaData, schema: T.Schema, table: pa.Table | None = None) -> dict[str, Any]:
    """data_file_metrics from a footer already read (e.g. of a file another engine wrote:
    the columns are matched by their paths, which are the schema's names). Without the
    `table`, NaN counts are left out (the footer has none; they are optional)."""
    columns = {p: (f, rep) for top in schema.fields for p, f, rep in _field_leaves(top, top.name, False)}
    sizes: dict[int, int] = {}
    values: dict[int, int] = {}
    nulls: dict[int, int] = {}
    lows: dict[int, Any] = {}
    highs: dict[int, Any] = {}
    no_bounds: set[int] = set()
    no_nulls: set[int] = set()
    split_offsets = []
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        starts = []
        for c in range(rg.num_columns):
            col = rg.column(c)
            starts.append(col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset)
            if col.path_in_schema not in columns:
                continue
            f, repeated = columns[col.path_in_schema]
            fid = f.field_id
            sizes[fid] = sizes.get(fid, 0) + col.total_compressed_size
            values[fid] = values.get(fid, 0) + col.num_values
            stats = col.statistics
            if stats is None or not stats.has_null_count:
                no_nulls.add(fid)  # one row group without a count spoils the file's count
                no_bounds.add(fid)
                continue
            nulls[fid] = nulls.get(fid, 0) + stats.null_count
            if repeated:
                continue  # bounds of list elements and map entries are not kept (as Java)
            if not stats.has_min_max:
                if stats.null_count != col.num_values:  # values present but no bounds given
                    no_bounds.add(fid)
                continue
            lo, hi = _internal(f.type, stats, "min"), _internal(f.type, stats, "max")
            if lo is None or hi is None or lo != lo or hi != hi:  # unusable, or NaN
                no_bounds.add(fid)
                continue
            lows[fid] = lo if fid not in lows else min(lows[fid], lo)
            highs[fid] = hi if fid not in highs else max(highs[fid], hi)
        if starts:
            split_offsets.append(min(starts))
    nans: dict[int, int] = {}
    if table is not None:
        for f in schema.fields:
            _nan_counts(table.column(f.name), f.type, f.field_id, nans)
    lower_bounds, upper_bounds = {}, {}
    for fid in sorted(set(lows) - no_bounds):
        t = schema.find_type(fid)
        lo, hi = lows[fid], highs[fid]
        if isinstance(t, (T.StringType, T.BinaryType)):
            lo, hi = truncate_lower(lo), truncate_upper(hi)
        lower_bounds[fid] = conversions.to_bytes(t, lo)
        if hi is not None:
            upper_bounds[fid] = conversions.to_bytes(t, hi)
    return {"record_count": md.num_rows, "column_sizes": sizes, "value_counts": values,
            "null_value_counts": {k: v for k, v in nulls.items() if k not in no_nulls}, "nan_value_counts": nans, "lower_bounds": lower_bounds,
            "upper_bounds": upper_bounds, "split_offsets": tuple(sorted(split_offsets))}


# -- reading -------------------------------------------------------------------------------

def _field_id(f: pa.Field) -> int | None:
    if f.metadata and T.FIELD_ID_KEY in f.metadata:
        try:
            return int(f.metadata[T.FIELD_ID_KEY])
        except ValueError:
            return None
    return None


def _project(array: pa.Array, target: T.IcebergType, location: str) -> pa.Array:
    """`array` (one chunk, file types) as the Arrow type of `target`, children by id."""
    arrow_target = T.type_to_arrow(target)
    mask = array.is_null() if array.null_count else None
    nested = {T.StructType: pa.types.is_struct, T.ListType: pa.types.is_list, T.MapType: pa.types.is_map}
    for kind, holds in nested.items():
        if isinstance(target, kind) and not holds(array.type):
            raise DataFileError(f"the table's schema says {target}, the file holds {array.type}", location)
    if isinstance(target, T.StructType):
        by_id = {_field_id(array.type.field(i)): child
                 for i, child in enumerate(array.flatten())}
        children = [_child(by_id, f, len(array), location) for f in target.fields]
        return pa.StructArray.from_arrays(children, fields=list(arrow_target), mask=mask)
    if isinstance(target, T.ListType):
        by_id = {_field_id(array.type.value_field): array.values}
        values = _child(by_id, target.element_field, len(array.values), location)
        return pa.ListArray.from_arrays(array.offsets, values, type=arrow_target, mask=mask)
    if isinstance(target, T.MapType):
        by_id = {_field_id(array.type.key_field): array.keys, _field_id(array.type.item_field): array.items}
        keys = _child(by_id, target.key_field, len(array.keys), location)
        items = _child(by_id, target.value_field, len(array.items), location)
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=arrow_target, mask=mask)
    if array.type == arrow_target:
        return array
    if isinstance(arrow_target, pa.ExtensionType):
        storage = array.storage if isinstance(array.type, pa.ExtensionType) else array
        return pa.ExtensionArray.from_storage(arrow_target, storage.cast(arrow_target.storage_type))
    try:
        return array.cast(arrow_target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise DataFileError(f"cannot read {array.type} as {target}: {e}", location) from None


def default_array(f: T.NestedField, length: int, which: str = "initial_default") -> pa.Array:
    """`length` copies of a field's default (spec "Default values"): `initial_default` for
    rows written before the field existed, `write_default` for rows written without it. A
    struct default `{}` is a struct of its fields' own defaults; no default is null."""
    value = getattr(f, which)
    arrow_type = T.type_to_arrow(f.type)
    if value is None:
        return pa.nulls(length, arrow_type)
    if isinstance(f.type, T.StructType):
        children = [default_array(c, length, which) for c in f.type.fields]
        return pa.StructArray.from_arrays(children, fields=list(arrow_type))
    from icefloe.impl.format.conversions import from_json_value
    internal = from_json_value(f.type, value)
    if isinstance(f.type, T.UUIDType):
        internal = internal.bytes
    if isinstance(arrow_type, pa.ExtensionType):
        storage = pa.array([internal] * length, arrow_type.storage_type)
        return pa.ExtensionArray.from_storage(arrow_type, storage)
    scalar_type = arrow_type
    if isinstance(f.type, (T.TimestampType, T.TimestamptzType, T.TimestampNsType, T.TimestamptzNsType, T.TimeType)):
        return pa.array([internal] * length, pa.int64()).cast(arrow_type)
    if isinstance(f.type, T.DateType):
        return pa.array([internal] * length, pa.int32()).cast(arrow_type)
    return pa.array([internal] * length, scalar_type)


def _child(by_id: dict, f: T.NestedField, length: int, location: str) -> pa.Array:
    if f.field_id not in by_id:
        if f.initial_default is not None:  # rows written before the field was added (v3)
            return default_array(f, length)
        if f.required:
            raise DataFileError(f"required field {f} is not in the file", location)
        return pa.nulls(length, T.type_to_arrow(f.type))
    array = by_id[f.field_id]
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return _project(array, f.type, location)


READ_THREADS_MIN_BYTES = 4 << 20      # files below this are decoded on the caller's thread


def read_data_file(data: bytes, schema: T.Schema, location: str = "<data file>", *,
                   row_filter: pc.Expression | None = None, data_file: DataFile | None = None,
                   name_mapping: dict[str, int] | None = None) -> pa.Table:
    """The rows of a Parquet file as a table of `schema`: columns matched by field id (in
    a file without field ids, by `name_mapping`, the table's name mapping: name_mapping.py),
    absent optional columns read as null, types promoted; then `row_filter` applied. With
    `data_file` (its manifest entry), the file's row count is checked against the entry's
    record_count (integrity.py): CorruptMetadata on a mismatch. Both are checked on the
    footer, before any row is decoded: a footer whose row groups claim more rows than the
    file has would make the reader allocate for them (found by fuzzing: 80 billion rows
    claimed by a 1 KB file)."""
    try:
        parquet_file = _open_checked(data, location, data_file)
        # Arrow's thread pool pays off on large files only: a small one decodes faster on this
        # thread than it takes to hand its columns to the pool (0.11 vs 0.73 ms a one-row file
        # under load: the conformance suite reads ~46,000 of them a ci run).
        file_table = parquet_file.read(columns=_wanted_columns(parquet_file, schema),
                                       use_threads=len(data) >= READ_THREADS_MIN_BYTES)
        out = _project_table(file_table.schema, file_table.columns, file_table.num_rows, schema, location,
                             name_mapping)
    except (DataFileError, integrity.CorruptMetadata):
        raise
    except (pa.ArrowException, OSError, ValueError, TypeError, KeyError, IndexError) as e:
        raise DataFileError(f"not a readable Parquet file: {type(e).__name__}: {e}", location) from None
    return out if row_filter is None else out.filter(row_filter)


def _wanted_columns(parquet_file: pq.ParquetFile, schema: T.Schema) -> list[str] | None:
    """The file's top-level columns whose field ids `schema` reads, or None to read them
    all: a file can hold columns a read does not want (the row lineage columns a v3
    rewrite materialises). Only when every top-level column has a field id and the names
    are unique; otherwise (files read through a name mapping, odd names) everything is
    read and matched as before."""
    file_schema = parquet_file.schema_arrow
    ids = [_field_id(f) for f in file_schema]
    names = file_schema.names
    if None in ids or len(set(names)) != len(names):
        return None
    wanted = {f.field_id for f in schema.fields}
    keep = [n for n, i in zip(names, ids) if i in wanted]
    return None if not keep or len(keep) == len(names) else keep


def _open_checked(data: bytes, location: str, data_file: DataFile | None) -> pq.ParquetFile:
    """The file, its footer checked before any row is decoded (read_data_file's docstring)."""
    parquet_file = pq.ParquetFile(io.BytesIO(data))
    footer = parquet_file.metadata
    claimed = sum(footer.row_group(i).num_rows for i in range(footer.num_row_groups))
    if claimed != footer.num_rows or footer.num_rows < 0:
        raise DataFileError(f"the footer says {footer.num_rows} rows, its row groups {claimed}", location)
    if data_file is not None:
        integrity.check_data_file(data_file, footer.num_rows)
    return parquet_file


def _project_table(file_schema: pa.Schema, columns, num_rows: int, schema: T.Schema, location: str,
                   name_mapping: dict[str, int] | None = None) -> pa.Table:
    if len(columns) and all(_field_id(f) is None for f in file_schema):
        if name_mapping is None:
            raise DataFileError("the file has no field ids and the table no name mapping "
                                "(schema.name-mapping.default)", location)
        by_id = _mapped(file_schema, columns, name_mapping, location)
    else:
        # Columns by position: a corrupt file's names need not even be valid UTF-8.
        by_id = {_field_id(f): col for f, col in zip(file_schema, columns)}
    projected = [_child(by_id, f, num_rows, location) for f in schema.fields]
    return pa.Table.from_arrays(projected, schema=T.schema_to_arrow(schema))


def _mapped(file_schema: pa.Schema, columns, name_mapping: dict[str, int], location: str) -> dict:
    """field id -> column of a file without field ids, by the table's name mapping
    (name_mapping.py); top-level columns only: a nested one needs ids of its own."""
    by_id = {}
    for f, col in zip(file_schema, columns):
        fid = name_mapping.get(f.name)
        if fid is None:
            continue                       # a column the table never had: not read
        if pa.types.is_nested(f.type):
            raise DataFileError(f"column {f.name!r} is nested and the file has no field ids: its children "
                                "cannot be resolved by name", location)
        by_id[fid] = col
    return by_id


def iter_data_file(data: bytes, schema: T.Schema, location: str = "<data file>", *,
                   data_file: DataFile | None = None, batch_rows: int = 65_536,
                   name_mapping: dict[str, int] | None = None) -> Iterator[pa.Table]:
    """The rows of a Parquet file as `read_data_file` gives them, `batch_rows` at a time
    (decoded batch by batch, so memory holds the file's bytes and one batch, not all its
    rows): the streaming read of `icefloe scan`."""
    try:
        parquet_file = _open_checked(data, location, data_file)
        batches = parquet_file.iter_batches(batch_size=batch_rows, use_threads=False,
                                            columns=_wanted_columns(parquet_file, schema))
        for batch in batches:
            yield _project_table(batch.schema, batch.columns, batch.num_rows, schema, location, name_mapping)
    except (DataFileError, integrity.CorruptMetadata):
        raise
    except (pa.ArrowException, OSError, ValueError, TypeError, KeyError, IndexError) as e:
        raise DataFileError(f"not a readable Parquet file: {type(e).__name__}: {e}", location) from None
