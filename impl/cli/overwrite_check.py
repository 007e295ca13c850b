"""`overwrite FILE --filter F`: every row of FILE must match F (Iceberg-Java's overwrite
validates that the files it adds match its overwrite filter). A row outside F would stay
beside the rows the overwrite replaces, and the next run of the same overwrite would not
replace it: an idempotent rerun is the point of an overwrite by filter.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from icefloe.impl.cli.common import UsageError
from icefloe.impl.format import expressions as E
from icefloe.impl.table.append_schema import conform_rows


class RowsOutsideFilter(UsageError):
    """Rows to be written by an overwrite that its filter does not match (exit 2)."""


def check_rows_match(rows: pa.Table, row_filter: E.Expression, schema, file: str, filter_text: str) -> None:
    """RowsOutsideFilter naming how many rows of `file` the filter does not match (false
    or null) and the first of them. The filter is evaluated on the rows as the table will
    hold them (SchemaMismatch if they cannot be); nothing is written here."""
    rows = conform_rows(rows, schema)
    if not rows.num_rows:
        return
    bound = E.to_arrow(E.bind(row_filter, schema))
    matches = ds.dataset(rows).to_table(columns={"m": bound}).column("m").combine_chunks()
    matches = pc.fill_null(matches, False)
    outside = rows.num_rows - pc.sum(matches).as_py()
    if outside:
        first = rows.filter(pc.invert(matches)).slice(0, 1).to_pylist()[0]
        raise RowsOutsideFilter(
            f"{file}: {outside} of {rows.num_rows} row(s) do not match --filter {filter_text!r} (the first: "
            f"{first}); the overwrite would keep them beside the rows it replaces, and a rerun would not replace "
            "them. Nothing was written; --allow-rows-outside-filter writes them anyway")
