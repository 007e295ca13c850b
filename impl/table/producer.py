"""Snapshot-producing operations (spec/PROTOCOL.md 5.2 "What an attempt reuses", 7.3 the
per-operation table; model: APPEND, OVERWRITE, DELETE, REWRITE).

- `FastAppend`: data files and one manifest written once; each retry writes only a new
  manifest list and metadata file (the model asserts an append never writes a second
  manifest);
- `FileChange`: overwrite / delete / rewrite / row delta. The files to remove (D) and
  the rows to add (A) are planned once at the starting snapshot; each attempt marks D
  deleted in the manifests of the base's head. A manifest already filtered by an earlier
  attempt is reused; only manifests that appeared since are filtered and rewritten. The
  resulting list is then merged as the table's commit.manifest-merge.* properties say
  (merge.py; Iceberg-Java's merging producers), a merged bin reused as long as it stands.
"""
from __future__ import annotations

from dataclasses import replace

import pyarrow as pa

from icefloe.impl.format import expressions as E
from icefloe.impl.format.expression_parser import parse as parse_filter
from icefloe.impl.format import name_mapping as NM
from icefloe.impl.format.manifest import (
    DataFile, DataFileContent, ManifestContent, ManifestEntry, ManifestEntryStatus, ManifestFile,
    manifest_file_of,
)
from icefloe.impl.format.manifest_writer import write_manifest
from icefloe.impl.format.metadata import MAIN_BRANCH, Snapshot, UnsupportedFormatVersion
from icefloe.impl.format.parquet import write_data_file
from icefloe.impl.format.partitioning import data_files_max, split_by_partition
from icefloe.impl.table import updates as U
from icefloe.impl.table.commit import LIST, MANIFESTS, PendingCommit
from icefloe.impl.table.deletes import DeleteReader, not_true
from icefloe.impl.io.locations import comparable_location
from icefloe.impl.table.env import data_file_location, manifest_location, partition_path_of
from icefloe.impl.table.files import LIVE
from icefloe.impl.table.merge import MergePolicy, merge_manifests, merged_entries
from icefloe.impl.table.validation import (
    FilesStillLive, NoConflictingData, NoNewDeletesForFiles, StartingSnapshotIsAncestor,
)
from icefloe.impl.format.types import FIELD_ID_KEY
from icefloe.impl.table.append_schema import SchemaMismatch
from icefloe.impl.table.scan import (
    ROW_ID_FIELD_ID, LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID, lineage_named, lineage_schema, plan_files, read_task,
)
from icefloe.impl.table.superseding import delete_key, supersede

from icefloe.impl.outcomes import SERIALIZABLE, SNAPSHOT, require  # noqa: E402,F401 - re-exported


def column_index(rows: pa.Table, field_id: int) -> int:
    """The index of `rows`' top-level column of field `field_id` (its Arrow field's
    PARQUET:field_id, as read_task and schema_to_arrow give it), -1 if none. Lineage is
    found by its reserved field id, never by name: a user's column may be named `_row_id`."""
    wanted = str(field_id).encode()
    found = [i for i, f in enumerate(rows.schema) if (f.metadata or {}).get(FIELD_ID_KEY) == wanted]
    assert len(found) <= 1, f"two columns of field id {field_id}: {rows.column_names}"
    return found[0] if found else -1


def carries_lineage(rows: pa.Table) -> bool:
    """Whether `rows` hold the row lineage columns by their reserved field ids (spec
    "Reserved Field IDs"): rows read to be moved to a new file (`lineage_schema_of`). A
    caller's rows never do: Table.append and overwrite rebuild them in the table's schema
    (append_schema.conform_rows), where a column named `_row_id` has its own id."""
    i, j = column_index(rows, ROW_ID_FIELD_ID), column_index(rows, LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID)
    assert (i < 0) == (j < 0), "the lineage columns travel together"
    return i >= 0


def check_lineage_names(schema) -> None:
    """SchemaMismatch naming the columns of a v3 table's `schema` that have a row lineage
    column's name. Rows moved to a new file keep their `_row_id` and
    `_last_updated_sequence_number` (spec "Row Lineage"), written beside the table's
    columns: with a column of the same name the two could not be told apart by name.
    Iceberg-Java cannot do it either (MetadataColumns.schemaWithRowLineage makes a schema
    with two fields of one name, which Schema refuses). Neither the spec (it reserves the
    field ids) nor Java reserves the names when a table is created, evolved or upgraded,
    so the refusal comes here, when rows are to be moved."""
    clash = [f"{f.name!r} (field id {f.field_id})" for f in lineage_named(schema)]
    if clash:
        several = len(clash) > 1
        raise SchemaMismatch(f"{'columns' if several else 'column'} {' and '.join(clash)} "
                             f"{'have' if several else 'has'} the name of a row lineage column: on a v3 table "
                             "rows moved to a new file keep their lineage beside the table's columns, under "
                             f"that name; rename {'them' if several else 'it'} first")


def write_rows(c: PendingCommit, rows: pa.Table) -> list[DataFile]:
    """Write `rows` as one Parquet file per partition of the default spec. Rows carrying
    lineage (`carries_lineage`: moved from other files on v3) are written with it (spec
    "Row Lineage"); any other rows in the table's schema, whatever its columns are named."""
    meta = c.base
    spec, schema = meta.spec(), meta.schema()
    if carries_lineage(rows):
        if meta.format_version < 3:
            raise UnsupportedFormatVersion(f"rows carrying row lineage (field ids {ROW_ID_FIELD_ID}, "
                                           f"{LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID}) cannot be written to a "
                                           f"v{meta.format_version} table: row lineage is v3")
        check_lineage_names(schema)
        schema = lineage_schema(schema)
    out = []
    for partition, part_rows in split_by_partition(rows, spec, schema, data_files_max(meta.properties)):
        location = data_file_location(meta.location, partition_path_of(spec, schema, partition), c.env.uuid())
        data, data_file = write_data_file(part_rows, schema, location, partition)
        c.write(location, data)
        out.append(data_file)
    return out


def _write_manifest(c: PendingCommit, entries: list[ManifestEntry], spec_id: int,
                    content: ManifestContent = ManifestContent.DATA, added_snapshot_id: int | None = None,
                    n: int = 0) -> ManifestFile:
    meta = c.base
    spec, schema = meta.spec_by_id(spec_id), meta.schema()
    location = manifest_location(meta.location, c.env.uuid(), n)
    data = write_manifest(entries, schema, spec, content, meta.format_version, c.snapshot_id)
    c.write(location, data)
    return manifest_file_of(entries, schema, spec, manifest_path=location, manifest_length=len(data),
                            added_snapshot_id=added_snapshot_id, content=content)


def lineage_schema_of(c: PendingCommit, schema):
    """The schema rows are read in to be written again (copy-on-write survivors, compaction):
    on v3 with the lineage columns, so that the rewritten files keep each row's _row_id and
    _last_updated_sequence_number (spec "Row Lineage": a row moved to a new file keeps both
    when it is not modified); before v3 the schema itself, whatever its columns are named.
    On v3 a column named like a lineage column is refused (`check_lineage_names`)."""
    if c.base.format_version >= 3:
        check_lineage_names(schema)
    return lineage_schema(schema) if c.base.format_version >= 3 else schema


def _summary(c: PendingCommit, operation: str, added: list[DataFile], removed: list[DataFile],
             added_deletes: list[DataFile] = ()) -> dict[str, str]:
    out = {"operation": operation,
           "added-data-files": str(len(added)), "deleted-data-files": str(len(removed)),
           "added-records": str(sum(f.record_count for f in added)),
           "deleted-records": str(sum(f.record_count for f in removed))}
    if added_deletes:
        out["added-delete-files"] = str(len(added_deletes))
    head = c.head()
    prev = {} if head is None else head.summary
    if head is None or ("total-records" in prev and "total-data-files" in prev):
        out["total-records"] = str(int(prev.get("total-records", 0)) + int(out["added-records"])
                                   - int(out["deleted-records"]))
        out["total-data-files"] = str(int(prev.get("total-data-files", 0)) + len(added) - len(removed))
    return out


class _Producer:
    produces_snapshot = True

    def validations(self, c):
        return []

    def updates(self, c: PendingCommit, snapshot: Snapshot | None):
        return [U.add_snapshot(snapshot, self.ref)]

    def after_acknowledged(self, c, pre, post):
        pass


class FastAppend(_Producer):
    restart_phase = LIST

    def __init__(self, rows: pa.Table, ref: str = MAIN_BRANCH):
        self.rows, self.ref = rows, ref
        self.files: list[DataFile] = []
        self.manifest: ManifestFile | None = None

    def plan(self, c):
        return self.rows.num_rows > 0

    def write_data(self, c):
        self.files = write_rows(c, self.rows)

    def write_manifests(self, c):
        assert self.manifest is None and c.attempt == 1, "an append writes its manifest once (5.2)"
        entries = [ManifestEntry(ManifestEntryStatus.ADDED, f) for f in self.files]
        self.manifest = _write_manifest(c, entries, c.base.default_spec_id)

    def manifests(self, c):
        return [self.manifest] + list(c.tree.manifests(c.head()))

    def summary(self, c):
        return _summary(c, "append", self.files, [])


class FileChange(_Producer):
    """Remove data files D (planned at the starting snapshot), add data files A and delete
    files. Subclasses fill `removed`, `rows_to_add` / `added`, `added_deletes`, `reqs`."""
    restart_phase = MANIFESTS
    operation = "overwrite"

    def __init__(self, ref: str = MAIN_BRANCH, isolation: str = SERIALIZABLE):
        require(isolation in (SERIALIZABLE, SNAPSHOT), f"isolation is {SERIALIZABLE} or {SNAPSHOT}, not {isolation!r}")
        self.ref, self.isolation = ref, isolation
        self.removed: dict[str, DataFile] = {}
        self.rows_to_add: list[pa.Table] = []
        self.added: list[DataFile] = []
        self.added_deletes: list[DataFile] = []
        self.added_delete_specs: dict[int, int] = {}  # id(delete file) -> its spec, when not delete_spec_id
        # Delete files (by delete_key) this change supersedes: a DV replaced by a new one, or
        # position delete files it merged (spec "Deletion Vectors"). The DVs of removed data
        # files are dropped too ("When removing a data file, writers must also remove any
        # deletion vector that applies to that data file").
        self.removed_deletes: set[tuple[str, int | None]] = set()
        self.data_sequence_number: int | None = None  # rewrite: the starting snapshot's
        self.reqs: list = []
        self._filtered: dict[str, ManifestFile | None] = {}  # manifest path -> rewritten (None: kept)
        self._merged: dict[tuple, ManifestFile] = {}         # bin's manifest paths -> merged manifest
        self._new_entries: dict[str, list[ManifestEntry]] = {}  # path of a manifest in _new -> its entries
        self._filtered_for: int | None = None
        self._new: list[ManifestFile] | None = None
        self._manifests: list[ManifestFile] = []

    def validations(self, c):
        return self.reqs

    def write_data(self, c):
        for rows in self.rows_to_add:
            if rows.num_rows:
                self.added.extend(write_rows(c, rows))

    def write_manifests(self, c):
        if self._filtered_for != c.snapshot_id:  # deleted entries carry our snapshot id
            self._filtered, self._merged, self._filtered_for = {}, {}, c.snapshot_id
        if self._new is None:
            self._new = []
            if self.added:
                seq = self.data_sequence_number
                entries = [ManifestEntry(ManifestEntryStatus.ADDED, f, sequence_number=seq) for f in self.added]
                self._new.append(_write_manifest(c, entries, c.base.default_spec_id, n=0))
                self._new_entries[self._new[-1].manifest_path] = entries
            by_spec: dict[int, list[ManifestEntry]] = {}
            for f in self.added_deletes:
                spec_id = self.added_delete_specs.get(id(f), None)
                by_spec.setdefault(self.delete_spec_id(c) if spec_id is None else spec_id, []).append(
                    ManifestEntry(ManifestEntryStatus.ADDED, f))
            for spec_id, entries in sorted(by_spec.items()):
                self._new.append(_write_manifest(c, entries, spec_id, ManifestContent.DELETES, n=1))
                self._new_entries[self._new[-1].manifest_path] = entries
        found: set[str] = set()
        found_deletes: set[tuple[str, int | None]] = set()
        carried = []
        for m in c.tree.manifests(c.head()):
            if m.manifest_path not in self._filtered:
                self._filtered[m.manifest_path] = self._filter(c, m)
            rewritten = self._filtered[m.manifest_path]
            if m.content == ManifestContent.DATA:
                found |= {e.data_file.file_path for e in c.tree.entries(m)
                          if e.status in LIVE and e.data_file.file_path in self.removed}
            elif self.removed_deletes:
                found_deletes |= {delete_key(e.data_file) for e in c.tree.entries(m)
                                  if e.status in LIVE and delete_key(e.data_file) in self.removed_deletes}
            carried.append(m if rewritten is None else rewritten)
        missing = set(self.removed) - found
        assert not missing, f"files to remove are not live in the base's head: {sorted(missing)[:3]}"
        # The validations (FilesStillLive, NoNewDeletesForFiles) held on this base, so what
        # this change supersedes is still there: one DV per data file after the swap.
        missing = self.removed_deletes - found_deletes
        assert not missing, f"delete files to replace are not live in the base's head: {sorted(missing)[:3]}"
        if c.base.format_version >= 3:
            self._check_one_dv_per_file(c)
        self._manifests = merge_manifests(self._new + carried, MergePolicy.from_properties(c.base.properties),
                                          lambda bin_: self._merge_bin(c, bin_))

    def _merge_bin(self, c: PendingCommit, bin_: list[ManifestFile]) -> ManifestFile:
        """One merged manifest for `bin_` (merge.py), written once per bin and snapshot id."""
        key = tuple(m.manifest_path for m in bin_)
        if key not in self._merged:
            # Our own new manifests are merged from the entries we wrote: read through the
            # tree before a manifest list assigned their sequence number, their entries
            # would be cached without one (and a later attempt may list them unmerged).
            def entries_of(m):
                own = self._new_entries.get(m.manifest_path)
                return own if own is not None else c.tree.entries(m)
            entries = merged_entries(entries_of, bin_, c.snapshot_id)
            self._merged[key] = _write_manifest(c, entries, bin_[0].partition_spec_id, bin_[0].content,
                                                added_snapshot_id=c.snapshot_id, n=3)
        return self._merged[key]

    def _filter(self, c: PendingCommit, m: ManifestFile) -> ManifestFile | None:
        """The manifest with D marked deleted, or None when it lists none of D. A delete
        manifest (v3 only: v2 ones are carried as they are) loses the DVs of D and the
        delete files this change supersedes."""
        if m.content != ManifestContent.DATA:
            if c.base.format_version < 3 and not self.removed_deletes:
                return None
            gone = self._superseded
        else:
            def gone(f: DataFile) -> bool:
                return f.file_path in self.removed
        entries = c.tree.entries(m)
        if not any(e.status in LIVE and gone(e.data_file) for e in entries):
            return None
        out = []
        for e in entries:
            if e.status not in LIVE:
                continue  # a deletion recorded by an earlier snapshot is not carried on
            status = ManifestEntryStatus.DELETED if gone(e.data_file) else ManifestEntryStatus.EXISTING
            snapshot_id = c.snapshot_id if status == ManifestEntryStatus.DELETED else e.snapshot_id
            out.append(replace(e, status=status, snapshot_id=snapshot_id))
        return _write_manifest(c, out, m.partition_spec_id, m.content, added_snapshot_id=c.snapshot_id, n=2)

    def _check_one_dv_per_file(self, c: PendingCommit) -> None:
        """Our invariant (spec "Deletion Vectors": at most one per data file in a snapshot):
        the DVs that stay live in the base's head plus the ones this change adds reference
        each data file once. A failure here is a bug of ours, or of the validations."""
        added = [f for f in self.added_deletes if f.is_deletion_vector]
        if not added:
            return  # two DVs another writer left are the reader's CorruptMetadata, not ours to assert
        kept = {comparable_location(e.data_file.referenced_data_file): e.data_file.file_path
                for _, e in c.tree.live_entries(c.head(), ManifestContent.DELETES)
                if e.data_file.is_deletion_vector and not self._superseded(e.data_file)}
        for f in added:
            key = comparable_location(f.referenced_data_file)
            assert key not in kept, f"two live DVs for {f.referenced_data_file}: {kept[key]}, {f.file_path}"
            kept[key] = f.file_path

    def _superseded(self, f: DataFile) -> bool:
        return delete_key(f) in self.removed_deletes or (
            f.is_deletion_vector and f.referenced_data_file in self.removed)

    def delete_spec_id(self, c) -> int:
        return c.base.default_spec_id

    def manifests(self, c):
        return self._manifests

    def summary(self, c):
        return _summary(c, self.operation, self.added, list(self.removed.values()), self.added_deletes)


class DeleteWhere(FileChange):
    """Delete rows matching a filter: whole files when every row matches, otherwise
    copy-on-write (survivors rewritten). With `rows`, an overwrite: the new rows are added
    in the same snapshot. Planned at the starting snapshot; 7.3 rows "overwrite by
    filter" and "delete by filter, row-level"."""

    def __init__(self, row_filter, rows: pa.Table | None = None, ref: str = MAIN_BRANCH,
                 isolation: str = SERIALIZABLE):
        super().__init__(ref, isolation)
        self.row_filter = parse_filter(row_filter) if isinstance(row_filter, str) else row_filter
        self.rows = rows
        self.operation = "overwrite" if rows is not None else "delete"

    def plan(self, c):
        start = c.starting_snapshot
        # The table's current schema: the filter names its columns (a rename or an added
        # column since the last data commit included), and survivors are rewritten in it.
        schema = c.base.schema()
        mask = E.to_arrow(E.bind(self.row_filter, schema))
        deletes = DeleteReader(c.io)
        rewrites = False
        rewritten: list[DataFile] = []
        # On v3 a column named like a lineage column refuses only rows that move: a file
        # dropped whole moves none (check_lineage_names, below).
        clash = c.base.format_version >= 3 and bool(lineage_named(schema))
        read_schema = schema if clash else lineage_schema_of(c, schema)
        for task in plan_files(c.tree, c.base, start, self.row_filter, schema):
            rows = read_task(c.io, task, read_schema, deletes, NM.of(c.base.properties))
            matched = rows.filter(mask).num_rows
            if matched == 0 and rows.num_rows:
                continue
            # Every live row it holds matches, some do, or none is left (each was deleted by
            # a delete file): it goes, its survivors rewritten. A file the filter's range may
            # hold with no live row left goes too, as a partition overwrite removes it.
            self.removed[task.data_file.file_path] = task.data_file
            survivors = self.rewritten_rows(rows, mask)
            if survivors.num_rows:
                if clash:
                    check_lineage_names(schema)  # raises: these rows would move without their lineage
                rewrites = True
                rewritten.append(task.data_file)
                self.rows_to_add.append(survivors)
        if self.rows is not None:
            self.rows_to_add.append(self.rows)
        if not self.removed and not (self.rows is not None and self.rows.num_rows):
            return False
        if self.rows is not None and not self.removed:
            self.operation = "append"
        elif self.rows is None and rewrites:
            self.operation = "overwrite"  # Java names a copy-on-write delete an overwrite
        self.reqs = [StartingSnapshotIsAncestor(self.ref), FilesStillLive(frozenset(self.removed), self.ref)]
        if self.isolation == SERIALIZABLE:
            self.reqs.append(NoConflictingData(self.row_filter, self.ref))
        # Rows copied forward must not escape a delete committed meanwhile; an overwrite
        # under serializable isolation also refuses new deletes of the rows it read (Java's
        # validateNoConflictingDeletes; spec/PROTOCOL.md 7.3 "overwrite by filter").
        checked = tuple(self.removed.values()) if self.rows is not None and self.isolation == SERIALIZABLE \
            else tuple(rewritten)
        if checked:
            self.reqs.append(NoNewDeletesForFiles(checked, self.ref))
        return True

    def rewritten_rows(self, rows: pa.Table, mask) -> pa.Table:
        """What a removed file's rows are written again as: those the filter does not match
        (row_updates.UpdateWhere also writes the matched ones, updated)."""
        return rows.filter(not_true(mask))


class DeleteFiles(FileChange):
    """Delete a named set of data files (7.3 "delete files")."""
    operation = "delete"

    def __init__(self, paths, ref: str = MAIN_BRANCH):
        super().__init__(ref)
        self.paths = frozenset(paths)

    def plan(self, c):
        live = {e.data_file.file_path: e.data_file for _, e in c.tree.live_entries(c.starting_snapshot, ManifestContent.DATA)}
        unknown = self.paths - set(live)
        if unknown:
            raise ValueError(f"not live in the starting snapshot: {sorted(unknown)[:3]}")
        self.removed = {p: live[p] for p in self.paths}
        self.reqs = [StartingSnapshotIsAncestor(self.ref), FilesStillLive(self.paths, self.ref)]
        return bool(self.removed)


class RewriteFiles(FileChange):
    """Compaction (7.3 "rewrite files"): per partition, the live rows of the chosen files
    (deletes applied as of the starting snapshot) become one file whose data sequence
    number is the starting snapshot's, so that deletes committed later still apply."""
    operation = "replace"

    def __init__(self, paths=None, ref: str = MAIN_BRANCH, files_min: int = 2):
        super().__init__(ref)
        self.paths = None if paths is None else frozenset(paths)
        self.files_min = files_min

    def plan(self, c):
        start = c.starting_snapshot
        if start is None:
            return False
        schema = c.base.schema()      # what the rewritten files are written in (write_rows)
        groups: dict[tuple, list] = {}
        for task in plan_files(c.tree, c.base, start):
            if self.paths is None or task.data_file.file_path in self.paths:
                groups.setdefault((task.spec_id, task.data_file.partition), []).append(task)
        deletes = DeleteReader(c.io)
        for (spec_id, _), tasks in sorted(groups.items(), key=lambda kv: repr(kv[0])):
            few = len(tasks) < self.files_min
            has_deletes = any(t.has_deletes for t in tasks)
            if few and not has_deletes or spec_id != c.base.default_spec_id:
                continue
            rows = pa.concat_tables([read_task(c.io, t, lineage_schema_of(c, schema), deletes, NM.of(c.base.properties))
                                     for t in tasks])
            if few and rows.num_rows == sum(t.data_file.record_count for t in tasks):
                continue  # the deletes that may apply remove none of its rows: nothing to do (5.4)
            for t in tasks:
                self.removed[t.data_file.file_path] = t.data_file
            self.rows_to_add.append(rows)
        if not self.removed:
            return False
        self.data_sequence_number = start.sequence_number
        files = tuple(self.removed.values())
        self.reqs = [StartingSnapshotIsAncestor(self.ref), FilesStillLive(frozenset(self.removed), self.ref),
                     NoNewDeletesForFiles(files, self.ref, ignore_equality=True)]
        return True


class RowDelta(FileChange):
    """Add delete files written by some engine (position or equality deletes), and
    optionally data files (7.3 row_delete, row_update, upsert). The data files the
    deletes name (`referenced_paths`) must still be live, and no other commit may have
    added a delete file for them meanwhile (the row may be deleted or rewritten: the
    merge-on-read UPDATE/DELETE anomaly, docs/merge-on-read-anomaly.md). With a
    `row_filter`, serializable isolation also refuses data added meanwhile that may
    match it."""
    operation = "overwrite"

    def __init__(self, delete_files: list[DataFile], data_files: list[DataFile] = (),
                 referenced_paths=(), ref: str = MAIN_BRANCH, spec_id: int | None = None,
                 row_filter=None, isolation: str = SERIALIZABLE):
        super().__init__(ref, isolation)
        require(all(f.content != DataFileContent.DATA for f in delete_files),
                "a row delta's delete files must be position or equality deletes")
        self.added_deletes, self.added = list(delete_files), list(data_files)
        self.referenced = frozenset(referenced_paths)
        self.spec_id = spec_id
        self.row_filter = parse_filter(row_filter) if isinstance(row_filter, str) else row_filter
        self.operation = "delete" if not data_files else "overwrite"

    def plan(self, c):
        version = c.base.format_version
        if version == 1 and self.added_deletes:
            raise UnsupportedFormatVersion("row-level delete files need format v2 or later; this table is v1")
        for f in self.added_deletes:
            if version >= 3 and f.content == DataFileContent.POSITION_DELETES and not f.is_deletion_vector:
                raise UnsupportedFormatVersion(f"{f.file_path}: position delete files must not be added to a "
                                               "v3 table (spec \"Delete Formats\"); write a deletion vector")
            if version < 3 and f.is_deletion_vector:
                raise UnsupportedFormatVersion(f"{f.file_path}: deletion vectors need format v3; this table is v{version}")
        dvs = [f for f in self.added_deletes if f.is_deletion_vector]
        if dvs:  # at most one live DV per data file: each supersedes what came before
            removed, referenced = supersede(c, dvs)
            self.removed_deletes |= removed
            self.referenced = self.referenced | referenced
        validated = bool(self.referenced) or (self.row_filter is not None and self.isolation == SERIALIZABLE)
        # A delta that names no data file and reads no rows (an upsert: an equality delete
        # and its new rows) assumes nothing about its starting snapshot (spec/PROTOCOL.md
        # 7.3 "upsert"; model: validate() is True for UPSERT), so a rollback that takes its
        # start off the ref's line is no conflict for it (Iceberg-Java's RowDelta without
        # validateFromSnapshot).
        self.reqs = [StartingSnapshotIsAncestor(self.ref), FilesStillLive(self.referenced, self.ref)] \
            if validated else []
        if self.referenced:
            live = {e.data_file.file_path: e.data_file
                    for _, e in c.tree.live_entries(c.starting_snapshot, ManifestContent.DATA)}
            named = tuple(live[p] for p in sorted(self.referenced) if p in live)
            self.reqs.append(NoNewDeletesForFiles(named, self.ref))
        if self.row_filter is not None and self.isolation == SERIALIZABLE:
            self.reqs.append(NoConflictingData(self.row_filter, self.ref))
        return bool(self.added_deletes or self.added)

    def delete_spec_id(self, c) -> int:
        return c.base.default_spec_id if self.spec_id is None else self.spec_id
