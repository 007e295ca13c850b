"""icefloe's engine on a format v3 table (the suite's v3 phase, conformance.v3; model:
icefloe.model.v3, spec/PROTOCOL.md 19): each model kind as icefloe.impl does it, and the
table's state as `read_v3` reports it (adapter.V3Read).

- append: a FastAppend (its first-row-id assigned by each attempt's manifest list);
- row_delete: impl's DeleteRows, one deletion vector (a DV for a file that has one holds
  its positions and replaces it); icefloe's DV policy is `conflict` (a DV added for the
  same file meanwhile fails the validation, as Iceberg-Java 1.10 does);
- row_update: the same DV, and the row written again with its _row_id materialised (table
  spec "Row Lineage": an updated row keeps its id), in one snapshot;
- cow_delete: copy-on-write delete of the row (DeleteWhere: the data file rewritten without
  it, the survivors' ids materialised);
- rewrite: compaction of the one data file the model names (RewriteFiles with files_min 1,
  the live rows keep their ids).

A table upgraded from v2 (`TableContext.upgraded_from_v2`, spec/PROTOCOL.md 19.8) is built
by `create_upgraded`: v2, one data file, a position delete file per deleted row, upgraded.
"""
from __future__ import annotations

import io as _io

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.conformance import adapter as A
from icefloe.impl.format import expressions as E
from icefloe.impl.format.expression_parser import parse as parse_filter
from icefloe.impl.format.manifest import DataFileContent, ManifestContent
from icefloe.impl.format.integrity import CorruptMetadata
from icefloe.impl.io.base import StoreError
from icefloe.impl.table import producer as P
from icefloe.impl.table.deletes import DeleteReader, not_true
from icefloe.impl.table.row_deletes import DeleteRows
from icefloe.impl.table.scan import (
    LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, FileScanTask, lineage_schema, plan_files, read_task, snapshot_schema,
)

ROWS = pa.schema([pa.field(A.COLUMN, pa.string(), nullable=False)])
LINEAGE_ROWS = pa.schema([pa.field(A.COLUMN, pa.string(), nullable=False), pa.field(ROW_ID, pa.int64()),
                          pa.field(LAST_UPDATED_SEQUENCE_NUMBER, pa.int64())])


def create_upgraded(catalog, ctx: A.TableContext, schema, location: str, store, env, retry) -> None:
    """The v3 phase's table as written by a v2 engine and upgraded (spec/PROTOCOL.md 19.8):
    a v2 table, one data file of `rows`, one position delete file per row of `deleted` (each
    naming that data file alone), then the upgrade to v3, which writes no snapshot."""
    from icefloe.conformance.engines.icefloe_rows import POSITION_ARROW, POSITION_SCHEMA
    from icefloe.impl.format.manifest import DataFile
    from icefloe.impl.format.parquet import data_file_metrics
    from icefloe.impl.table.deletes import DELETE_FILE_PATH_ID
    from icefloe.impl.table.env import data_file_location
    from icefloe.impl.table.table import Table, create_table

    rows, deleted = ctx.upgraded_from_v2
    create_table(catalog, ctx.identifier, schema, location=location, io=store, env=env, format_version=2)
    table = Table(catalog, ctx.identifier, store, env, retry)
    _committed(table.append(pa.Table.from_pylist([{A.COLUMN: r} for r in rows], schema=ROWS)), "the v2 append")
    (path,) = [t.data_file.file_path for t in table.refresh().plan_files()]
    for row in deleted:
        positions = pa.table({"file_path": [path], "pos": [rows.index(row)]}, schema=POSITION_ARROW)
        out = _io.BytesIO()
        pq.write_table(positions, out)
        raw = out.getvalue()
        metrics = data_file_metrics(raw, POSITION_SCHEMA, positions)
        metrics.pop("record_count")
        exact = path.encode()           # the one data file it names, untruncated
        metrics["lower_bounds"] = {**(metrics.get("lower_bounds") or {}), DELETE_FILE_PATH_ID: exact}
        metrics["upper_bounds"] = {**(metrics.get("upper_bounds") or {}), DELETE_FILE_PATH_ID: exact}
        location_ = data_file_location(location, "", env.uuid(), "-deletes")
        store.put_if_absent(location_, raw)
        delete = DataFile(location_, "PARQUET", (), 1, len(raw), content=DataFileContent.POSITION_DELETES,
                          **metrics)
        _committed(table.add_delete_files([delete], [path]), f"the v2 position delete of {row}")
    _committed(table.upgrade_format_version(3), "the upgrade to v3")


def _committed(outcome, what: str) -> None:
    if not isinstance(outcome, A.Committed):
        raise RuntimeError(f"the upgraded table's bootstrap: {what} did not commit: {outcome}")


def row_filter(row: str | None):
    """`id = row` (AlwaysFalse for no row: the operation plans nothing, a no-op)."""
    return E.AlwaysFalse() if row is None else parse_filter(f"{A.COLUMN} = {row!r}")


class UpdateRow(DeleteRows):
    """row_update on v3: a DV deleting the row where it lives, and the row written again in a
    new data file with its _row_id (null _last_updated_sequence_number: the commit's)."""
    operation = "overwrite"

    def __init__(self, row: str | None, isolation: str = P.SERIALIZABLE):
        super().__init__(row_filter(row), isolation=isolation)
        self.row = row

    def plan(self, c):
        if not super().plan(c):
            return False
        schema = lineage_schema(c.base.schema())
        for data_file, spec_id, _ in self.dvs:
            task = next(t for t in plan_files(c.tree, c.base, c.starting_snapshot)
                        if t.data_file.file_path == data_file.file_path)
            rows = read_task(c.io, task, schema).filter(E.to_arrow(E.bind(self.row_filter, schema)))
            ids = rows.column(ROW_ID).to_pylist()
            self.rows_to_add.append(pa.table({A.COLUMN: [self.row] * len(ids), ROW_ID: ids,
                                              LAST_UPDATED_SEQUENCE_NUMBER: [None] * len(ids)},
                                             schema=LINEAGE_ROWS))
        return True

    def write_data(self, c):
        super().write_data(c)                    # the DVs, one Puffin file
        P.FileChange.write_data(self, c)         # the rows written again


class CowDeleteRow(P.DeleteWhere):
    """cow_delete on v3: the data file in which the row is live is rewritten without it (its
    survivors keep their _row_ids); like DeleteWhere, but only that file: the model's
    copy-on-write names one file, where DeleteWhere would also drop a file whose every row a
    DV already deleted."""

    def __init__(self, row: str | None):
        super().__init__(row_filter(row), isolation=P.SERIALIZABLE)

    def plan(self, c):
        schema = c.base.schema()
        mask = E.to_arrow(E.bind(self.row_filter, schema))
        deletes = DeleteReader(c.io)
        for task in plan_files(c.tree, c.base, c.starting_snapshot, self.row_filter, schema):
            rows = read_task(c.io, task, lineage_schema(schema), deletes)
            if rows.filter(mask).num_rows == 0:
                continue
            self.removed[task.data_file.file_path] = task.data_file
            self.rows_to_add.append(rows.filter(not_true(mask)))
        if not self.removed:
            return False
        self.operation = "overwrite" if any(t.num_rows for t in self.rows_to_add) else "delete"
        self.reqs = [P.StartingSnapshotIsAncestor(self.ref), P.FilesStillLive(frozenset(self.removed), self.ref),
                     P.NoConflictingData(self.row_filter, self.ref),
                     P.NoNewDeletesForFiles(tuple(self.removed.values()), self.ref)]
        return True


def file_named(table, where, row) -> list:
    """The live data file of main's head written with exactly the rows `where` (deletes not
    applied) in which `row` is live (None: in which no row is); [] if there is none."""
    table.refresh()
    m = table.metadata
    snap = m.current_snapshot()
    schema = snapshot_schema(m, snap)
    deletes = DeleteReader(table.io)
    for task in plan_files(table.tree, m, snap):
        raw = read_task(table.io, FileScanTask(task.data_file, task.spec_id, task.data_sequence_number), schema)
        if set(raw.column(A.COLUMN).to_pylist()) != set(where or ()):
            continue
        live = read_task(table.io, task, schema, deletes).column(A.COLUMN).to_pylist()
        if (row in live) if row is not None else not live:
            return [task.data_file.file_path]
    return []


def operation(table, op: A.OpSpec):
    """The impl operation for one of the v3 phase's OpSpecs (`table`: the harness's handle,
    fresh, to find a rewrite's data file)."""
    if op.kind == A.APPEND:
        return P.FastAppend(pa.Table.from_pylist([{A.COLUMN: r} for r in op.rows], schema=ROWS), op.ref)
    if op.kind == A.ROW_DELETE:
        return DeleteRows(row_filter(op.row), isolation=P.SERIALIZABLE)
    if op.kind == A.ROW_UPDATE:
        return UpdateRow(op.row)
    if op.kind == A.COW_DELETE:
        return CowDeleteRow(op.row)
    assert op.kind == A.REWRITE, op.kind
    return P.RewriteFiles(file_named(table, op.where, op.row), files_min=1)


def read_v3(table, tree, snapshot_id: int | None = None) -> A.V3Read:
    """The v3 table's state at main's head (or `snapshot_id`): what the manifests hold
    (every live DV, even two for one file), each data file's rows and _row_ids as written
    and inherited, and what icefloe's own scan returns."""
    table.refresh()
    m = table.metadata
    snap = m.current_snapshot() if snapshot_id is None else m.snapshot_by_id(snapshot_id)
    if snap is None:
        return A.V3Read(None, m.next_row_id or 0, (), (), ())
    schema = lineage_schema(snapshot_schema(m, snap))
    files = []
    for _, e in tree.live_entries(snap, ManifestContent.DATA):
        f = e.data_file
        rows = read_task(table.io, FileScanTask(f, 0, e.sequence_number), schema)
        files.append(A.V3DataFile(f.file_path, f.first_row_id, tuple(rows.column(A.COLUMN).to_pylist()),
                                  tuple(rows.column(ROW_ID).to_pylist())))
    deletes = DeleteReader(table.io)
    dvs = tuple(A.V3DeletionVector(e.data_file.referenced_data_file,
                                   frozenset(int(p) for p in deletes.dv_positions(e.data_file)))
                for _, e in tree.live_entries(snap, ManifestContent.DELETES)
                if e.data_file.content == DataFileContent.POSITION_DELETES and e.data_file.is_deletion_vector)
    try:
        scanned = table.scan(snapshot_id=snap.snapshot_id, columns=[A.COLUMN, ROW_ID])
        rows, error = tuple(sorted(zip(scanned.column(A.COLUMN).to_pylist(), scanned.column(ROW_ID).to_pylist()))), None
    except (CorruptMetadata, StoreError) as e:
        rows, error = None, f"{type(e).__name__}: {e}"
    return A.V3Read(snap.snapshot_id, m.next_row_id, tuple(sorted(files, key=lambda f: f.path)), dvs, rows, error)
