"""DuckDB 1.5.5's iceberg extension writing through a REST catalog, as a black-box engine
(the contract: icefloe.conformance.adapter; what works and what it found: docs/verdicts.md).

What DuckDB 1.5.5 can do here (the 'peers' extra: duckdb, and the avro, httpfs and iceberg
extensions from PyPI, installed from their wheels, never downloaded): `ATTACH '<warehouse>'
AS ice (TYPE iceberg, ENDPOINT '<uri>', SECRET s)` on `icefloe serve`, then CREATE SCHEMA,
CREATE TABLE, INSERT, DELETE, UPDATE and MERGE, each SQL transaction one commit through
the REST catalog's multi-table `POST /v1/transactions/commit`; reads of the current
snapshot and time travel (`AT (VERSION => id)`). It has no rollback, no snapshot expiry,
no compaction and no incremental read, and it cannot put a property in a snapshot's
summary. Each writer is one DuckDB connection whose iceberg secret carries its access key
as a bearer token, so the server's fault layer (rest_faults, `tokens`) can tell it apart.

Operations: append `INSERT`; delete `DELETE ... WHERE`; overwrite `BEGIN; DELETE ...;
INSERT ...; COMMIT` (one commit, two snapshots). DuckDB does not retry a 409. Outcomes:
DuckDB reports every failed commit request alike, as a TransactionException "Failed to
commit" whether the answer was 409 or 5xx: it claims the commit failed, so the adapter
reports Conflict (a 409's reason says 409), and the probe judges the claim. Its snapshot
is the one the commit added (found by diffing the table's snapshots: no op id can be
recorded). History: the metadata chain the REST catalog names (its load-table answer).
"""
from __future__ import annotations

import glob
import os
import threading

from icefloe.conformance import adapter as A
from icefloe.conformance.engines.rest_view import RestCatalogView, committed_since

EXTENSIONS = ("avro", "httpfs", "iceberg")       # avro first: iceberg needs it
ATTACHED = "ice"

CAPABILITIES = A.Capabilities(
    operations=frozenset({A.APPEND, A.OVERWRITE, A.DELETE}), mode=A.BLACK_BOX, faults=frozenset(),
    swap_over_s3=False, reads=frozenset({A.READ_CURRENT, A.READ_AT}), isolation=A.SERIALIZABLE,
    stores=frozenset({"rest"}), transport=frozenset({A.TRANSPORT_REST}))   # its commits held and faulted at icefloe serve


class UnsupportedOperation(A.EngineSpecError):
    """The suite asked for something DuckDB cannot do (see CAPABILITIES)."""


def connect():
    """A DuckDB connection with the iceberg extension loaded from the installed wheels."""
    import duckdb
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    site = os.path.dirname(os.path.dirname(duckdb.__file__))
    for name in EXTENSIONS:
        # 1.5's wheels (duckdb-extension-NAME) put each in a package of its own; 1.4's
        # (duckdb-ext-NAME) share one, duckdb_ext/extensions/v1.4.4/<platform>/NAME.duckdb_extension
        found = (glob.glob(f"{site}/duckdb_extension_{name}/**/*.duckdb_extension", recursive=True)
                 or glob.glob(f"{site}/duckdb_ext/extensions/**/{name}.duckdb_extension", recursive=True))
        if not found:
            raise UnsupportedOperation(f"no duckdb {name} extension installed (the 'peers' extra)")
        con.execute(f"INSTALL '{found[0]}'")
        con.execute(f"LOAD {name}")
    return con


def quote(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def condition(where) -> str:
    if where is None:
        return "true"
    if not where:
        return "false"
    return f"{A.COLUMN} IN ({', '.join(quote(v) for v in sorted(where))})"


class DuckdbCommit:
    def __init__(self, handle: "DuckdbTable", writer: int, op: A.OpSpec):
        self.handle, self.writer, self.op = handle, writer, op

    def run(self) -> A.Outcome:
        import duckdb
        h, op = self.handle, self.op
        con = h.connection(self.writer)
        before = h.snapshot_ids(con)
        values = ", ".join(f"({quote(r)})" for r in op.rows)
        try:
            if op.kind == A.APPEND:
                con.execute(f"INSERT INTO {h.table} VALUES {values}")
            elif op.kind == A.DELETE:
                con.execute(f"DELETE FROM {h.table} WHERE {condition(op.where)}")
            elif op.kind == A.OVERWRITE:
                con.execute("BEGIN TRANSACTION")
                try:
                    con.execute(f"DELETE FROM {h.table} WHERE {condition(op.where)}")
                    if values:
                        con.execute(f"INSERT INTO {h.table} VALUES {values}")
                except Exception:
                    con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT")
            else:
                raise UnsupportedOperation(f"DuckDB adapter: no {op.kind!r} (see its capabilities)")
        except duckdb.TransactionException as e:
            return A.Conflict(f"TransactionException: {e}"[:400], 1)
        return committed_since(before, h.snapshot_ids(con))


class DuckdbTable(RestCatalogView):
    def __init__(self, ctx: A.TableContext):
        if not (ctx.catalog_uri or "").startswith(("http://", "https://")):
            raise UnsupportedOperation(f"the DuckDB adapter writes through a REST catalog, not {ctx.catalog_uri!r}")
        self.ctx = ctx
        namespace, name = ctx.identifier.rsplit(".", 1)
        self.namespace, self.name = namespace, name
        self.table = f"{ATTACHED}.{ctx.identifier}"
        self._connections: dict = {}
        self._lock = threading.Lock()
        con = self.connection(0)
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {ATTACHED}.{namespace}")
        con.execute(f"CREATE TABLE {self.table} ({A.COLUMN} VARCHAR NOT NULL)")

    def connection(self, writer: int):
        with self._lock:
            if writer not in self._connections:
                con = connect()
                con.execute(f"CREATE SECRET writer{writer} (TYPE iceberg, TOKEN {quote(self.ctx.access_key(writer))})")
                con.execute(f"ATTACH {quote(self.ctx.warehouse)} AS {ATTACHED} (TYPE iceberg, ENDPOINT "
                            f"{quote(self.ctx.catalog_uri)}, SECRET writer{writer})")
                self._connections[writer] = con
            return self._connections[writer]

    def snapshot_ids(self, con) -> list:
        """The table's snapshots, oldest first (as DuckDB lists them)."""
        rows = con.execute(f"SELECT sequence_number, snapshot_id FROM iceberg_snapshots({self.table}) "
                           f"ORDER BY sequence_number").fetchall()
        return [int(r[1]) for r in rows]

    def begin(self, writer: int, op: A.OpSpec) -> DuckdbCommit:
        if op.kind not in CAPABILITIES.operations:
            raise UnsupportedOperation(f"DuckDB adapter: no {op.kind!r} (see its capabilities)")
        return DuckdbCommit(self, writer, op)

    # -- readers (writer 0's connection) ---------------------------------------------------------

    def read_at(self, snapshot_id: int) -> A.ReadResult:
        rows = self.connection(0).execute(
            f"SELECT {A.COLUMN}, filename FROM {self.table} AT (VERSION => {int(snapshot_id)})").fetchall()
        return A.ReadResult(snapshot_id, tuple(sorted(r[0] for r in rows)), frozenset(r[1] for r in rows))

    def read_incremental(self, since_snapshot_id: int) -> A.ReadResult:
        raise UnsupportedOperation("DuckDB 1.5.5 has no incremental read")

    def remove_orphans(self, older_than_ms: int) -> list:
        raise UnsupportedOperation("DuckDB 1.5.5 has no orphan-file removal")

    def close(self) -> None:
        for con in self._connections.values():
            con.close()
        self._connections.clear()


class DuckdbEngine:
    name = "duckdb"
    capabilities = CAPABILITIES

    def create_table(self, ctx: A.TableContext) -> DuckdbTable:
        return DuckdbTable(ctx)


def engine() -> DuckdbEngine:
    """`icefloe conform --engine duckdb`: DuckDB 1.5.5 through a REST catalog (the 'peers' extra)."""
    return DuckdbEngine()
