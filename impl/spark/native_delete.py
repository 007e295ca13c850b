"""Row-level deletes through Spark (Iceberg spec "Row-level Deletes", "Deletion Vectors",
"Position Delete Files"; spec/PROTOCOL.md 7.3 "delete by filter, row-level"; docs/spark.md
"Deleting rows").

    from icefloe.impl.spark import delete
    delete(spark, "cat.db.t", opts, "cat = 'a' and id > 5")                      # write.delete.mode
    delete(spark, "cat.db.t", opts, "id in (1, 2)", mode="merge-on-read")

- `merge-on-read`: Spark finds the rows: the native read's plan (planning.py, the filter
  pruning files), each planned file read by Spark's Parquet reader with the deletes that
  apply to it already applied (native_read.NativeScan.positions_frame), the filter applied,
  and each matching row's (data file, `_metadata.row_index`) collected on the driver. Then
  the driver writes, per data file holding a match:
  - on a v3 table one deletion vector (all of the commit's DVs in one Puffin file), holding
    every position deleted before (the file's DV or the position delete files naming it)
    and the new ones;
  - on a v2 table one position delete file naming that data file alone (sorted by
    position, with `referenced_data_file`, optional in v2, as file-scoped deletes have:
    a DV written after an upgrade to v3 then supersedes it);
  - a v1 table has no row-level deletes: UnsupportedFormatVersion, before any Spark job.
  They are committed by impl/table's row delta (producer.RowDelta): on v3 it removes, in
  the same snapshot, the DV or the single-file position deletes each new DV supersedes and
  refuses a DV that drops a position (superseding.py: one live DV per data file); every
  attempt validates, from the snapshot the Spark job read, that the data files are still
  live, that no delete was added for them meanwhile and (serializable) that no data
  matching the filter was added.
- `copy-on-write` (cow_delete.py): Spark counts each planned file's live and matching rows,
  then rewrites the survivors of the files holding a match (rows keeping their `_row_id` on
  v3) with Spark's Parquet writer; the files with a match go, as Table.delete decides. A
  table Spark's writer cannot write (native_write.fallback_reason) is deleted from by
  Table.delete in the driver process.

The files this writes are deleted again if the commit is refused before or at its swap
(Conflict, a validation); after Unknown nothing is deleted.
"""
from __future__ import annotations

import dataclasses
import io
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.impl.format import expressions as E
from icefloe.impl.format.manifest import DataFile, DataFileContent
from icefloe.impl.format.metadata import MAIN_BRANCH, UnsupportedFormatVersion
from icefloe.impl.format.parquet import data_file_metrics
from icefloe.impl.format.puffin import PuffinWriter
from icefloe.impl.format.types import FIELD_ID_KEY, LONG, STRING, NestedField, Schema
from icefloe.impl.io.base import StoreError
from icefloe.impl.io.locations import canonical_location, comparable_location
from icefloe.impl.outcomes import Conflict, IcefloeError, Outcome, require_committed
from icefloe.impl.table import producer as P
from icefloe.impl.table.deletes import DELETE_FILE_PATH_ID, DELETE_POS_ID, DeleteReader
from icefloe.impl.table.files import TreeReader
from icefloe.impl.table.row_deletes import DV_FORMAT_VERSION_MIN, dv_location
from icefloe.impl.table.scan import FileScanTask, plan_files, snapshot_schema
from icefloe.impl.table.table import COPY_ON_WRITE, DELETE_MODES
from icefloe.impl.spark import cow_delete
from icefloe.impl.spark.job import check_now, set_starting_snapshot
from icefloe.impl.spark.native_read import FILE, POS, plan as native_plan
from icefloe.impl.spark.options import SparkOptionError, open_table, table_ref
from icefloe.impl.spark.native_write import fallback_reason
from icefloe.impl.spark.transforms_sql import NotNative

POSITION_ICEBERG = Schema((NestedField(DELETE_FILE_PATH_ID, "file_path", STRING, True),
                           NestedField(DELETE_POS_ID, "pos", LONG, True)))
POSITION_ARROW = pa.schema([pa.field("file_path", pa.string(), False, {FIELD_ID_KEY: str(DELETE_FILE_PATH_ID)}),
                            pa.field("pos", pa.int64(), False, {FIELD_ID_KEY: str(DELETE_POS_ID)})])
MATCHED_ROWS_MAX = 200_000_000  # matching rows collected on the driver (16 bytes each with the path index)


class FoundRowDelta(P.RowDelta):
    """impl/table's row delta of delete files written for the rows a Spark job found, its
    validations starting at the snapshot that job read; each delete file in its data
    file's spec (RowDelta's one spec id would misplace files of an older spec)."""

    def __init__(self, delete_files: list[DataFile], spec_ids: list[int], referenced_paths, row_filter,
                 job_snapshot_id: int | None, ref: str, isolation: str):
        super().__init__(delete_files, (), referenced_paths, ref, row_filter=row_filter, isolation=isolation)
        self.job_snapshot_id = job_snapshot_id
        self.spec_ids = list(spec_ids)

    def plan(self, c):
        set_starting_snapshot(c, self.job_snapshot_id)
        changed = super().plan(c)
        for f, spec_id in zip(self.added_deletes, self.spec_ids):
            self.added_delete_specs[id(f)] = spec_id
        check_now(c, self.reqs)  # a conflict the table already shows: typed, before any manifest
        return changed


def row_level_target(path: str, options: dict | None, verb: str, branch: str | None, isolation_level: str | None,
                     mode: str | None):
    """What a row-level `verb` ("delete", "update") through Spark works on: (its options, the
    table ref, the open table, the branch, the isolation level, the mode), the mode from
    `mode`, else the option `<verb>-mode`, else the table's write.<verb>.mode, else
    copy-on-write (as Iceberg-Java). Refused by name: a metadata file, a bad isolation
    level or mode."""
    opts = dict(options or {})
    ref = table_ref(opts, path)
    if ref.read_only:
        raise SparkOptionError(f"{ref.metadata_file} is a metadata file: name a catalog table to {verb}")
    branch = branch or ref.get("branch", MAIN_BRANCH)
    isolation = isolation_level or ref.get("isolation-level", P.SERIALIZABLE)
    if isolation not in (P.SERIALIZABLE, P.SNAPSHOT):
        raise SparkOptionError(f"isolation-level must be {P.SERIALIZABLE!r} or {P.SNAPSHOT!r}, not {isolation!r}")
    table = open_table(ref)
    mode = mode or ref.get(f"{verb}-mode") or table.metadata.properties.get(f"write.{verb}.mode", COPY_ON_WRITE)
    if mode not in DELETE_MODES:
        raise SparkOptionError(f"{verb} mode must be one of {', '.join(DELETE_MODES)}, not {mode!r}")
    return opts, ref, table, branch, isolation, mode


def refuse_v1_merge_on_read(ref, metadata, verb: str) -> None:
    if metadata.format_version < 2:
        raise UnsupportedFormatVersion(f"merge-on-read {verb}s need format v2 (position deletes) or v3 "
                                       f"(deletion vectors); table {ref.identifier} is v1 ({verb} "
                                       f"copy-on-write, or upgrade it)")


def delete(spark, path: str, options: dict | None = None, row_filter="true", *, mode: str | None = None,
           branch: str | None = None, isolation_level: str | None = None, planning: str = "auto") -> Outcome:
    """Delete the rows of the table `path` names that match `row_filter` (see the module
    docstring); `mode` defaults to the option `delete-mode`, then the table's
    write.delete.mode, then copy-on-write, as Iceberg-Java. Returns the Committed outcome;
    CommitConflictError / CommitStateUnknownError / ValidationFailed as the writes raise."""
    opts, ref, table, branch, isolation, mode = row_level_target(path, options, "delete", branch, isolation_level,
                                                                 mode)
    metadata = table.metadata
    if mode == COPY_ON_WRITE:
        if fallback_reason(table, metadata.schema()) is None:
            opts.pop("branch", None)
            try:
                scan = native_plan(spark, path, opts, branch=branch, row_filter=row_filter, planning=planning)
                scan = dataclasses.replace(scan, schema=metadata.schema())  # the table's schema, as Table.delete
                return cow_delete.delete(table, scan, branch, isolation)
            except NotNative:  # raised while the frames are built, before any file is written
                pass
        # rows Spark cannot write or read natively: Table.delete in this process
        return require_committed(table.delete(row_filter, branch=branch, isolation=isolation, mode=COPY_ON_WRITE))
    refuse_v1_merge_on_read(ref, metadata, "delete")
    opts.pop("branch", None)
    scan = native_plan(spark, path, opts, branch=branch, row_filter=row_filter, planning=planning)
    found = _matched_positions(scan)
    snapshot = metadata.snapshot_by_id(scan.snapshot_id) if scan.snapshot_id is not None else None
    expr = scan.row_filter
    tasks = [t for t in plan_files(TreeReader(table.io), metadata, snapshot, expr,
                                   snapshot_schema(metadata, snapshot) if snapshot else None)
             if comparable_location(t.data_file.file_path) in found]
    if metadata.format_version >= DV_FORMAT_VERSION_MIN:
        written, files = _write_dvs(table, tasks, found)
    else:
        written, files = _write_position_deletes(table, tasks, found)
    operation = FoundRowDelta([f for f, _ in files], [s for _, s in files], [t.data_file.file_path for t in tasks],
                              None if isinstance(expr, E.AlwaysTrue) else expr, scan.snapshot_id, branch, isolation)
    return _commit(table, operation, written)


def _matched_positions(scan) -> dict[str, np.ndarray]:
    """comparable data file location -> the sorted row positions Spark found matching."""
    got = scan.positions_frame().toArrow()
    if got.num_rows > MATCHED_ROWS_MAX:
        raise SparkOptionError(f"{got.num_rows} rows match: more than MATCHED_ROWS_MAX ({MATCHED_ROWS_MAX}) "
                               "to collect on the driver; delete in smaller filters")
    if not got.num_rows:
        return {}
    files = got.column(FILE).combine_chunks().dictionary_encode()
    codes = files.indices.to_numpy(zero_copy_only=False)
    positions = got.column(POS).to_numpy()
    order = np.lexsort((positions, codes))
    codes, positions = codes[order], positions[order]
    bounds = np.flatnonzero(np.diff(codes)) + 1
    out = {}
    for code_run, pos_run in zip(np.split(codes, bounds), np.split(positions, bounds)):
        location = files.dictionary[int(code_run[0])].as_py()
        out[comparable_location(canonical_location(location))] = pos_run
    return out


def _earlier_positions(reader: DeleteReader, task: FileScanTask) -> set[int]:
    """What the file's DV, or the position delete files applying to it, already delete."""
    if task.deletion_vector is not None:
        return set(int(p) for p in reader.dv_positions(task.deletion_vector))
    key = comparable_location(task.data_file.file_path)
    return {p for d in task.position_deletes for k, ps in reader.positions(d).items()
            if comparable_location(k) == key for p in ps}


def _write_dvs(table, tasks: list[FileScanTask], found: dict) -> tuple[list[str], list[tuple[DataFile, int]]]:
    """One Puffin file with a DV per data file: its earlier positions and the new ones."""
    if not tasks:
        return [], []
    reader, writer = DeleteReader(table.io), PuffinWriter()
    spans = []
    for t in tasks:
        new = found[comparable_location(t.data_file.file_path)]
        held = _earlier_positions(reader, t).union(new.tolist())
        spans.append((t, writer.add_dv(t.data_file.file_path, held)))
    data = writer.finish()
    location = dv_location(table.location, uuid.uuid4().hex)
    table.io.put_if_absent(location, data)
    files = [(DataFile(location, "puffin", t.data_file.partition, cardinality, len(data),
                       DataFileContent.POSITION_DELETES, referenced_data_file=t.data_file.file_path,
                       content_offset=offset, content_size_in_bytes=length), t.spec_id)
             for t, (offset, length, cardinality) in spans]
    return [location], files


def _write_position_deletes(table, tasks: list[FileScanTask], found: dict):
    """A position delete file per data file (v2), holding the positions found for it."""
    written, files = [], []
    try:
        for t in tasks:
            positions = found[comparable_location(t.data_file.file_path)]
            rows = pa.table({"file_path": pa.array([t.data_file.file_path] * len(positions), pa.string()),
                             "pos": pa.array(positions, pa.int64())}, schema=POSITION_ARROW)
            out = io.BytesIO()
            pq.write_table(rows, out)
            raw = out.getvalue()
            location = f"{table.location.rstrip('/')}/data/{uuid.uuid4().hex}-deletes.parquet"
            table.io.put_if_absent(location, raw)
            written.append(location)
            metrics = data_file_metrics(raw, POSITION_ICEBERG, rows)
            metrics.pop("record_count", None)
            files.append((DataFile(location, "PARQUET", t.data_file.partition, len(positions), len(raw),
                                   content=DataFileContent.POSITION_DELETES,
                                   referenced_data_file=t.data_file.file_path, **metrics), t.spec_id))
    except BaseException:
        _remove(table, written)
        raise
    return written, files


def _remove(table, locations: list[str]) -> None:
    for location in locations:  # our own files, inside the table's data folder
        try:
            table.io.delete(location)
        except StoreError:
            pass  # left for orphan removal


def _commit(table, operation: FoundRowDelta, written: list[str]) -> Outcome:
    from icefloe.impl.table.commit import PLAN
    pending = table.begin(operation)
    try:
        pending.run()
    except IcefloeError:
        if pending.phase == PLAN:  # refused before anything was swapped: definite
            _remove(table, written)
        raise
    outcome = table.adopt(pending)
    if isinstance(outcome, Conflict):
        _remove(table, written)
    return require_committed(outcome)


__all__ = ["delete", "FoundRowDelta", "MATCHED_ROWS_MAX"]
