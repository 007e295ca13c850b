"""Streaming writers of `icefloe scan`: each takes Arrow tables one batch at a time and
writes them to stdout as it goes, so memory holds one batch, never the whole result.

- `csv`: a header, then rows (pyarrow's CSV writer, batch by batch);
- `json`: one JSON array, one row object per line (valid JSON for `json.load`);
- `jsonl`: JSON lines, one row object per line (for `jq -c`, `head`, streaming tools);
- `table`: aligned columns for people; widths come from the first batch and grow if a
  later batch needs more (the header is printed once).
"""
from __future__ import annotations

import base64
import datetime as dt
import io
import itertools
import json
import sys
from decimal import Decimal
from typing import Iterable

import pyarrow as pa
import pyarrow.csv as pa_csv

from icefloe.impl.cli.common import OUTPUT_FORMATS as FORMATS  # noqa: F401 - one list, also for --help


def _json_value(value):
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


def _plain(rows: pa.Table) -> pa.Table:
    """Extension columns (uuid) as their storage, which every writer knows."""
    if not any(isinstance(f.type, pa.ExtensionType) for f in rows.schema):
        return rows
    columns = []
    for col in rows.columns:
        if isinstance(col.type, pa.ExtensionType):
            col = pa.chunked_array([c.storage for c in col.chunks], col.type.storage_type)
        columns.append(col)
    return pa.Table.from_arrays(columns, names=rows.column_names)


def write_csv(batches: Iterable[pa.Table], schema: pa.Schema, out=None) -> int:
    out = out or sys.stdout.buffer
    header, n = True, 0
    for rows in batches:
        buf = io.BytesIO()
        pa_csv.write_csv(_plain(rows), buf, pa_csv.WriteOptions(include_header=header))
        out.write(buf.getvalue())
        header, n = False, n + rows.num_rows
    if header:                                   # no rows: the header alone
        buf = io.BytesIO()
        pa_csv.write_csv(_plain(schema.empty_table()), buf)
        out.write(buf.getvalue())
    out.flush()
    return n


def write_json(batches: Iterable[pa.Table], lines: bool, out=None) -> int:
    out = out or sys.stdout
    n = 0
    if not lines:
        out.write("[")
    for rows in batches:
        for row in rows.to_pylist():
            text = json.dumps(row, default=_json_value, ensure_ascii=False)
            out.write(text + "\n" if lines else ("\n" if n == 0 else ",\n") + text)
            n += 1
    if not lines:
        out.write("\n]\n" if n else "]\n")
    out.flush()
    return n


def _cell(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    return str(value)


def write_table(batches: Iterable[pa.Table], schema: pa.Schema, out=None) -> int:
    out = out or sys.stdout
    names = schema.names
    widths: list[int] | None = None
    n = 0
    for rows in batches:
        cells = [[_cell(v) for v in col.to_pylist()] for col in rows.columns]
        if widths is None:
            widths = [max([len(name), *(len(c) for c in col)]) for name, col in zip(names, cells)]
            out.write("  ".join(name.rjust(w) for name, w in zip(names, widths)) + "\n")
        else:
            widths = [max([w, *(len(c) for c in col)]) for w, col in zip(widths, cells)]
        for i in range(rows.num_rows):
            out.write("  ".join(col[i].rjust(w) for col, w in zip(cells, widths)) + "\n")
        n += rows.num_rows
    if widths is None:
        out.write("(no rows)\n")
    out.flush()
    return n


def write(batches: Iterable[pa.Table], schema: pa.Schema, fmt: str) -> int:
    """Write every batch in `fmt`; the number of rows written. Nothing is written until
    the first batch is in hand (or the stream is found empty), so an error found while
    planning (a filter naming no column, an unreadable manifest) leaves stdout empty
    rather than holding a JSON array's "[" or a CSV header (bug19)."""
    batches = iter(batches)
    first = next(batches, None)
    batches = itertools.chain([] if first is None else [first], batches)
    if fmt == "csv":
        return write_csv(batches, schema)
    if fmt in ("json", "jsonl"):
        return write_json(batches, lines=fmt == "jsonl")
    return write_table(batches, schema)
