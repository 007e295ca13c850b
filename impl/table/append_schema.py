"""Rows offered to a table, checked against its schema before anything is written (issue 14
item 3; ../shared/repro bug9). Nothing is coerced silently:

- a column the table does not have is refused (it would be dropped);
- a missing column with a write-default (v3) takes it; otherwise a required column that is
  missing is refused, a missing optional one is null;
- a value type is stored as it is when it is the table's type (string and large_string,
  binary and large_binary, and timestamps of a coarser unit are the same values);
- with `widen=True` (the CLI's `--cast`), the spec's safe widenings are applied too:
  int -> long, float -> double, decimal(P, S) -> decimal(P', S) with P' >= P, and
  narrower integers into wider ones;
- everything else is refused, naming the column: a zone-aware timestamp into a timestamp
  without zone (it would be stored as its UTC wall clock), a timestamp without zone into
  one with (which zone?), strings into numbers, a finer timestamp unit into a coarser one,
  any narrowing.
pyiceberg refuses the same appends (its schema compatibility check).
"""
from __future__ import annotations

import pyarrow as pa

from icefloe.impl.format import types as T
from icefloe.impl.outcomes import InvalidArgument

_UNIT_RANK = {"s": 0, "ms": 1, "us": 2, "ns": 3}


class SchemaMismatch(InvalidArgument):
    """Rows that cannot be stored in the table without losing or changing values."""


def _same_values(src: pa.DataType, dst: pa.DataType) -> bool:
    if src == dst:
        return True
    pairs = ((pa.types.is_string, pa.types.is_large_string), (pa.types.is_binary, pa.types.is_large_binary))
    if any((a(src) or b(src)) and (a(dst) or b(dst)) for a, b in pairs):
        return True
    if pa.types.is_timestamp(src) and pa.types.is_timestamp(dst):
        return (src.tz is None) == (dst.tz is None) and _UNIT_RANK[src.unit] <= _UNIT_RANK[dst.unit]
    return False


def _widening(src: pa.DataType, dst: pa.DataType) -> bool:
    if pa.types.is_integer(src) and pa.types.is_integer(dst):
        signed_ok = pa.types.is_signed_integer(dst) or not pa.types.is_signed_integer(src)
        return signed_ok and dst.bit_width > src.bit_width
    if pa.types.is_floating(src) and pa.types.is_floating(dst):
        return dst.bit_width > src.bit_width
    if pa.types.is_decimal(src) and pa.types.is_decimal(dst):
        return src.scale == dst.scale and dst.precision >= src.precision
    return False


def _why_not(src: pa.DataType, dst: pa.DataType, widen: bool) -> str | None:
    if _same_values(src, dst) or pa.types.is_null(src):
        return None
    if _widening(src, dst):
        return None if widen else f"{src} would be widened to {dst}: allow it with --cast"
    if pa.types.is_timestamp(src) and pa.types.is_timestamp(dst):
        if src.tz is not None and dst.tz is None:
            return (f"a timestamp with zone {src.tz} would be stored as its UTC wall clock in a timestamp "
                    "without zone")
        if src.tz is None and dst.tz is not None:
            return "a timestamp without zone cannot go into a timestamp with zone: its zone is unknown"
        return f"{src} has a finer unit than {dst}: values would be truncated"
    if (pa.types.is_string(src) or pa.types.is_large_string(src)) and not pa.types.is_string(dst):
        return f"strings cannot be stored in a {dst} column"
    return f"{src} cannot be stored in a {dst} column without losing or changing values"


def conform_rows(rows: pa.Table, schema: T.Schema, *, widen: bool = False) -> pa.Table:
    """`rows` as the table's Arrow schema, or SchemaMismatch naming the first column that
    does not fit."""
    target = T.schema_to_arrow(schema)
    extra = [n for n in rows.column_names if n not in target.names]
    if extra:
        raise SchemaMismatch(f"column {extra[0]!r} is not in the table (its columns: {', '.join(target.names)})")
    columns = []
    for field, iceberg_field in zip(target, schema.fields):
        if field.name not in rows.column_names:
            if iceberg_field.write_default is not None:  # v3 "Default values": the writer supplies it
                from icefloe.impl.format.parquet import default_array
                columns.append(default_array(iceberg_field, rows.num_rows, "write_default"))
                continue
            if not field.nullable:
                raise SchemaMismatch(f"column {field.name!r} is required and missing (and has no write-default)")
            columns.append(pa.nulls(rows.num_rows, field.type))
            continue
        column = rows.column(field.name)
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        why = _why_not(column.type, field.type, widen)
        if why is not None:
            raise SchemaMismatch(f"column {field.name!r}: {why}")
        if not field.nullable and column.null_count:
            raise SchemaMismatch(f"column {field.name!r} is required and holds {column.null_count} null(s)")
        try:
            columns.append(column.cast(field.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaMismatch(f"column {field.name!r}: {e}") from None
    return pa.Table.from_arrays(columns, schema=target)
