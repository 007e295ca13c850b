"""Row-level updates through Spark: `UPDATE t SET col = expr, ... WHERE filter` (Iceberg
spec "Row-level Deletes", "Deletion Vectors", "Row Lineage"; spec/PROTOCOL.md 7.3
"row_update"; docs/spark.md "Updating rows"). The Spark counterpart of impl/table's
Table.update (row_updates.py), with the row data moving through Spark only.

    from icefloe.impl.spark import update
    update(spark, "cat.db.t", opts, set={"status": "'done'", "n": "n + 1"}, row_filter="id < 10")
    update(spark, "cat.db.t", opts, set={"v": 2.5}, row_filter="cat = 'a'", mode="merge-on-read")

`set`: column -> a Spark SQL expression over the row's columns (a `str`), a Spark Column,
or a Python literal (None, numbers, booleans, dates...). Each value is cast to its
column's type where Spark's cast is a safe widening (an int literal into a long or a
double column); anything else is SchemaMismatch naming the column, a null for a required
column fails the job. Refused by name before any Spark job, nothing committed: an unknown
or nested column, a row lineage column, a non-primitive column (InvalidArgument), a bad
expression (SparkOptionError), merge-on-read on a v1 table (UnsupportedFormatVersion).
A column of the table's own named `_row_id` or `_last_updated_sequence_number` is that
column (the spec reserves the field ids, not the names): set and kept as any other on
v1/v2; on v3 an update that matches rows is SchemaMismatch naming it before any rows are
written (producer.check_lineage_names: the moved rows' lineage would take its name), as
Table.update refuses it.
A partition source column may be set: the updated rows are written in their new
partitions, as the table's writers write them.

The mode is `mode`, else the option `update-mode`, else the table's `write.update.mode`,
else copy-on-write (as Table.update and Iceberg-Java).

1. icefloe plans the branch head with the filter (native_read.plan); a first Spark job
   collects each matching live row's (data file, row index) to the driver
   (native_delete._matched_positions: positions, not rows).
2. A second Spark job reads the rows to write, with their lineage on v3 (lineage.py:
   `_row_id` materialised, inherited ones filled from first_row_id + row index), applies
   `set`, and writes them with Spark's Parquet writer under the job prefix (as
   native_write does: field ids, partition columns, footers, fsyncs; job.py's rules):
   - merge-on-read: the matching rows only, updated, `_row_id` kept and
     `_last_updated_sequence_number` null (it reads as the update's sequence number);
     then the driver writes one DV per touched data file on v3 (holding its earlier DV or
     position-delete positions; the row delta removes what it supersedes in the same
     snapshot) or one position delete file per touched data file on v2
     (native_delete._write_dvs / _write_position_deletes);
   - copy-on-write: every live row of the touched files, survivors as they were (their
     `_row_id` and `_last_updated_sequence_number` materialised on v3), matching rows
     updated as above; the touched files are removed (with their DVs).
3. One snapshot (operation overwrite) through the commit loop (job.commit_job), its
   starting snapshot the one the jobs read: the touched files must still be live, no
   delete may have been added for them meanwhile and, serializable, no data matching the
   filter added (UpdateDelta is native_delete's FoundRowDelta with data files;
   RewriteForUpdate is DeleteWhere's validations). next-row-id advances by the added
   files' rows (commit.py).

A refused commit (Conflict, a failed validation) removes the job's files and the delete
files written for it; after Unknown nothing is removed.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.impl.format import expressions as E
from icefloe.impl.format import types as T
from icefloe.impl.format.manifest import DataFile
from icefloe.impl.io.locations import comparable_location
from icefloe.impl.outcomes import Committed, Conflict, InvalidArgument, Outcome, require_committed
from icefloe.impl.table import producer as P
from icefloe.impl.table.files import TreeReader
from icefloe.impl.table.row_deletes import DV_FORMAT_VERSION_MIN
from icefloe.impl.table.row_updates import assigned_columns
from icefloe.impl.table.scan import (
    LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, lineage_schema, plan_files, snapshot_schema,
)
from icefloe.impl.table.table import COPY_ON_WRITE, MERGE_ON_READ
from icefloe.impl.spark import lineage as L
from icefloe.impl.spark.cow_delete import RewriteForDelete
from icefloe.impl.spark import native_delete as ND
from icefloe.impl.spark import sql_filters as SF
from icefloe.impl.spark.job import abort_job, commit_job
from icefloe.impl.spark.native_read import plan as native_plan
from icefloe.impl.spark.native_write import _widens, fallback_reason, spark_type, write_frame
from icefloe.impl.spark.options import SparkOptionError
from icefloe.impl.spark.producers import SUMMARY_JOB_ID

MATCHED = "__icefloe_matched"


class UpdateDelta(ND.FoundRowDelta):
    """Merge-on-read update: the delete files (DVs on v3, position deletes on v2) for the
    rows' old positions and the data files of the updated rows, in one snapshot, validated
    from the snapshot the Spark jobs read (FoundRowDelta's validations)."""

    def __init__(self, delete_files: list[DataFile], spec_ids: list[int], referenced_paths,
                 data_files: list[DataFile], row_filter, job_snapshot_id: int | None, ref: str, isolation: str,
                 job_id: str):
        super().__init__(delete_files, spec_ids, referenced_paths, row_filter, job_snapshot_id, ref, isolation)
        self.added, self.job_id = list(data_files), job_id
        self.operation = "overwrite"

    def summary(self, c):
        return {**super().summary(c), SUMMARY_JOB_ID: self.job_id}


class RewriteForUpdate(RewriteForDelete):
    """Copy-on-write update: the touched data files (planned at the job's snapshot) are
    replaced by the files Spark wrote, with DeleteWhere's validations (every touched file
    is rewritten: its rows are copied forward, so no delete may have been added for it)."""

    def __init__(self, removed: list[DataFile], added: list[DataFile], row_filter, job_snapshot_id: int | None,
                 ref: str, isolation: str, job_id: str):
        super().__init__(removed, removed, added, row_filter, job_snapshot_id, ref, isolation, job_id)
        self.operation = "overwrite"


def check_set(schema: T.Schema, assignments: Mapping[str, Any]) -> None:
    """InvalidArgument naming the column, as row_updates.check_assignments names it (the
    values are checked by Spark's analysis, `_assigned`). A name the schema holds as a
    column of its own (a v1/v2 table's `_row_id`, say) is that column, not lineage."""
    assigned_columns(schema, assignments)


def _castable(src, dst) -> bool:
    """Spark casts that change no value: _widens, a null, an integer into a floating or
    decimal column."""
    from pyspark.sql import types as S
    if _widens(src, dst) or isinstance(src, S.NullType):
        return True
    ints = (S.ByteType, S.ShortType, S.IntegerType, S.LongType)
    return isinstance(src, ints) and isinstance(dst, (S.FloatType, S.DoubleType, S.DecimalType))


def _assigned(spark, schema: T.Schema, read_schema, assignments: Mapping[str, Any]) -> dict:
    """name -> Spark Column of the column's type. Analysed over an empty frame of the table's
    columns (no Spark job): a bad expression or a type that does not fit is refused here."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F
    from icefloe.impl.table.append_schema import SchemaMismatch
    columns = {}
    for name, value in assignments.items():
        if isinstance(value, Column):
            columns[name] = value
        elif isinstance(value, str):
            columns[name] = F.expr(value)
        else:
            columns[name] = F.lit(value)
    probe = spark.createDataFrame([], read_schema)
    try:
        found = probe.select(*[c.alias(f"__set{k}") for k, c in enumerate(columns.values())]).schema.fields
    except Exception as e:  # Spark's AnalysisException / ParseException: the user's expression
        raise SparkOptionError(f"set {sorted(columns)}: {type(e).__name__}: {str(e).splitlines()[0]}") from None
    top = assigned_columns(schema, assignments)  # (checked already: check_set)
    out = {}
    for (name, column), got in zip(columns.items(), found):
        f = top[name]
        target = spark_type(f.type)
        if f.required and got.dataType.simpleString() == "void":
            raise InvalidArgument(f"{name} is required; it cannot be set to null")
        if not _castable(got.dataType, target):
            raise SchemaMismatch(f"set {name}: {got.dataType.simpleString()} does not fit {target.simpleString()} "
                                 f"({f.type})")
        out[name] = column.cast(target)
    return out


def _rows_to_write(scan, snapshot, schema: T.Schema, assigned: dict, lineage: bool, all_rows: bool):
    """The frame Spark writes: the scan's rows (lineage filled on v3), `assigned` applied to
    the rows the filter matches; with `all_rows` (copy-on-write) every live row of the
    scan's files, survivors unchanged."""
    from pyspark.sql import functions as F
    expr = scan.row_filter
    if all_rows:
        scan = dataclasses.replace(scan, row_filter=E.AlwaysTrue())
    df = L.with_lineage(scan, snapshot) if lineage else scan.to_dataframe()
    if all_rows:
        try:
            matched = SF.to_column(E.bind(expr, schema)) if not isinstance(expr, E.AlwaysTrue) else F.lit(True)
        except SF.NotConvertible as e:
            raise SparkOptionError(f"row filter: {e}") from None
        df = df.withColumn(MATCHED, F.coalesce(matched, F.lit(False)))
        is_matched = F.col(MATCHED)
    else:
        is_matched = F.lit(True)
    out = []
    for f in schema.fields:
        column = F.col(f"`{f.name}`")
        if f.name in assigned:
            column = F.when(is_matched, assigned[f.name]).otherwise(column) if all_rows else assigned[f.name]
        out.append(column.alias(f.name))
    if lineage:
        null = F.lit(None).cast("long")
        out += [F.col(ROW_ID), (F.when(is_matched, null).otherwise(F.col(LAST_UPDATED_SEQUENCE_NUMBER))
                                if all_rows else null).alias(LAST_UPDATED_SEQUENCE_NUMBER)]
    return df.select(*out)


def update(spark, path: str, options: dict | None = None, *, set: Mapping[str, Any], row_filter="true",
           mode: str | None = None, branch: str | None = None, isolation_level: str | None = None,
           planning: str = "auto", before_swap: Callable[[], None] | None = None) -> Outcome:
    """Set columns of the rows of `path` matching `row_filter` (see the module docstring).
    Returns the Committed outcome (snapshot_id None when no row matched);
    CommitConflictError / CommitStateUnknownError as the writes raise. `before_swap`
    (injected scheduling) is called when the commit's first attempt is about to swap."""
    opts, ref, table, branch, isolation, mode = ND.row_level_target(path, options, "update", branch,
                                                                    isolation_level, mode)
    metadata = table.metadata
    schema = metadata.schema()
    check_set(schema, set)
    if mode == MERGE_ON_READ:
        ND.refuse_v1_merge_on_read(ref, metadata, "update")
    reason = fallback_reason(table, schema)
    if reason is not None:
        raise SparkOptionError(f"an update through Spark needs the native path: {reason}")
    opts.pop("branch", None)
    scan = native_plan(spark, path, opts, branch=branch, row_filter=row_filter, planning=planning)
    scan = dataclasses.replace(scan, schema=schema)  # the table's schema, as Table.update writes in
    assigned = _assigned(spark, schema, scan.read_schema(), set)
    if scan.snapshot_id is not None and metadata.snapshot_by_id(scan.snapshot_id) is None:
        table.refresh()  # a commit landed between loading and planning
        metadata = table.metadata
    snapshot = metadata.snapshot_by_id(scan.snapshot_id) if scan.snapshot_id is not None else None
    found = ND._matched_positions(scan)  # Spark job 1: (file, row index) of each matching row
    if not found:
        return require_committed(Committed(None, 0, table.metadata_location))  # nothing to do (5.4)
    lineage = metadata.format_version >= 3
    if lineage:  # rows move with their lineage: not beside a column of its name (as Table.update)
        P.check_lineage_names(schema)
    expr = scan.row_filter
    tasks = [t for t in plan_files(TreeReader(table.io), metadata, snapshot, expr, snapshot_schema(metadata, snapshot))
             if comparable_location(t.data_file.file_path) in found]
    touched_paths = pa.array([t.data_file.file_path for t in tasks], pa.string())
    keep = pc.is_in(scan.plan.column("file_path"), value_set=touched_paths)
    touched = dataclasses.replace(scan, plan=scan.plan.filter(keep))
    write_schema = lineage_schema(schema) if lineage else schema
    copy_on_write = mode == COPY_ON_WRITE
    frame = _rows_to_write(touched, snapshot, schema, assigned, lineage, all_rows=copy_on_write)
    job, files, durable, watch = write_frame(frame, table, write_schema, metadata.spec())  # Spark job 2
    written: list[str] = []
    try:
        if copy_on_write:
            operation = RewriteForUpdate([t.data_file for t in tasks], files, expr, scan.snapshot_id, branch,
                                         isolation, job.job_id)
        else:
            if metadata.format_version >= DV_FORMAT_VERSION_MIN:
                written, deletes = ND._write_dvs(table, tasks, found)
            else:
                written, deletes = ND._write_position_deletes(table, tasks, found)
            operation = UpdateDelta([f for f, _ in deletes], [s for _, s in deletes],
                                    [t.data_file.file_path for t in tasks], files, expr,
                                    scan.snapshot_id, branch, isolation, job.job_id)
        result = commit_job(table, job, operation, "overwrite", files, [t.data_file.file_path for t in tasks],
                            starting_snapshot_id=scan.snapshot_id, before_swap=before_swap, fence=False,
                            ready=durable.result)
    except BaseException:
        durable.exception()  # the fsyncs of Spark's files are over before any of them goes
        watch.settle()
        if job.read_marker("started") is None:  # nothing was swapped: our delete files go too
            ND._remove(table, written)
        abort_job(job)  # deletes nothing once `started` was put
        raise
    if isinstance(result.outcome, Conflict):
        ND._remove(table, written)
    return require_committed(result.outcome)


__all__ = ["update", "UpdateDelta", "RewriteForUpdate", "check_set"]
