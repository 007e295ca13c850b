"""icefloe's engine for the suite's partitioned table: the row-level and ref operations
(spec/PROTOCOL.md 7.3 row_delete, row_update, upsert; 8 tag, fast_forward) done as
icefloe.impl does them, with the files the model writes in its WriteData step written
in the commit's data phase (so the two stay in lockstep phase by phase).

- row_delete / row_update: a position delete of the row's live occurrence at the
  starting snapshot (its data file and position, found by planning that snapshot with
  its delete files attached); an update also writes the row again in a new data file of
  its partition. Validated as icefloe's RowDelta validates: the named data file still
  live, no delete file added for it meanwhile, and under serializable isolation no data
  added to the partition its filter reads.
- upsert: an equality delete on the partition column (every older row of the partition)
  and a data file of the partition, one commit, no validation.
- cdc_update: a row inserted and updated within one commit, as Flink's CDC writer does in
  one checkpoint (Iceberg-Java BaseEqualityDeltaWriter: a key written again is deleted by
  position in the file being written): one data file holding both versions and a position
  delete of the first naming that file, one commit, no validation (Flink's committer's
  RowDelta validates nothing). Both files get the commit's data sequence number, so the
  delete applies only because position deletes apply to data of their own sequence number.
"""
from __future__ import annotations

import io as _io

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.conformance import adapter as A
from icefloe.impl.format.manifest import DataFile, DataFileContent, ManifestContent
from icefloe.impl.format.parquet import data_file_metrics, read_data_file
from icefloe.impl.format.types import FIELD_ID_KEY, LONG, STRING, NestedField, Schema
from icefloe.impl.table import producer as P
from icefloe.impl.table.deletes import DeleteReader
from icefloe.impl.table.env import data_file_location, partition_path
from icefloe.impl.table.deletes import DELETE_FILE_PATH_ID, DELETE_POS_ID
from icefloe.impl.table.scan import plan_files

POSITION_ARROW = pa.schema([
    pa.field("file_path", pa.string(), nullable=False, metadata={FIELD_ID_KEY: str(DELETE_FILE_PATH_ID).encode()}),
    pa.field("pos", pa.int64(), nullable=False, metadata={FIELD_ID_KEY: str(DELETE_POS_ID).encode()})])
POSITION_SCHEMA = Schema((NestedField(DELETE_FILE_PATH_ID, "file_path", STRING, True),
                          NestedField(DELETE_POS_ID, "pos", LONG, True)))


def _parquet(table: pa.Table) -> bytes:
    out = _io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def live_position(c, row: str, partition: int) -> tuple[DataFile, int] | None:
    """The data file and position of `row`'s live occurrence at the commit's starting
    snapshot (None: not live there)."""
    start = c.starting_snapshot
    schema = c.base.schema()
    reader = DeleteReader(c.io)
    for task in plan_files(c.tree, c.base, start):
        if task.data_file.partition != (partition,) or task.equality_deletes:
            continue            # another partition, or every row of it deleted by equality
        rows = read_data_file(c.io.get(task.data_file.file_path), schema, task.data_file.file_path,
                              data_file=task.data_file)
        gone = set()
        for d in task.position_deletes:
            gone |= reader.positions(d).get(_canonical(task.data_file.file_path), set())
        for pos, value in enumerate(rows.column(A.COLUMN).to_pylist()):
            if value == row and pos not in gone:
                return task.data_file, pos
    return None


def _canonical(path: str) -> str:
    from icefloe.impl.io.locations import canonical_location
    return canonical_location(path)


class ModelRowDelta(P.RowDelta):
    """row_delete, row_update, upsert or cdc_update of the model, planned at the starting snapshot."""

    def __init__(self, kind: str, partition: int, row: str | None, new_rows: pa.Table | None, ref: str,
                 isolation: str):
        row_filter = f"{A.PART_COLUMN} = {partition}" if kind not in (A.UPSERT, A.CDC_UPDATE) else None
        super().__init__([], [], (), ref=ref, row_filter=row_filter, isolation=isolation)
        self.kind, self.partition, self.row, self.new_rows = kind, partition, row, new_rows
        self.target: tuple[DataFile, int] | None = None

    def plan(self, c) -> bool:
        if self.kind not in (A.UPSERT, A.CDC_UPDATE):
            self.target = live_position(c, self.row, self.partition)
            if self.target is None:
                return False            # the row is not live: nothing to do (5.4)
            self.referenced = frozenset({self.target[0].file_path})
        self.added_deletes = []
        super().plan(c)                 # checks the files it is given: none yet
        self.added_deletes = [None]     # planned: written in the data phase
        return True

    def write_data(self, c):
        names = [f.name for f in c.base.spec().fields]
        location = data_file_location(c.base.location, partition_path(names, (self.partition,)), c.env.uuid(),
                                      "-deletes")
        if self.kind == A.UPSERT:
            field = c.base.schema().field_by_name(A.PART_COLUMN)
            arrow = pa.schema([pa.field(A.PART_COLUMN, pa.int32(), nullable=False,
                                        metadata={FIELD_ID_KEY: str(field.field_id).encode()})])
            raw = _parquet(pa.table({A.PART_COLUMN: [self.partition]}, schema=arrow))
            delete = DataFile(location, "PARQUET", (self.partition,), 1, len(raw),
                              content=DataFileContent.EQUALITY_DELETES, equality_ids=(field.field_id,))
        else:
            if self.kind == A.CDC_UPDATE:
                # The data file first: the position delete names it, as written in the manifest.
                self.added = P.write_rows(c, self.new_rows)
                assert len(self.added) == 1 and self.added[0].record_count == self.new_rows.num_rows, self.added
                self.target = (self.added[0], self.new_rows.column(A.COLUMN).to_pylist().index(self.row))
            data_file, pos = self.target
            table = pa.table({"file_path": [data_file.file_path], "pos": [pos]}, schema=POSITION_ARROW)
            raw = _parquet(table)
            metrics = data_file_metrics(raw, POSITION_SCHEMA, table)
            metrics.pop("record_count")
            # The one path it names, untruncated: a validation can tell exactly which data
            # file it may apply to (a truncated bound encloses the neighbours too).
            exact = data_file.file_path.encode()
            metrics["lower_bounds"] = {**(metrics.get("lower_bounds") or {}), DELETE_FILE_PATH_ID: exact}
            metrics["upper_bounds"] = {**(metrics.get("upper_bounds") or {}), DELETE_FILE_PATH_ID: exact}
            delete = DataFile(location, "PARQUET", (self.partition,), 1, len(raw),
                              content=DataFileContent.POSITION_DELETES, **metrics)
        c.write(location, raw)
        self.added_deletes = [delete]
        if self.new_rows is not None and self.kind != A.CDC_UPDATE:
            self.added = P.write_rows(c, self.new_rows)


def starting_files(c) -> dict:
    """path -> DataFile of the data files live at the commit's starting snapshot."""
    return {e.data_file.file_path: e.data_file
            for _, e in c.tree.live_entries(c.starting_snapshot, ManifestContent.DATA)}
