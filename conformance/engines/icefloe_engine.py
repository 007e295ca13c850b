"""icefloe's own engine adapter: a stepping adapter over `icefloe.impl`'s PendingCommit
(the contract: icefloe.conformance.adapter).

Each writer gets its own store and catalog objects (on S3: its own client, signed with
its own access key) wrapped so the harness's FaultHooks can fail a storage write, reject
a swap, lose a swap's acknowledgement or park a swap for later delivery (the catalog
wrapper is conformance.testing's FaultInjectingCatalog, deciding by FaultHooks.on_swap
and parking in FaultHooks.parked). The table is
on a MemoryStore (`memory://` warehouse) or on S3 (`s3://`), its pointer in SQLite
(`catalog_uri` sqlite:///...) or in the S3 catalog (`catalog_uri` None on S3) or in
icefloe's memory catalog (`catalog_uri` None on memory).
"""
from __future__ import annotations

import pyarrow as pa

from icefloe.conformance import adapter as A
from icefloe.conformance.engines.icefloe_rows import ModelRowDelta
from icefloe.conformance.testing.faulty_catalog import FaultInjectingCatalog
from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.format import expressions as E
from icefloe.impl.format.expression_parser import parse as parse_filter
from icefloe.impl.format.types import IntegerType, NestedField, Schema, StringType
from icefloe.impl.io.base import StoreError, StoreUnavailable
from icefloe.impl.io.memory import MemoryStore, wall_clock_ms
from icefloe.impl.table import commit as C
from icefloe.impl.table import operations as ops
from icefloe.impl.table import producer as P
from icefloe.impl.table.commit import read_metadata
from icefloe.impl.table.env import Env
from icefloe.impl.table.files import TreeReader
from icefloe.impl.table.merge import MIN_COUNT_TO_MERGE
from icefloe.impl.table.table import Table, create_table

SCHEMA = Schema((NestedField(1, A.COLUMN, StringType(), True),))
ROWS = pa.schema([pa.field(A.COLUMN, pa.string(), nullable=False)])
# The partitioned table of a run with partitions or row-level deletes: identity(part).
PARTITIONED = Schema((NestedField(1, A.COLUMN, StringType(), True), NestedField(2, A.PART_COLUMN, IntegerType(), True)))
PARTITIONED_ROWS = pa.schema([pa.field(A.COLUMN, pa.string(), nullable=False),
                              pa.field(A.PART_COLUMN, pa.int32(), nullable=False)])
CAPABILITIES = A.Capabilities(
    operations=frozenset(A.OPERATIONS), mode=A.STEPPING, faults=frozenset(A.FAULT_KINDS),
    swap_over_s3=True, reads=frozenset(A.READS), isolation=A.SERIALIZABLE, transport=frozenset(A.TRANSPORTS),
    partitions=2, refs=True, format_versions=frozenset({2, 3}), v3_operations=frozenset(A.V3_OPERATIONS),
    dv_policy=A.DV_CONFLICT, row_lineage=True, v3_upgrade=True)


def rows_table(rows, partition: int | None = None) -> pa.Table:
    if partition is None:
        return pa.Table.from_pylist([{A.COLUMN: r} for r in rows], schema=ROWS)
    return pa.Table.from_pylist([{A.COLUMN: r, A.PART_COLUMN: partition} for r in rows], schema=PARTITIONED_ROWS)


def where_expression(where):
    if where is None:
        return E.AlwaysTrue()
    if not where:
        return E.AlwaysFalse()
    return parse_filter(f"{A.COLUMN} in ({', '.join(repr(r) for r in sorted(where))})")


class WriterStore:
    """An object store as writer `writer` sees it: writes pass the fault hooks first."""

    def __init__(self, inner, hooks: A.FaultHooks | None, writer: int):
        self.inner, self.hooks, self.writer = inner, hooks, writer

    def put_if_absent(self, location, data):
        if self.hooks is not None and self.hooks.on_write(self.writer, location):
            raise StoreUnavailable(location, "injected: the write failed before it was applied")
        return self.inner.put_if_absent(location, data)

    def compare_and_swap(self, location, data, expected_etag):
        if self.hooks is not None and self.hooks.on_write(self.writer, location):
            raise StoreUnavailable(location, "injected: the write failed before it was applied")
        return self.inner.compare_and_swap(location, data, expected_etag)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class Tagged:
    """An impl operation whose snapshot summary also records the suite's op id."""

    def __init__(self, inner, op_id: str):
        self._inner, self._op_id = inner, op_id

    def summary(self, c):
        return {**self._inner.summary(c), A.OP_ID_PROPERTY: self._op_id}

    def __getattr__(self, name):
        return getattr(self._inner, name)


class IcefloeCommit:
    """A SteppingCommit over one PendingCommit begun on a writer's table handle; once it is
    done the handle adopts its outcome (Table.adopt), as a write method does."""

    def __init__(self, pending: C.PendingCommit, handle: Table | None = None):
        self.pending, self.handle = pending, handle

    @property
    def phase(self) -> str:
        return self.pending.phase

    @property
    def done(self) -> bool:
        return self.pending.done

    def step(self) -> str:
        phase = self.pending.step()
        if self.pending.done and self.handle is not None:
            self.handle.adopt(self.pending)
        return phase

    @property
    def snapshot_id(self):
        return self.pending.snapshot_id

    @property
    def starting_snapshot_id(self):
        return self.pending.starting_snapshot_id

    @property
    def outcome(self):
        return self.pending.outcome


class IcefloeTable:
    """The TableHandle of icefloe."""

    def __init__(self, engine: "IcefloeEngine", ctx: A.TableContext):
        self.ctx, self.engine = ctx, engine
        self.env = Env.seeded(ctx.seed)
        self.retry = C.RetryPolicy(num_retries=ctx.commit_attempts_max - 1, retry_wait_ms_min=0,
                                   retry_wait_ms_max=0)
        self._closers = []
        self.shared_store = MemoryStore(ctx.now_ms or wall_clock_ms) if ctx.warehouse.startswith("memory://") \
            else None
        self.shared_catalog = engine.make_catalog(self, ctx) if self.shared_store is not None else None
        self.io = {}           # writer -> WriterStore
        self.catalogs = {}     # writer -> its catalog (FaultInjectingCatalog for writers 1..)
        self.handles = {}      # writer -> its own Table handle
        base_store, base_catalog = self.parts(0)
        location = f"{ctx.warehouse.rstrip('/')}/{ctx.identifier.replace('.', '/')}"
        self.partitioned = ctx.partitions > 1
        # Manifests merge as soon as two share a bin (Iceberg's default is 100), so the suite's
        # tables hold merged manifests with EXISTING entries for scans, validations, expiry
        # and orphan removal to get right (every model file is otherwise one manifest's only).
        props = {MIN_COUNT_TO_MERGE: "2"}
        self.format_version = ctx.format_version
        if self.format_version == 3 and ctx.upgraded_from_v2:
            from icefloe.conformance.engines import icefloe_v3
            icefloe_v3.create_upgraded(base_catalog, ctx, SCHEMA, location, base_store, self.env, self.retry)
        elif self.format_version == 3:
            # The v3 phase's table (conformance.v3): one manifest per commit, as the model has
            # one per data file, so next-row-id grows by the rows added alone (a merged
            # manifest's EXISTING rows would be assigned ids again: spec "First Row ID Assignment").
            create_table(base_catalog, ctx.identifier, SCHEMA, location=location, io=base_store, env=self.env,
                         format_version=3)
        elif self.partitioned:
            from icefloe.impl.format.transforms import parse_partition_spec
            create_table(base_catalog, ctx.identifier, PARTITIONED, parse_partition_spec(A.PART_COLUMN, PARTITIONED),
                         location=location, properties=props, io=base_store, env=self.env)
        else:
            create_table(base_catalog, ctx.identifier, SCHEMA, location=location, properties=props, io=base_store,
                         env=self.env)
        self.table = Table(base_catalog, ctx.identifier, base_store, self.env, self.retry)
        # Maintenance runs as a scheduled job would: through a handle opened once, here, that
        # has seen none of the commits since (never one the suite's reads keep fresh).
        self.maintenance = Table(base_catalog, ctx.identifier, base_store, self.env, self.retry)
        self.tree = TreeReader(base_store)
        self._records: dict = {}      # snapshot id -> SnapshotRecord

    def parts(self, writer: int):
        if writer not in self.io:
            hooks = self.ctx.faults if writer else None
            if self.shared_store is not None:
                store = self.shared_store
                catalog = self.engine.writer_catalog(self, writer, hooks)
            else:
                from icefloe.impl.s3.store import S3Store
                store = S3Store.from_config(self.ctx.s3_endpoint, self.ctx.access_key(writer), self.ctx.secret_key,
                                            self.ctx.region, client_name=f"w{writer}")
                catalog = self._own(make_catalog(self.ctx, store, hooks, writer))
            self.io[writer] = WriterStore(store, hooks, writer)
            if hooks is not None:
                catalog = FaultInjectingCatalog(catalog, hooks.parked, lambda _table, w=writer: hooks.on_swap(w),
                                                writer=writer)
            self.catalogs[writer] = catalog
        return self.io[writer], self.catalogs[writer]

    def _own(self, catalog):
        self._closers.append(catalog)
        return catalog

    # -- writers ---------------------------------------------------------------------------

    def operation(self, op: A.OpSpec):
        if self.format_version == 3:
            from icefloe.conformance.engines import icefloe_v3
            return icefloe_v3.operation(self.table, op)
        part = op.partition if self.partitioned else None
        if op.kind == A.APPEND:
            return P.FastAppend(rows_table(op.rows, part), op.ref)
        if op.kind == A.OVERWRITE:
            return P.DeleteWhere(self._where(op.where, part), rows_table(op.rows, part), isolation=P.SERIALIZABLE)
        if op.kind == A.DELETE:
            # The model's delete names one data file (spec/PROTOCOL.md 7.3 "delete files"); a
            # delete by row filter would also refuse a concurrent UPDATE's new copy of one of
            # its rows (NoConflictingData), which the named-file delete rightly does not.
            return P.DeleteFiles(self._file_written_with(op.where))
        if op.kind == A.REWRITE:
            if part is not None:
                return P.RewriteFiles(self._paths_in(part))
            return P.RewriteFiles(None if op.where is None else self._paths_of(op.where))
        if op.kind == A.ROLLBACK:
            return ops.SetRef("main", op.target_snapshot_id, must_be_ancestor=True)
        if op.kind in (A.ROW_DELETE, A.ROW_UPDATE, A.UPSERT, A.CDC_UPDATE):
            new_rows = rows_table(op.rows, part) if op.rows else None
            return ModelRowDelta(op.kind, part, op.row, new_rows, op.ref, P.SERIALIZABLE)
        if op.kind == A.TAG:
            return ops.SetRef(A.TAG_REF, op.target_snapshot_id, "tag")
        if op.kind == A.FAST_FORWARD:
            return ops.SetRef("main", op.target_snapshot_id)
        assert op.kind == A.EXPIRE
        return ops.ExpireSnapshots(older_than_ms=2 ** 62, retain_last=op.retain_last)

    @staticmethod
    def _where(where, part):
        """The overwrite's filter: its rows, within its partition (when the table has them)."""
        expr = where_expression(where)
        return expr if part is None else E.And(expr, parse_filter(f"{A.PART_COLUMN} = {part}"))

    def _paths_in(self, part: int) -> list:
        """The data files of main's head in partition `part` (what the model's rewrite reads)."""
        self.table.refresh()
        return [t.data_file.file_path for t in self.table.plan_files() if t.data_file.partition == (part,)]

    def create_branch(self, name: str, snapshot_id: int) -> None:
        out = self.table.create_branch(name, snapshot_id)
        assert isinstance(out, A.Committed), out

    def _file_rows(self, deletes_applied: bool):
        """(task, set of row ids) for each live data file of the current snapshot."""
        from dataclasses import replace

        from icefloe.impl.table.scan import read_task, snapshot_schema
        self.table.refresh()
        m = self.table.metadata
        schema = snapshot_schema(m, m.current_snapshot())
        for task in self.table.plan_files():
            read = task if deletes_applied else replace(task, position_deletes=[], equality_deletes=[])
            yield task, set(read_task(self.table.io, read, schema).column(A.COLUMN).to_pylist())

    def _file_written_with(self, where) -> list:
        """The live data file of the current snapshot written with exactly the rows `where`
        (deletes not applied: the model names the file, whatever was deleted from it since);
        the oldest if two are (an update's copy of a one-row file's row). [] for no rows."""
        if not where:
            return []
        found = [(task.data_sequence_number, task.data_file.file_path)
                 for task, rows in self._file_rows(deletes_applied=False) if rows == set(where)]
        return [min(found)[1]] if found else []

    def _paths_of(self, where) -> list:
        """The data files of the current snapshot whose rows all lie in `where`."""
        wanted = set(where)
        return [task.data_file.file_path for task, rows in self._file_rows(deletes_applied=True) if rows <= wanted]

    def handle(self, writer: int) -> Table:
        """Writer `writer`'s own table handle (its store and catalog, its caches)."""
        if writer not in self.handles:
            store, catalog = self.parts(writer)
            self.handles[writer] = Table(catalog, self.table.identifier, store, self.env, self.retry)
        return self.handles[writer]

    def begin(self, writer: int, op: A.OpSpec):
        operation = self.operation(op)
        if operation is not None and getattr(operation, "produces_snapshot", False):
            operation = Tagged(operation, op.op_id)
        handle = self.handle(writer)
        return IcefloeCommit(handle.begin(operation), handle)

    # -- readers ---------------------------------------------------------------------------

    def _result(self, snapshot_id, rows: pa.Table, files) -> A.ReadResult:
        return A.ReadResult(snapshot_id, tuple(sorted(rows.column(A.COLUMN).to_pylist())), frozenset(files))

    def current_snapshot_id(self) -> int | None:
        self.table.refresh()
        return self.table.metadata.current_snapshot_id

    def read_current(self) -> A.ReadResult:
        self.table.refresh()
        snap = self.table.current_snapshot()
        sid = None if snap is None else snap.snapshot_id
        return self.read_at(sid) if sid is not None else A.ReadResult(None, (), frozenset())

    def read_at(self, snapshot_id: int) -> A.ReadResult:
        self.table.refresh()
        snap = self.table.snapshot_by_id(snapshot_id)
        if snap is not None:
            self._record(snap)
        rows = self.table.scan(snapshot_id=snapshot_id)
        files = [t.data_file.file_path for t in self.table.plan_files(snapshot_id=snapshot_id)]
        return self._result(snapshot_id, rows, files)

    def read_filtered(self, snapshot_id: int, column: str, op: str, value) -> A.ReadResult:
        self.table.refresh()
        literal = repr(value) if isinstance(value, str) else str(value)
        row_filter = f"{column} {op} {literal}"
        rows = self.table.scan(row_filter, snapshot_id=snapshot_id)
        files = [t.data_file.file_path for t in self.table.plan_files(row_filter, snapshot_id=snapshot_id)]
        return self._result(snapshot_id, rows, files)

    def read_handle(self, writer: int) -> A.ReadResult:
        handle = self.handle(writer)                 # as it stands: no refresh
        snap = handle.current_snapshot()
        if snap is None:
            return A.ReadResult(None, (), frozenset())
        try:
            rows = handle.scan(snapshot_id=snap.snapshot_id)
            files = [t.data_file.file_path for t in handle.plan_files(snapshot_id=snap.snapshot_id)]
        except StoreError as e:
            raise A.UnreadableSnapshot(snap.snapshot_id, str(e)) from e
        return self._result(snap.snapshot_id, rows, files)

    def read_incremental(self, since_snapshot_id: int) -> A.ReadResult:
        self.table.refresh()
        head = self.table.metadata.current_snapshot_id
        rows = self.table.incremental_append_scan(since_snapshot_id)
        return A.ReadResult(head, tuple(sorted(rows.column(A.COLUMN).to_pylist())), None)

    def read_v3(self, snapshot_id: int | None = None) -> A.V3Read:
        from icefloe.conformance.engines import icefloe_v3
        return icefloe_v3.read_v3(self.table, self.tree, snapshot_id)

    # -- history and maintenance --------------------------------------------------------------

    def history(self) -> A.TableHistory:
        io = self.io[0]
        location = self.table.catalog.load(self.table.identifier)
        return A.history_from_metadata_log(location, read_metadata(io, location),
                                           lambda loc: read_metadata(io, loc), self._record)

    def _record(self, s) -> A.SnapshotRecord:
        """The snapshot's record, computed while its tree is readable and kept: once a
        snapshot is expired its manifest list may be gone, but its history is not."""
        found = self._records.get(s.snapshot_id)
        if found is not None:
            return found
        try:
            ch = self.tree.changes(s)
            files = frozenset(self.tree.live_data_paths(s))
        except StoreError:
            # Expired and cleaned up before anyone recorded it: its files are unknown.
            return A.SnapshotRecord(s.snapshot_id, s.parent_snapshot_id, s.operation or "", frozenset(),
                                    op_id=s.summary.get(A.OP_ID_PROPERTY))
        record = A.SnapshotRecord(
            s.snapshot_id, s.parent_snapshot_id, s.operation or "", files,
            frozenset(e.data_file.file_path for e in ch.added_data),
            frozenset(e.data_file.file_path for e in ch.removed_data),
            None, s.summary.get(A.OP_ID_PROPERTY))
        self._records[s.snapshot_id] = record
        return record

    def remove_orphans(self, older_than_ms: int) -> list:
        return self.maintenance.remove_orphan_files(older_than_ms)

    def close(self) -> None:
        for c in self._closers:
            close = getattr(c, "close", None)
            if close is not None:
                close()
        self._closers.clear()


def make_catalog(ctx: A.TableContext, store, hooks: A.FaultHooks | None = None, writer: int = 0):
    """The table's catalog as writer `writer` reaches it: SQLite (its COMMITs failing as the
    harness arms them, conformance.testing.faulty_sql), the S3 catalog, or memory."""
    if ctx.catalog_uri:
        from icefloe.impl.catalog.sql import SqlCatalog, connection_factory
        dialect, connect = connection_factory(ctx.catalog_uri)
        if hooks is not None:
            from icefloe.conformance.testing.faulty_sql import wrap_connect
            connect = wrap_connect(connect, lambda: hooks.on_commit(writer))
        return SqlCatalog(ctx.catalog_uri, dialect=dialect, connect=connect)
    if ctx.warehouse.startswith("s3://"):
        from icefloe.impl.catalog.s3 import S3Catalog
        return S3Catalog(store, ctx.warehouse)
    return MemoryCatalog()


class IcefloeEngine:
    name = "icefloe"
    capabilities = CAPABILITIES

    def make_catalog(self, handle: IcefloeTable, ctx: A.TableContext):
        catalog = make_catalog(ctx, handle.shared_store)
        handle._closers.append(catalog)
        return catalog

    def writer_catalog(self, handle: IcefloeTable, writer: int, hooks):
        """A memory warehouse's catalog as writer `writer` reaches it: a SQL catalog gives
        each writer its own connections (and COMMIT faults); icefloe's memory catalog is
        one object all writers share."""
        if not handle.ctx.catalog_uri or not writer:
            return handle.shared_catalog
        return handle._own(make_catalog(handle.ctx, handle.shared_store, hooks, writer))

    def create_table(self, ctx: A.TableContext) -> IcefloeTable:
        return IcefloeTable(self, ctx)


def engine() -> IcefloeEngine:
    return IcefloeEngine()
