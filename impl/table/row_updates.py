"""Row-level updates: `UPDATE t SET column = value, ... WHERE filter` (spec/PROTOCOL.md 7.3
"row_update"; model: ROW_UPDATE, and COW_DELETE for the copy-on-write shape), with row
lineage kept as the table spec's "Row Lineage" says for a row moved to a new data file:

1. the row's existing `_row_id` is copied into the new file (an updated row keeps its id);
2. a modified row's `_last_updated_sequence_number` is written null, so that it inherits
   the sequence number of the snapshot that commits the update;
3. an unmodified row (a copy-on-write survivor) keeps its `_last_updated_sequence_number`.

A row of a file written before an upgrade to v3 (no first_row_id) has a null `_row_id`;
written again, it inherits one from its new file like a new row ("Row Lineage for
Upgraded Tables": ids are assigned by the first snapshot after the upgrade).

Two shapes, as Iceberg-Java's write.update.mode names them:
- `UpdateWhere` (copy-on-write, any format version): each data file holding a matching
  row is rewritten, survivors and updated rows together (DeleteWhere's planning and
  validations);
- `UpdateRows` (merge-on-read, format v3): a deletion vector per data file for the rows'
  old positions (DeleteRows: one live DV per file) and the updated rows in new data files.

The values are literals in the spec's JSON single-value form (Appendix D), the form
defaults take; a computed value (`x = x + 1`) is not supported.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

import pyarrow as pa

from icefloe.impl.format import name_mapping as NM, types as T
from icefloe.impl.format.conversions import from_json_value
from icefloe.impl.format.metadata import MAIN_BRANCH
from icefloe.impl.format.parquet import default_array
from icefloe.impl.outcomes import InvalidArgument, SERIALIZABLE
from icefloe.impl.table import producer as P
from icefloe.impl.table.deletes import not_true
from icefloe.impl.table.row_deletes import DeleteRows
from icefloe.impl.table.scan import (  # ROW_ID: named by the v3-update-new-row-ids mutant (mutants/catalog.py)
    LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID, LINEAGE_COLUMNS, ROW_ID, FileScanTask, read_task,  # noqa: F401
)

ASSIGNMENTS_MAX = 1_000  # columns one update may set: a bound on a caller's list, far above any schema's use


def assigned_columns(schema: T.Schema, names) -> dict[str, T.NestedField]:
    """Name -> column of `schema` for each column an update sets (`names`): InvalidArgument
    naming the column for none or too many, an unknown or nested column, a lineage column
    (readers derive them; a writer never sets them) or a non-primitive one. A name the
    schema holds as a column of its own (a v1/v2 table's `_row_id`, say) is that column,
    not lineage. The one check of Table.update and Spark's update (native_update)."""
    names = list(names)
    if not names:
        raise InvalidArgument("an update sets at least one column")
    if len(names) > ASSIGNMENTS_MAX:
        raise InvalidArgument(f"an update sets at most {ASSIGNMENTS_MAX} columns, not {len(names)}")
    top = {f.name: f for f in schema.fields}
    out = {}
    for name in names:
        if name in LINEAGE_COLUMNS and name not in top:
            raise InvalidArgument(f"{name} is a row lineage column: readers derive it, an update cannot set it")
        f = top.get(name)
        if f is None:
            nested = " (a column inside a struct, list or map cannot be set)" if "." in name else ""
            raise InvalidArgument(f"no top-level column {name!r} in the table's schema{nested}")
        if not isinstance(f.type, T.PrimitiveType):
            raise InvalidArgument(f"{name} is a {f.type}; an update sets primitive columns only")
        out[name] = f
    return out


def check_assignments(schema: T.Schema, assignments: Mapping[str, Any]) -> dict[int, Any]:
    """Field id -> JSON single value for each `column = value`, checked against `schema`:
    the columns by `assigned_columns`, then InvalidArgument naming the column for a null
    for a required column or a value that is not of the column's type."""
    columns = assigned_columns(schema, assignments)
    out: dict[int, Any] = {}
    for name, value in assignments.items():
        f = columns[name]
        if value is None and f.required:
            raise InvalidArgument(f"{name} is required; it cannot be set to null")
        try:
            from_json_value(f.type, value)
        except T.FormatError as e:
            raise InvalidArgument(f"{name}: {value!r} is not a {f.type} value in the JSON single-value form ({e})") \
                from None
        out[f.field_id] = value
    return out


def updated(rows: pa.Table, schema: T.Schema, assignments: Mapping[int, Any]) -> pa.Table:
    """`rows` with each assigned column set to its value; with lineage columns (v3), each row
    keeps its `_row_id` and gets a null `_last_updated_sequence_number` (spec "Row Lineage":
    a modified row inherits the sequence number of the commit that modifies it). Columns
    are found by field id (`rows` as read_task gives them), never by name: a user's column
    named `_last_updated_sequence_number` on a v2 table is data, kept as it is."""
    n = rows.num_rows
    for field_id, value in assignments.items():
        f = schema.find_field(field_id)
        i = P.column_index(rows, field_id)
        assert i >= 0, f"column {f.name} not read"
        rows = rows.set_column(i, rows.schema.field(i), default_array(replace(f, initial_default=value), n)
                               .cast(rows.schema.field(i).type))
    if P.carries_lineage(rows):  # v3: read with lineage_schema
        j = P.column_index(rows, LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID)
        rows = rows.set_column(j, rows.schema.field(j), pa.nulls(n, pa.int64()))
    return rows


class UpdateWhere(P.DeleteWhere):
    """Copy-on-write update: every data file holding a row that matches `row_filter` is
    rewritten with its survivors unchanged and its matching rows updated (operation
    overwrite), validated as a copy-on-write delete of those files."""

    def __init__(self, assignments: Mapping[str, Any], row_filter, ref: str = MAIN_BRANCH,
                 isolation: str = SERIALIZABLE):
        super().__init__(row_filter, None, ref, isolation)
        self.assignments = dict(assignments)
        self._schema: T.Schema | None = None
        self._checked: dict[int, Any] | None = None

    def plan(self, c):
        self._schema = c.base.schema()
        self._checked = check_assignments(self._schema, self.assignments)
        planned = super().plan(c)
        if planned:
            self.operation = "overwrite"
        return planned

    def rewritten_rows(self, rows: pa.Table, mask) -> pa.Table:
        """A file's rows as written again: the survivors as they were, then the updated rows."""
        changed = updated(rows.filter(mask), self._schema, self._checked)
        return pa.concat_tables([rows.filter(not_true(mask)), changed])


class UpdateRows(DeleteRows):
    """Merge-on-read update (format v3): a deletion vector for each matching row's position
    (holding the file's earlier deleted positions: one live DV per file) and the updated
    rows, with their `_row_id`s, in new data files; one snapshot (operation overwrite)."""
    operation = "overwrite"

    def __init__(self, assignments: Mapping[str, Any], row_filter, ref: str = MAIN_BRANCH,
                 isolation: str = SERIALIZABLE):
        super().__init__(row_filter, ref, isolation)
        self.assignments = dict(assignments)

    def plan(self, c):
        schema = c.base.schema()
        checked = check_assignments(schema, self.assignments)
        if not super().plan(c):  # the DVs (UnsupportedFormatVersion below v3)
            return False
        with_lineage = P.lineage_schema_of(c, schema)  # v3; a lineage-named column refused (rows move)
        parts = []
        for task, positions in self.hits:
            # the file as written (no deletes: positions count from its start), lineage filled
            raw = read_task(c.io, FileScanTask(task.data_file, task.spec_id, task.data_sequence_number),
                            with_lineage, name_mapping=NM.of(c.base.properties))
            parts.append(updated(raw.take(pa.array(positions, pa.int64())), with_lineage, checked))
        self.rows_to_add.append(pa.concat_tables(parts))  # one file per partition, not per file read
        return True

    def write_data(self, c):
        super().write_data(c)                    # the DVs, one Puffin file
        P.FileChange.write_data(self, c)         # the updated rows, one file per partition
