"""Snapshot producers for files that Spark executors already wrote (spec/PROTOCOL.md 7.3,
the per-operation table; they reuse impl/table/producer.py and change only where the
data files come from and which snapshot the operation started from).

- `AppendFiles`: a fast append of the job's files (no assumptions, 7.3 "append").
- `OverwriteFiles`: overwrite by filter: the files matching the filter at the job's
  starting snapshot are removed, the job's files added; serializable isolation also
  requires that no file matching the filter was added since the job started.
- `RewriteDataFiles`: compaction: the planned files are replaced by the rewritten ones,
  with the starting snapshot's data sequence number; the files must still be live and no
  delete may have been added against them (apache/iceberg #10312).
"""
from __future__ import annotations

from icefloe.impl.format.manifest import DataFile
from icefloe.impl.format.metadata import MAIN_BRANCH
from icefloe.impl.table import producer as P
from icefloe.impl.table.requirements import (
    FilesStillLive, NoConflictingData, NoNewDeletesForFiles, StartingSnapshotIsAncestor,
)
from icefloe.impl.spark.job import check_now, set_starting_snapshot

SUMMARY_JOB_ID = "icefloe.spark.job-id"


class AppendFiles(P.FastAppend):
    def __init__(self, files: list[DataFile], job_id: str, ref: str = MAIN_BRANCH):
        super().__init__(None, ref)
        self.new_files, self.job_id = list(files), job_id

    def plan(self, c):
        return bool(self.new_files)

    def write_data(self, c):
        self.files = list(self.new_files)  # written by the executors

    def summary(self, c):
        return {**super().summary(c), SUMMARY_JOB_ID: self.job_id}


class OverwriteFiles(P.DeleteWhere):
    def __init__(self, row_filter, files: list[DataFile], job_id: str, starting_snapshot_id: int | None,
                 ref: str = MAIN_BRANCH, isolation: str = P.SERIALIZABLE):
        super().__init__(row_filter, None, ref, isolation)
        self.new_files, self.job_id = list(files), job_id
        self.job_snapshot_id = starting_snapshot_id

    def plan(self, c):
        set_starting_snapshot(c, self.job_snapshot_id)
        super().plan(c)  # fills removed (and survivors of partly matching files)
        self.added = list(self.new_files)
        self.operation = "overwrite" if self.removed else "append"
        self.reqs = [StartingSnapshotIsAncestor(self.ref), FilesStillLive(frozenset(self.removed), self.ref)]
        if self.isolation == P.SERIALIZABLE:
            self.reqs.append(NoConflictingData(self.row_filter, self.ref))
        check_now(c, self.reqs)
        return bool(self.removed or self.added or self.rows_to_add)

    def summary(self, c):
        return {**super().summary(c), SUMMARY_JOB_ID: self.job_id}


class RewriteDataFiles(P.FileChange):
    operation = "replace"

    def __init__(self, removed: list[DataFile], added: list[DataFile], job_id: str,
                 starting_snapshot_id: int, ref: str = MAIN_BRANCH):
        super().__init__(ref)
        self.planned_removed, self.new_files, self.job_id = list(removed), list(added), job_id
        self.job_snapshot_id = starting_snapshot_id

    def plan(self, c):
        set_starting_snapshot(c, self.job_snapshot_id)
        if not self.planned_removed:
            return False
        self.removed = {f.file_path: f for f in self.planned_removed}
        self.added = list(self.new_files)
        self.data_sequence_number = c.starting_snapshot.sequence_number
        self.reqs = [StartingSnapshotIsAncestor(self.ref), FilesStillLive(frozenset(self.removed), self.ref),
                     NoNewDeletesForFiles(tuple(self.planned_removed), self.ref)]
        check_now(c, self.reqs)
        return True

    def summary(self, c):
        return {**super().summary(c), SUMMARY_JOB_ID: self.job_id}
