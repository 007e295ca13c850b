"""icefloe's engine on a format v3 table (the suite's v3 phase, conformance.v3; model:
icefloe.model.v3, spec/PROTOCOL.md 19): each model kind as icefloe.impl does it, and the
table's state as `read_v3` reports it (adapter.V3Read).

- append: a FastAppend (its first-row-id assigned by each attempt's manifest list);
- row_delete, by two paths so that conform judges both on every run (the model expects the
  same of each): writer 1's as an engine that writes its own DVs commits them
  (`EngineDVDelete`: it finds the row at the starting snapshot, writes one DV holding the
  file's earlier positions and the row's, and hands it to impl's RowDelta, which removes
  what the DV supersedes and validates every attempt: Spark's merge-on-read path,
  impl/spark/native_delete.py), every other writer's through impl's DeleteRows (Table.delete
  with merge-on-read). Writer 1 is the row_delete of every instance that has one, so the
  RowDelta path meets a DV to replace, position deletes to merge and rivals on both files;
  the others (and UpdateRows, a DeleteRows) meet the same. icefloe's DV policy is
  `conflict` on both paths (a DV added for the same file meanwhile fails the validation,
  as Iceberg-Java 1.10 does);
- row_update: impl's merge-on-read update (UpdateRows, what Table.update(mode=
  "merge-on-read") runs): a DV for the row's old position and the row written again with
  its _row_id materialised (table spec "Row Lineage": an updated row keeps its id), in one
  snapshot; the model's update sets the row's value to itself;
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
from icefloe.impl.format.manifest import DataFile, DataFileContent, ManifestContent
from icefloe.impl.format.integrity import CorruptMetadata
from icefloe.impl.format.puffin import PuffinWriter
from icefloe.impl.io.base import StoreError
from icefloe.impl.io.locations import comparable_location
from icefloe.impl.table import producer as P
from icefloe.impl.table.deletes import DeleteReader, not_true
from icefloe.impl.table.row_deletes import DeleteRows, dv_location
from icefloe.impl.table.row_updates import UpdateRows
from icefloe.impl.table.scan import (
    ROW_ID, FileScanTask, lineage_schema, plan_files, read_task, snapshot_schema,
)

ROWS = pa.schema([pa.field(A.COLUMN, pa.string(), nullable=False)])


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


ENGINE_DV_WRITER = 1   # the writer whose row deletes go through RowDelta with a DV it wrote


def writer_of(op: A.OpSpec) -> int:
    """The writer of an operation: its op id is "w.k" (adapter.OpSpec)."""
    return int(op.op_id.split(".", 1)[0])


def live_position(c, row: str):
    """(task, position, positions already deleted) of the data file in which `row` is live
    at the commit's starting snapshot (its DV, else the position deletes that apply to it:
    a DV replaces them); None if the row is live nowhere."""
    schema = c.base.schema()
    deletes = DeleteReader(c.io)
    for task in plan_files(c.tree, c.base, c.starting_snapshot, row_filter(row), schema):
        path = task.data_file.file_path
        values = read_task(c.io, FileScanTask(task.data_file, task.spec_id, task.data_sequence_number),
                           schema).column(A.COLUMN).to_pylist()
        if task.deletion_vector is not None:
            gone = {int(p) for p in deletes.dv_positions(task.deletion_vector)}
        else:
            key = comparable_location(path)
            gone = {p for d in task.position_deletes for k, ps in deletes.positions(d).items()
                    if comparable_location(k) == key for p in ps}
        for pos, value in enumerate(values):
            if value == row and pos not in gone:
                return task, pos, gone
    return None


class EngineDVDelete(P.RowDelta):
    """row_delete as an engine that writes its own deletion vectors commits it: at the
    starting snapshot it finds the row, writes a Puffin file with one DV for the row's data
    file holding every position deleted there before and the row's (spec "Deletion
    Vectors"), and gives that DV to impl's RowDelta (row filter `id = row`, serializable),
    whose plan works out what the DV supersedes (superseding.supersede) and whose
    validations run on every attempt. The Puffin file is the commit's own write, deleted
    with the commit's other files if it ends in conflict (spec/PROTOCOL.md 9.5)."""

    def __init__(self, row: str | None):
        super().__init__([], (), (), row_filter=row_filter(row), isolation=P.SERIALIZABLE)
        self.row = row

    def plan(self, c):
        found = None if self.row is None else live_position(c, self.row)
        if found is None:
            return False                 # the row is live nowhere: a no-op (5.4)
        task, pos, gone = found
        writer = PuffinWriter()
        offset, length, cardinality = writer.add_dv(task.data_file.file_path, gone | {pos})
        data = writer.finish()
        location = dv_location(c.base.location, c.env.uuid())
        c.write(location, data)
        dv = DataFile(location, "puffin", task.data_file.partition, cardinality, len(data),
                      DataFileContent.POSITION_DELETES, referenced_data_file=task.data_file.file_path,
                      content_offset=offset, content_size_in_bytes=length)
        self.added_deletes = [dv]
        self.added_delete_specs[id(dv)] = task.spec_id
        return super().plan(c)


def update_row(row: str | None) -> UpdateRows:
    """row_update as impl's merge-on-read update: `SET id = row WHERE id = row` (no row: a
    filter that matches nothing, so the value, which must not be null for the required
    column, is never written)."""
    return UpdateRows({A.COLUMN: row if row is not None else ""}, row_filter(row), isolation=P.SERIALIZABLE)


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
        if writer_of(op) == ENGINE_DV_WRITER:
            return EngineDVDelete(op.row)
        return DeleteRows(row_filter(op.row), isolation=P.SERIALIZABLE)
    if op.kind == A.ROW_UPDATE:
        return update_row(op.row)
    if op.kind == A.COW_DELETE:
        return CowDeleteRow(op.row)
    assert op.kind == A.REWRITE, op.kind
    return P.RewriteFiles(file_named(table, op.where, op.row), files_min=1)


def read_v3(table, tree, snapshot_id: int | None = None) -> A.V3Read:
    """The v3 table's state at main's head (or `snapshot_id`): what the manifests hold
    (every live DV, even two for one file, and every live position delete file per data
    file it names), each data file's rows and _row_ids as written and inherited, and what
    icefloe's own scan returns."""
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
    # Each live v2 position delete file, per data file it names (canonical paths matched to
    # the live files' spelling): what a DV written for the file must merge and remove (19.8).
    spelled = {comparable_location(f.path): f.path for f in files}
    pos_deletes = tuple(A.V3DeletionVector(spelled.get(comparable_location(k), k), frozenset(int(p) for p in ps))
                        for _, e in tree.live_entries(snap, ManifestContent.DELETES)
                        if e.data_file.content == DataFileContent.POSITION_DELETES
                        and not e.data_file.is_deletion_vector
                        for k, ps in sorted(deletes.positions(e.data_file).items()))
    try:
        scanned = table.scan(snapshot_id=snap.snapshot_id, columns=[A.COLUMN, ROW_ID])
        rows, error = tuple(sorted(zip(scanned.column(A.COLUMN).to_pylist(), scanned.column(ROW_ID).to_pylist()))), None
    except (CorruptMetadata, StoreError) as e:
        rows, error = None, f"{type(e).__name__}: {e}"
    return A.V3Read(snap.snapshot_id, m.next_row_id, tuple(sorted(files, key=lambda f: f.path)), dvs, rows, error,
                    pos_deletes)
