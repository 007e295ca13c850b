"""Validations (spec/PROTOCOL.md 7 "Retry validation", 7.2 "Where validations look",
7.3 the per-operation table; model: `iceberg.validate`).

Each validation is a small object whose `check(base, starting_snapshot_id, tree)` returns
None when it holds on the refreshed base, or a sentence saying what it found. Checks
that look at history look at *every* snapshot between the starting snapshot and the head
of the ref in the base (`files.snapshots_between`), never at the head alone: a file
deleted and re-added, or a conflicting file added and then compacted away, is still seen.
A failed validation is final (7.5).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from icefloe.impl.format import expressions as E
from icefloe.impl.format import evaluators as EV
from icefloe.impl.format.manifest import DataFile, DataFileContent
from icefloe.impl.format.metadata import MAIN_BRANCH, TableMetadata
from icefloe.impl.io.locations import comparable_location
from icefloe.impl.table.deletes import may_name_path
from icefloe.impl.table.files import TreeReader, snapshots_between



class Validation(Protocol):
    def check(self, base: TableMetadata, starting_snapshot_id: int | None,
              tree: TreeReader) -> str | None: ...


def _between(base: TableMetadata, ref: str, start: int | None):
    between = snapshots_between(base, ref, start)
    if between is None:
        return None, f"starting snapshot {start} is no longer an ancestor of {ref!r}"
    return between, None


@dataclass(frozen=True)
class AssertRefSnapshotId:
    """The ref still points where the operation read it (None: the ref must not exist)."""
    ref: str
    snapshot_id: int | None

    def check(self, base, starting_snapshot_id, tree):
        current = base.refs.get(self.ref)
        found = None if current is None else current.snapshot_id
        if found != self.snapshot_id:
            return f"ref {self.ref!r} is at {found}, expected {self.snapshot_id}"
        return None


@dataclass(frozen=True)
class SnapshotRetained:
    """A rollback / set-ref target must still be in the base (11.5)."""
    snapshot_id: int

    def check(self, base, starting_snapshot_id, tree):
        if base.snapshot_by_id(self.snapshot_id) is None:
            return f"snapshot {self.snapshot_id} is no longer retained"
        return None


@dataclass(frozen=True)
class StartingSnapshotIsAncestor:
    ref: str = MAIN_BRANCH

    def check(self, base, starting_snapshot_id, tree):
        return _between(base, self.ref, starting_snapshot_id)[1]


@dataclass(frozen=True)
class FilesStillLive:
    """No snapshot in between removed a named file (Java: validateFilesExist /
    validateNoConflictingDeletes)."""
    paths: frozenset[str]
    ref: str = MAIN_BRANCH

    def check(self, base, starting_snapshot_id, tree):
        between, problem = _between(base, self.ref, starting_snapshot_id)
        if problem:
            return problem
        wanted = {comparable_location(p) for p in self.paths}
        for snap in between:
            for e in tree.changes(snap).removed_data:
                if comparable_location(e.data_file.file_path) in wanted:
                    return f"snapshot {snap.snapshot_id} removed {e.data_file.file_path}"
        return None


@dataclass(frozen=True)
class NoConflictingData:
    """No snapshot in between added a data file that may hold rows matching `row_filter`
    (Java: validateNoConflictingData). Serializable isolation only."""
    row_filter: E.Expression
    ref: str = MAIN_BRANCH

    def check(self, base, starting_snapshot_id, tree):
        between, problem = _between(base, self.ref, starting_snapshot_id)
        if problem:
            return problem
        schema = base.schema()
        metrics = EV.MetricsEvaluator(self.row_filter, schema)
        by_spec: dict[int, EV.PartitionEvaluator | None] = {}  # one evaluator per partition spec
        for snap in between:
            for e in tree.changes(snap).added_data:
                spec_id = _spec_id_of(tree, snap, e)
                if spec_id not in by_spec:
                    spec = base.spec_by_id(spec_id)
                    by_spec[spec_id] = None if spec is None else EV.PartitionEvaluator(self.row_filter, spec, schema)
                partitions = by_spec[spec_id]
                if partitions is not None and not partitions.might_match(e.data_file.partition):
                    continue
                if metrics.might_match(e.data_file):
                    return f"snapshot {snap.snapshot_id} added {e.data_file.file_path}, which may match the filter"
        return None


@dataclass(frozen=True)
class NoNewDeletesForFiles:
    """No snapshot in between added a delete file that may apply to one of the named
    data files (a compaction must not drop deletes committed after it read; a row delta
    must not delete rows another commit deleted or rewrote meanwhile; 7.3, apache/
    iceberg #10312). Conservative: an equality delete in the same partition, or a
    position delete whose file_path bounds may name the file. `ignore_equality`: a
    compaction that keeps its starting snapshot's data sequence number needs no check of
    equality deletes, which keep applying to what it writes (Java's
    validateNoNewDeletesForDataFiles does the same)."""
    files: tuple[DataFile, ...]
    ref: str = MAIN_BRANCH
    ignore_equality: bool = False

    def check(self, base, starting_snapshot_id, tree):
        between, problem = _between(base, self.ref, starting_snapshot_id)
        if problem:
            return problem
        for snap in between:
            for e in tree.changes(snap).added_deletes:
                if self.ignore_equality and e.data_file.content == DataFileContent.EQUALITY_DELETES:
                    continue
                for f in self.files:
                    if delete_may_apply(e.data_file, f):
                        return f"snapshot {snap.snapshot_id} added delete file {e.data_file.file_path} for {f.file_path}"
        return None


def delete_may_apply(delete: DataFile, data: DataFile) -> bool:
    if delete.partition and data.partition and delete.partition != data.partition:
        return False
    if delete.content == DataFileContent.POSITION_DELETES:
        return may_name_path(delete, data.file_path)
    return True


def _spec_id_of(tree: TreeReader, snap, entry) -> int | None:
    for m in tree.manifests(snap):
        if m.added_snapshot_id == snap.snapshot_id and entry in tree.entries(m):
            return m.partition_spec_id
    return None


def check_all(validations, base: TableMetadata, starting_snapshot_id: int | None,
              tree: TreeReader) -> str | None:
    """The first failed validation's finding, or None when all hold."""
    for r in validations:
        found = r.check(base, starting_snapshot_id, tree)
        if found is not None:
            return f"{type(r).__name__}: {found}"
    return None
