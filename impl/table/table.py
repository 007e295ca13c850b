"""The table handle and table creation (spec/PROTOCOL.md 3 "The catalog's swap" for
create, 10 "Readers" for reads; every write goes through commit.PendingCommit).

A `Table` is catalog + identifier + io (+ env). It holds the metadata it last loaded;
`refresh()` makes one pointer read, and one metadata read if the pointer moved. A write
method reuses what the handle holds and adopts the metadata it committed; it returns an
outcome (Committed / Conflict / Unknown). `new_*` methods return a plain PendingCommit
(no shared cache) so a caller (the conformance suite) can step it phase by phase.
"""
from __future__ import annotations

from typing import Mapping

import pyarrow as pa

from icefloe.impl.catalog.base import Catalog, CatalogError, NoSuchTable, TableAlreadyExists, TableIdentifier
from icefloe.impl.format.manifest import DataFile
from icefloe.impl.format.metadata import (
    FORMAT_VERSION_DEFAULT, MAIN_BRANCH, MetadataError, Snapshot, SnapshotRef, TableMetadata,
    check_format_version, new_table_metadata, to_json)
from icefloe.impl.format.transforms import PartitionSpec
from icefloe.impl.format.types import Schema
from icefloe.impl.io.base import ObjectStore, StoreError
from icefloe.impl.outcomes import Outcome, Committed, require
from icefloe.impl.table import maintenance, operations as ops, producer as P, scan as S
from icefloe.impl.table.append_schema import conform_rows
from icefloe.impl.table.commit import PendingCommit, RetryPolicy, read_metadata
from icefloe.impl.table.confinement import Confinement, catalog_tables, check_no_overlap
from icefloe.impl.table.env import Env, metadata_file_location
from icefloe.impl.table.files import TreeReader


def create_table(catalog: Catalog, identifier: TableIdentifier | str, schema: Schema,
                 partition_spec: PartitionSpec | None = None, location: str | None = None,
                 properties: Mapping[str, str] | None = None, *, io: ObjectStore,
                 env: Env | None = None, format_version: int | None = None) -> "Table":
    """Write the first metadata file (version 0) of a table of `format_version` (default v2;
    a `format-version` property is taken as the version, as Iceberg's catalogs do, and is
    not stored as a property) and register it. TableLocationOverlap if
    `location` is, or is inside, or contains another table's (nothing is written then);
    TableAlreadyExists if the identifier is taken. When the catalog refuses, the metadata
    file written is deleted, unless the catalog may have registered it after all."""
    require(bool(location), "a table needs a location")
    env = env or Env()
    identifier = TableIdentifier.parse(identifier) if isinstance(identifier, str) else identifier
    properties = dict(properties or {})
    if "format-version" in properties:
        asked = check_format_version(properties.pop("format-version"))
        require(format_version is None or format_version == asked,
                f"format version {format_version} and property format-version={asked} disagree")
        format_version = asked
    format_version = FORMAT_VERSION_DEFAULT if format_version is None else check_format_version(format_version)
    check_no_overlap(location, catalog_tables(catalog))
    metadata = new_table_metadata(schema, location.rstrip("/"), env.uuid(), env.wall_ms(),
                                  partition_spec or PartitionSpec(0, ()), properties=properties,
                                  format_version=format_version)
    metadata_location = metadata_file_location(metadata.location, 0, env.uuid())
    io.put_if_absent(metadata_location, to_json(metadata))
    try:
        catalog.create(identifier, metadata_location)
    except TableAlreadyExists:
        io.delete(metadata_location)
        raise
    except CatalogError:
        # Refused (a read-only database, say) or lost on the way back: delete the file only
        # if the catalog now says the table is not there (../shared/repro bug10).
        try:
            registered = catalog.load(identifier) == metadata_location
        except NoSuchTable:
            registered = False
        except CatalogError:
            raise                            # unknown: the file stays for orphan removal
        if not registered:
            io.delete(metadata_location)
            raise
    return Table(catalog, identifier, io, env)


class Table:
    def __init__(self, catalog: Catalog, identifier: TableIdentifier | str, io: ObjectStore,
                 env: Env | None = None, retry: RetryPolicy | None = None):
        self.catalog = catalog
        self.identifier = TableIdentifier.parse(identifier) if isinstance(identifier, str) else identifier
        self.io, self.env, self.retry = io, env or Env(), retry
        self.metadata_location: str | None = None
        self._metadata: TableMetadata | None = None
        self.tree = TreeReader(io, pause_gc=self.env.pause_gc_during_reads)
        self.refresh()

    # -- reading -----------------------------------------------------------------------

    def refresh(self) -> "Table":
        location = self.catalog.load(self.identifier)
        if location != self.metadata_location:
            self._metadata, self.metadata_location = read_metadata(self.io, location), location
        return self

    @property
    def metadata(self) -> TableMetadata:
        return self._metadata

    @property
    def location(self) -> str:
        return self._metadata.location

    @property
    def refs(self) -> Mapping[str, SnapshotRef]:
        return self._metadata.refs

    def current_snapshot(self) -> Snapshot | None:
        return self._metadata.current_snapshot()

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        return self._metadata.snapshot_by_id(snapshot_id)

    def snapshot_as_of(self, timestamp_ms: int) -> Snapshot | None:
        return self._metadata.snapshot_as_of(timestamp_ms)

    def snapshot_for(self, snapshot_id: int | None = None, ref: str | None = None,
                     as_of_ms: int | None = None) -> Snapshot | None:
        """Time travel: by id, by ref (branch or tag), by timestamp, else the current one."""
        require([snapshot_id, ref, as_of_ms].count(None) >= 2, "choose one of snapshot id, ref, timestamp")
        m = self._metadata
        if snapshot_id is not None:
            found = m.snapshot_by_id(snapshot_id)
            if found is None:
                raise ValueError(f"snapshot {snapshot_id} is not retained")
            return found
        if ref is not None:
            if ref not in m.refs:
                raise ValueError(f"no ref {ref!r}")
            return m.ref_head(ref)
        if as_of_ms is not None:
            found = m.snapshot_as_of(as_of_ms)
            if found is None:
                raise ValueError(f"no snapshot was current at {as_of_ms}")
            return found
        return m.current_snapshot()

    def scan(self, row_filter=None, *, snapshot_id: int | None = None, ref: str | None = None,
             as_of_ms: int | None = None, columns: list[str] | None = None) -> pa.Table:
        """The rows of the chosen snapshot (`snapshot_for`) matching `row_filter`; `columns`
        may name `_row_id` and `_last_updated_sequence_number` on a v3 table, and below v3
        naming them is UnsupportedFormatVersion (scan.check_lineage_columns)."""
        snapshot = self.snapshot_for(snapshot_id, ref, as_of_ms)
        # The current state reads with the current schema (a column added since the last
        # snapshot shows, as null); time travel with the schema of its snapshot.
        current = snapshot_id is None and ref is None and as_of_ms is None
        return S.scan(self.io, self._metadata, snapshot, row_filter, columns, self.tree,
                      schema=self._metadata.schema() if current else None)

    def plan_files(self, row_filter=None, *, snapshot_id: int | None = None, ref: str | None = None):
        return S.plan_files(self.tree, self._metadata, self.snapshot_for(snapshot_id, ref), row_filter)

    def incremental_append_scan(self, from_snapshot_id: int | None, to_snapshot_id: int | None = None) -> pa.Table:
        to = to_snapshot_id if to_snapshot_id is not None else self._metadata.current_snapshot_id
        return S.incremental_append_scan(self.io, self._metadata, from_snapshot_id, to, self.tree)

    def history(self, ref: str = MAIN_BRANCH) -> list[Snapshot]:
        """The ancestry of `ref`'s head, oldest first."""
        head = self._metadata.refs.get(ref)
        return [] if head is None else list(reversed(list(self._metadata.ancestors_of(head.snapshot_id))))

    # -- writing -----------------------------------------------------------------------

    def new_commit(self, operation) -> PendingCommit:
        return PendingCommit(self.catalog, self.identifier, self.io, operation, self.env, self.retry)

    def begin(self, operation) -> PendingCommit:
        """A commit of `operation` that starts from what this handle holds (its metadata if
        the pointer still names it, its cached manifest lists), to run or step phase by
        phase; `adopt(commit)` once it is done brings the handle up to date."""
        return PendingCommit(self.catalog, self.identifier, self.io, operation, self.env, self.retry,
                             tree=self.tree, known=(self.metadata_location, self._metadata))

    def adopt(self, commit: PendingCommit) -> Outcome:
        """After a commit begun here ended: once acknowledged, the handle takes the metadata
        it committed (no GET of an object this handle has read or written); otherwise it
        refreshes, so it shows the table as it is (never older than what the commit read)
        and never a commit that did not land. The outcome is decided before that refresh
        and is returned whatever the refresh meets (`_refresh_after`)."""
        outcome = commit.outcome
        if (isinstance(outcome, Committed) and commit.new_metadata is not None
                and outcome.metadata_location == commit.new_metadata_location):
            self._metadata, self.metadata_location = commit.new_metadata, commit.new_metadata_location
        else:
            self._refresh_after(commit)
        return outcome

    def _refresh_after(self, commit: PendingCommit) -> None:
        """Refresh after an outcome other than an acknowledged swap. If the table cannot be
        read now (the catalog or store unavailable), the outcome still stands: a Conflict
        stays "rejected", an Unknown stays "unknown" (9.1); the handle then takes the last
        pointer value the commit itself read (a state the table had, no older than the
        handle's), and the next refresh brings it up to date."""
        try:
            self.refresh()
        except (CatalogError, StoreError, MetadataError):
            base = commit.base
            if base is None or commit.base_location is None:
                return                       # it failed before reading the table: keep what we hold
            if self._metadata is None or base.last_updated_ms >= self._metadata.last_updated_ms:
                self._metadata, self.metadata_location = base, commit.base_location

    def _run(self, operation) -> Outcome:
        commit = self.begin(operation)
        commit.run()
        return self.adopt(commit)

    def append(self, rows: pa.Table, *, branch: str = MAIN_BRANCH, widen: bool = False) -> Outcome:
        """Append `rows`; SchemaMismatch (nothing written) if they do not fit the table's
        schema as they are (append_schema.py; `widen`: the spec's safe widenings too)."""
        return self._run(P.FastAppend(conform_rows(rows, self._metadata.schema(), widen=widen), branch))

    def overwrite(self, rows: pa.Table, row_filter="true", *, branch: str = MAIN_BRANCH,
                  isolation: str = P.SERIALIZABLE) -> Outcome:
        """Replace the rows matching `row_filter` (default: every row) with `rows`."""
        rows = conform_rows(rows, self._metadata.schema())
        return self._run(P.DeleteWhere(_filter(row_filter), rows, branch, isolation))

    def delete(self, row_filter, *, branch: str = MAIN_BRANCH, isolation: str = P.SERIALIZABLE,
               mode: str | None = None) -> Outcome:
        """Delete the rows matching `row_filter`. `mode` (default: the table's
        write.delete.mode, else copy-on-write, as Iceberg-Java): `copy-on-write` rewrites
        the files that hold them; `merge-on-read` writes deletion vectors (format v3;
        UnsupportedFormatVersion on an older table)."""
        mode = mode or self._metadata.properties.get("write.delete.mode", COPY_ON_WRITE)
        require(mode in DELETE_MODES, f"delete mode is one of {', '.join(DELETE_MODES)}, not {mode!r}")
        if mode == MERGE_ON_READ:
            from icefloe.impl.table.row_deletes import DeleteRows
            return self._run(DeleteRows(_filter(row_filter), branch, isolation))
        return self._run(P.DeleteWhere(_filter(row_filter), None, branch, isolation))

    def update(self, assignments: Mapping[str, object], row_filter, *, branch: str = MAIN_BRANCH,
               isolation: str = P.SERIALIZABLE, mode: str | None = None) -> Outcome:
        """Set columns of the rows matching `row_filter` (`assignments`: column -> value in
        the spec's JSON single-value form). `mode` (default: the table's write.update.mode,
        else copy-on-write, as Iceberg-Java): `copy-on-write` rewrites the files that hold
        them; `merge-on-read` writes deletion vectors and the updated rows (format v3).
        On v3 an updated row keeps its _row_id (row_updates.py, spec "Row Lineage")."""
        from icefloe.impl.table import row_updates as RU
        mode = mode or self._metadata.properties.get("write.update.mode", COPY_ON_WRITE)
        require(mode in DELETE_MODES, f"update mode is one of {', '.join(DELETE_MODES)}, not {mode!r}")
        op = RU.UpdateRows if mode == MERGE_ON_READ else RU.UpdateWhere
        return self._run(op(assignments, _filter(row_filter), branch, isolation))

    def delete_files(self, paths, *, branch: str = MAIN_BRANCH) -> Outcome:
        return self._run(P.DeleteFiles(paths, branch))

    def rewrite_files(self, paths=None, *, branch: str = MAIN_BRANCH, files_min: int = 2) -> Outcome:
        return self._run(P.RewriteFiles(paths, branch, files_min))

    def add_delete_files(self, delete_files: list[DataFile], referenced_paths=(), *,
                         branch: str = MAIN_BRANCH) -> Outcome:
        return self._run(P.RowDelta(delete_files, (), referenced_paths, branch))

    def rollback_to(self, snapshot_id: int) -> Outcome:
        """Move main back to an ancestor of its head."""
        return self._run(ops.SetRef(MAIN_BRANCH, snapshot_id, must_be_ancestor=True))

    def set_current_snapshot(self, snapshot_id: int) -> Outcome:
        return self._run(ops.SetRef(MAIN_BRANCH, snapshot_id))

    def create_branch(self, name: str, snapshot_id: int | None = None, **retention) -> Outcome:
        return self._run(ops.SetRef(name, self._target(snapshot_id), "branch", **retention))

    def create_tag(self, name: str, snapshot_id: int | None = None, max_ref_age_ms: int | None = None) -> Outcome:
        return self._run(ops.SetRef(name, self._target(snapshot_id), "tag", max_ref_age_ms=max_ref_age_ms))

    replace_branch = create_branch
    replace_tag = create_tag

    def remove_ref(self, name: str) -> Outcome:
        return self._run(ops.RemoveRef(name))

    def upgrade_format_version(self, format_version: int) -> Outcome:
        """Upgrade to `format_version`, one version above the table's (spec Appendix E);
        UnsupportedFormatVersion for a downgrade, a skip or an unknown version."""
        return self._run(ops.UpgradeFormatVersion(format_version))

    def set_properties(self, updates: Mapping[str, str], removals=()) -> Outcome:
        return self._run(ops.SetProperties(dict(updates), removals))

    def expire_snapshots(self, older_than_ms: int | None = None, retain_last: int | None = None,
                         snapshot_ids=None) -> tuple[Outcome, "maintenance.Cleanup"]:
        """Expire and (after an acknowledged swap only) delete what became unreachable;
        returns the outcome and the cleanup (the deleted locations, and what was refused
        or failed: the expiry stands either way)."""
        operation = ops.ExpireSnapshots(older_than_ms, retain_last, snapshot_ids)
        return self._run(operation), operation.deleted_files

    def remove_orphan_files(self, older_than_ms: int | None = None, *, dry_run: bool = False
                            ) -> "maintenance.Cleanup":
        """12: list the table's root (as the catalog names it), delete unreachable objects
        and dead writers' temporary files older than the threshold (default: 3 days ago).
        The result lists the deleted locations (with `dry_run`: those it would delete) and
        what it refused or failed to delete."""
        self.refresh()
        if older_than_ms is None:
            older_than_ms = self.env.wall_ms() - maintenance.ORPHAN_AGE_MS_DEFAULT
        confinement = Confinement.for_metadata(self.metadata_location, self.io)
        return maintenance.remove_orphan_files(self.io, self._metadata, older_than_ms, self.tree,
                                               confinement=confinement, dry_run=dry_run)

    def _target(self, snapshot_id: int | None) -> int:
        if snapshot_id is not None:
            return snapshot_id
        current = self.refresh()._metadata.current_snapshot_id
        require(current is not None, "the table has no snapshot yet: name one")
        return current


COPY_ON_WRITE, MERGE_ON_READ = "copy-on-write", "merge-on-read"  # Iceberg's write.delete.mode values
DELETE_MODES = (COPY_ON_WRITE, MERGE_ON_READ)


def _filter(row_filter):
    if isinstance(row_filter, str) and row_filter.strip().lower() == "true":
        from icefloe.impl.format.expressions import AlwaysTrue
        return AlwaysTrue()
    return row_filter
