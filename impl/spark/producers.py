"""Snapshot producers for files that Spark executors already wrote (spec/PROTOCOL.md 7.3,
the per-operation table; they reuse impl/table/producer.py and change only where the
data files come from and which snapshot the operation started from).

- `AppendFiles`: a fast append of the job's files (no validations, 7.3 "append").
- `OverwriteFiles`: overwrite by filter: the files matching the filter at the job's
  starting snapshot are removed, the job's files added; serializable isolation also
  requires that no file matching the filter was added since the job started.
- `ReplacePartitions`: dynamic partition overwrite: the files of every partition the job
  wrote to are replaced (serializable: nothing may have been added there meanwhile).
- `RewriteDataFiles`: compaction: the planned files are replaced by the rewritten ones,
  with the starting snapshot's data sequence number; the files must still be live and no
  delete may have been added against them (apache/iceberg #10312).
"""
from __future__ import annotations

from dataclasses import dataclass

from icefloe.impl.format.manifest import DataFile, ManifestContent, ManifestEntryStatus
from icefloe.impl.format.manifest_reader import Projection
from icefloe.impl.format.metadata import MAIN_BRANCH
from icefloe.impl.table import producer as P
from icefloe.impl.table.validation import (
    FilesStillLive, NoConflictingData, NoNewDeletesForFiles, StartingSnapshotIsAncestor,
)
from icefloe.impl.table.files import LIVE, snapshots_between
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


@dataclass(frozen=True)
class NoNewDataInPartitions:
    """No snapshot in between added a data file to one of `partitions` of spec `spec_id`
    (dynamic partition overwrite, serializable isolation; Java: ReplacePartitions'
    validateNoConflictingData scoped to the replaced partitions)."""
    spec_id: int
    partitions: frozenset
    ref: str = MAIN_BRANCH

    def check(self, base, starting_snapshot_id, tree):
        between = snapshots_between(base, self.ref, starting_snapshot_id)
        if between is None:
            return f"starting snapshot {starting_snapshot_id} is no longer an ancestor of {self.ref!r}"
        for snap in between:
            for m in tree.manifests(snap):
                if (m.added_snapshot_id != snap.snapshot_id or m.content != ManifestContent.DATA
                        or m.partition_spec_id != self.spec_id):
                    continue
                for e in tree.entries(m, Projection.WITHOUT_COLUMN_STATS):
                    if (e.status == ManifestEntryStatus.ADDED and e.snapshot_id == snap.snapshot_id
                            and e.data_file.partition in self.partitions):
                        return (f"snapshot {snap.snapshot_id} added {e.data_file.file_path} to partition "
                                f"{e.data_file.partition!r}, which this job replaces")
        return None


class ReplacePartitions(P.FileChange):
    """Dynamic partition overwrite: the live data files of the default spec in every
    partition the job wrote to (as of the job's starting snapshot) are removed and the
    job's files added, in one snapshot. The removed files must still be live; serializable
    isolation also requires that nothing was added to those partitions meanwhile."""

    def __init__(self, files: list[DataFile], job_id: str, starting_snapshot_id: int | None,
                 ref: str = MAIN_BRANCH, isolation: str = P.SERIALIZABLE):
        super().__init__(ref, isolation)
        self.new_files, self.job_id = list(files), job_id
        self.job_snapshot_id = starting_snapshot_id

    def plan(self, c):
        set_starting_snapshot(c, self.job_snapshot_id)
        if not self.new_files:
            return False
        spec_id = c.base.default_spec_id
        partitions = frozenset(f.partition for f in self.new_files)
        for m in c.tree.manifests(c.starting_snapshot):
            if m.content != ManifestContent.DATA or m.partition_spec_id != spec_id:
                continue
            for e in c.tree.entries(m, Projection.WITHOUT_COLUMN_STATS):
                if e.status in LIVE and e.data_file.partition in partitions:
                    self.removed[e.data_file.file_path] = e.data_file
        self.added = list(self.new_files)
        self.operation = "overwrite" if self.removed else "append"
        self.reqs = [StartingSnapshotIsAncestor(self.ref), FilesStillLive(frozenset(self.removed), self.ref)]
        if self.isolation == P.SERIALIZABLE:
            self.reqs.append(NoNewDataInPartitions(spec_id, partitions, self.ref))
        check_now(c, self.reqs)
        return True

    def summary(self, c):
        return {**super().summary(c), SUMMARY_JOB_ID: self.job_id, "replace-partitions": "true"}
