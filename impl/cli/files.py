"""Input files of the table commands: Parquet, and CSV read with the table's schema.

A CSV file carries no types, so a CSV appended to a table is parsed into the table's
own column types (its timestamps with or without fractions, its decimals, its dates),
not into types pyarrow guesses and a check then refuses. A CSV with no table yet
(`create --schema-from x.csv`) gets the types pyarrow's reader infers. Nulls are read
as pyarrow writes them: an empty unquoted field is null, `""` is the empty string.

Imported by the commands that read files only (it imports pyarrow); nothing here
writes: rows that do not fit the table are refused by the table layer (append_schema.py).
"""
from __future__ import annotations

import csv
import os
import re

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from icefloe.impl.cli.common import UsageError


def _csv_column_types(table_schema: pa.Schema | None) -> dict:
    """The table's Arrow type of each CSV column that names a table column and is a type
    a CSV field can hold (no struct, list, map, or extension type such as uuid)."""
    if table_schema is None:
        return {}
    types = {}
    for field in table_schema:
        t = field.type
        if isinstance(t, pa.ExtensionType) or pa.types.is_nested(t) or pa.types.is_fixed_size_binary(t):
            continue
        types[field.name] = t
    return types


def read_rows(path: str, table_schema: pa.Schema | None = None) -> pa.Table:
    """The rows of a Parquet or CSV file; a CSV is parsed with `table_schema`'s types
    where it names a table column (a value that does not parse as its column's type is
    refused, naming the column and the value)."""
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file")
    is_csv = path.lower().endswith(".csv")
    try:
        if is_csv:
            options = pa_csv.ConvertOptions(column_types=_csv_column_types(table_schema),
                                            strings_can_be_null=True, quoted_strings_can_be_null=False)
            return pa_csv.read_csv(path, convert_options=options)
        return pq.read_table(path)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
        kind = "CSV" if is_csv else "Parquet"
        why = str(e).splitlines()[0]
        if is_csv:
            why = _name_the_column(path, why)
        raise UsageError(f"{path}: not a readable {kind} file{' for this table' if table_schema is not None else ''}: "
                         f"{why}") from None


def _name_the_column(path: str, message: str) -> str:
    """pyarrow's "In CSV column #2: ..." with the column's name from the header."""
    m = re.match(r"In CSV column #(\d+): (.*)", message)
    if not m:
        return message
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            header = next(csv.reader(f), [])
    except OSError:
        return message
    index = int(m[1])
    return f"column {header[index]!r}: {m[2]}" if index < len(header) else message


def rows_for(table, path: str) -> pa.Table:
    """The rows of a file for `table` (a CSV parsed with its schema). They are conformed
    to the schema once, by the table's write (Table.append / overwrite)."""
    from icefloe.impl.format.types import schema_to_arrow
    return read_rows(path, schema_to_arrow(table.metadata.schema()))
