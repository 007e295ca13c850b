"""Copy-on-write deletes through Spark (spec/PROTOCOL.md 7.3 "delete by filter,
row-level"; docs/spark.md "Deleting rows"): the Spark counterpart of impl/table's
Table.delete (producer.DeleteWhere), with the rows moving through Spark's executors, not
the driver.

1. icefloe plans the branch head with the filter (native_read.plan: the files the filter
   may match); a first Spark job counts, per planned data file, its live rows and those
   the filter matches, deletes applied (NativeScan.match_counts; no row reaches the driver).
2. As DeleteWhere decides: a file with a match, or with no live row left, goes; a file
   with a match and survivors is rewritten: a second Spark job writes the survivors of
   those files (on v3 with their `_row_id` and `_last_updated_sequence_number`
   materialised, lineage.py) with Spark's Parquet writer under a job prefix, as
   native_update's copy-on-write does (native_write.write_frame).
3. One snapshot: `overwrite` when survivors were rewritten, else `delete` (as Java names
   them); its validations start at the snapshot the first job read: the removed files are
   still live, (serializable) no data matching the filter was added, and no delete was
   added for the rewritten files (a delete of a file removed whole does not matter).

A refused commit removes the job's files; after Unknown nothing is removed.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.impl.format import expressions as E
from icefloe.impl.format.manifest import DataFile
from icefloe.impl.io.locations import comparable_location
from icefloe.impl.outcomes import Committed, Outcome, require_committed
from icefloe.impl.table import producer as P
from icefloe.impl.table.files import TreeReader
from icefloe.impl.table.scan import (
    LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, lineage_named, lineage_schema, plan_files, snapshot_schema,
)
from icefloe.impl.table.validation import (
    FilesStillLive, NoConflictingData, NoNewDeletesForFiles, StartingSnapshotIsAncestor,
)
from icefloe.impl.spark import lineage as L
from icefloe.impl.spark import sql_filters as SF
from icefloe.impl.spark.job import abort_job, check_now, commit_job, set_starting_snapshot
from icefloe.impl.spark.native_read import FILE, LIVE, MATCHED
from icefloe.impl.spark.native_write import write_frame
from icefloe.impl.spark.options import SparkOptionError
from icefloe.impl.spark.producers import SUMMARY_JOB_ID


class RewriteForDelete(P.FileChange):
    """The files a copy-on-write delete removes (whole, or rewritten: `added` holds their
    survivors), planned at the job's snapshot, with DeleteWhere's validations."""

    def __init__(self, removed: list[DataFile], rewritten: list[DataFile], added: list[DataFile], row_filter,
                 job_snapshot_id: int | None, ref: str, isolation: str, job_id: str | None):
        super().__init__(ref, isolation)
        self.planned_removed, self.rewritten, self.new_files = list(removed), list(rewritten), list(added)
        self.row_filter, self.job_snapshot_id, self.job_id = row_filter, job_snapshot_id, job_id
        self.operation = "overwrite" if rewritten else "delete"  # Java names a copy-on-write delete an overwrite

    def plan(self, c):
        set_starting_snapshot(c, self.job_snapshot_id)
        self.removed = {f.file_path: f for f in self.planned_removed}
        self.added = list(self.new_files)
        self.reqs = [StartingSnapshotIsAncestor(self.ref), FilesStillLive(frozenset(self.removed), self.ref)]
        if self.isolation == P.SERIALIZABLE:
            self.reqs.append(NoConflictingData(self.row_filter, self.ref))
        if self.rewritten:  # rows copied forward must not escape a delete committed meanwhile
            self.reqs.append(NoNewDeletesForFiles(tuple(self.rewritten), self.ref))
        check_now(c, self.reqs)  # a conflict the table already shows: typed, before any manifest
        return bool(self.removed)

    def summary(self, c):
        out = super().summary(c)
        return {**out, SUMMARY_JOB_ID: self.job_id} if self.job_id else out


def _counts(scan) -> dict[str, tuple[int, int]]:
    """comparable data file location -> (live rows, matching rows), for the planned files
    that hold a live row (Spark job 1)."""
    if not scan.plan.num_rows:
        return {}
    got = scan.match_counts().toArrow()
    return {comparable_location(f): (int(live), int(matched))
            for f, live, matched in zip(got.column(FILE).to_pylist(), got.column(LIVE).to_pylist(),
                                        got.column(MATCHED).to_pylist())}


def _survivors(scan, snapshot, schema, lineage: bool):
    """The live rows of `scan`'s files the filter does not match (a null counts as not
    matching), in the table's columns, then on v3 their lineage as read."""
    from pyspark.sql import functions as F
    expr = scan.row_filter
    every = dataclasses.replace(scan, row_filter=E.AlwaysTrue())
    df = L.with_lineage(every, snapshot) if lineage else every.to_dataframe()
    try:
        matched = SF.to_column(E.bind(expr, schema))
    except SF.NotConvertible as e:
        raise SparkOptionError(f"row filter: {e}") from None
    out = [F.col(f"`{f.name}`") for f in schema.fields]
    if lineage:
        out += [F.col(ROW_ID), F.col(LAST_UPDATED_SEQUENCE_NUMBER)]
    return df.filter(~F.coalesce(matched, F.lit(False))).select(*out)


def delete(table, scan, branch: str, isolation: str, before_swap: Callable[[], None] | None = None) -> Outcome:
    """Delete the rows `scan` (native_read.plan with the filter, at the branch head) matches,
    copy-on-write (the module docstring). Returns the Committed outcome (snapshot_id None
    when nothing matched); raises as Table.delete does."""
    metadata = table.metadata
    if scan.snapshot_id is not None and metadata.snapshot_by_id(scan.snapshot_id) is None:
        table.refresh()  # a commit landed between loading and planning
        metadata = table.metadata
    snapshot = metadata.snapshot_by_id(scan.snapshot_id) if scan.snapshot_id is not None else None
    schema = scan.schema
    expr = scan.row_filter
    # every planned file goes when the filter is true: no Spark job, no row read
    counts = {} if isinstance(expr, E.AlwaysTrue) else _counts(scan)
    gone = {}  # comparable location -> (live, matched) of the files that go; as DeleteWhere: a file
    for path in scan.plan.column("file_path").to_pylist():  # with a match, or no live row left in the range
        live, matched = counts.get(comparable_location(path), (0, 0))
        if matched or not live:
            gone[comparable_location(path)] = (live, matched)
    if not gone:  # decided before the manifests are read again for the files' entries
        return require_committed(Committed(None, 0, table.metadata_location))  # nothing to do (5.4)
    removed = [t.data_file for t in plan_files(TreeReader(table.io), metadata, snapshot, expr,
                                               snapshot_schema(metadata, snapshot) if snapshot else None)
               if comparable_location(t.data_file.file_path) in gone]
    found = {comparable_location(f.file_path) for f in removed}
    assert all(k in found for k, (_, matched) in gone.items() if matched), "a file with a match is not planned"
    rewritten = []  # the files with survivors to copy forward
    for f in removed:
        live, matched = gone[comparable_location(f.file_path)]
        if live > matched:
            rewritten.append(f)
    filter_ = None if isinstance(expr, E.AlwaysTrue) else expr
    if not rewritten:
        pending = table.begin(RewriteForDelete(removed, [], [], filter_, scan.snapshot_id, branch, isolation, None))
        pending.run()  # nothing written before it: nothing to remove whatever it ends as
        return require_committed(table.adopt(pending))
    lineage = metadata.format_version >= 3
    if lineage and lineage_named(schema):
        P.check_lineage_names(schema)  # raises: survivors would move without their lineage
    paths = pa.array([f.file_path for f in rewritten], pa.string())
    touched = dataclasses.replace(scan, plan=scan.plan.filter(pc.is_in(scan.plan.column("file_path"),
                                                                       value_set=paths)))
    frame = _survivors(touched, snapshot, schema, lineage)
    write_schema = lineage_schema(schema) if lineage else schema
    job, files, durable, watch = write_frame(frame, table, write_schema, metadata.spec())  # Spark job 2
    try:
        operation = RewriteForDelete(removed, rewritten, files, filter_, scan.snapshot_id, branch, isolation,
                                     job.job_id)
        result = commit_job(table, job, operation, operation.operation, files, [f.file_path for f in removed],
                            starting_snapshot_id=scan.snapshot_id, before_swap=before_swap, fence=False,
                            ready=durable.result)
    except BaseException:
        durable.exception()  # the fsyncs of Spark's files are over before any of them goes
        watch.settle()
        abort_job(job)  # deletes nothing once `started` was put
        raise
    return require_committed(result.outcome)


__all__ = ["delete", "RewriteForDelete"]
