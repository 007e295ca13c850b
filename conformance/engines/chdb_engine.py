"""ClickHouse (chdb 4.4.0: ClickHouse 26.9 in-process) writing Iceberg through a REST catalog, as
a black-box engine (the contract: icefloe.conformance.adapter; what it found: docs/verdicts.md).

ClickHouse writes Iceberg itself (its own Parquet, manifests and manifest lists) and commits
each INSERT or DELETE as one `POST /v1/namespaces/{ns}/tables/{t}` to the REST catalog,
asserting main's head it read (`assert-ref-snapshot-id`): not through pyiceberg or
Iceberg-Java. The adapter drives it with SQL through one chdb session: each writer is a
database of engine `DataLakeCatalog` on the harness's REST URI (`catalog_type = 'rest'`,
`vended_credentials = false`: the warehouse is this machine's disk) whose requests carry the
writer's access key as a bearer token (`auth_header`), so the suite's fault layer (rest_faults,
`tokens`) can tell writers apart. Settings it needs: allow_experimental_database_iceberg and
allow_experimental_insert_into_iceberg.

What ClickHouse 26.9 can do here, as probed (docs/verdicts.md): INSERT and DELETE (a position
delete file: merge-on-read) on a table of a DataLakeCatalog database, reads of the current
snapshot and time travel (`SETTINGS iceberg_snapshot_id = id`) with the `_path` virtual
column; the table is created by the adapter with the catalog's create-table request
(ClickHouse's own CREATE TABLE in a DataLakeCatalog database sends a location without a
scheme, which its own reader then refuses: "Unexpected location format"). It has no
overwrite by filter in one commit, no rollback (`ALTER TABLE ... EXECUTE
rollback_to_snapshot` is an unknown command), no way to put a property in a snapshot's
summary; expiry and compaction are experimental and not driven. Its commit requests are
re-sent after a 409 and after a 5xx (probed), so a commit's attempts are not counted here
(1, a lower bound; the suite counts the requests at the server).

Where it runs: ClickHouse writes local files only under its current directory ("File path
<warehouse> is not inside .", PATH_ACCESS_DENIED; a `user_files_path` given to the session
does not change it), and the suite's warehouses are under /dev/shm or /tmp: run `icefloe
conform` for this engine from `/` (docs/verdicts.md gives the command).

Outcomes: chdb raises one ChdbError for every failed statement. A commit the catalog refused
names it ("Iceberg catalog commit failed", "status code 409") -> Conflict; any other failure
of a commit statement -> Unknown, since ClickHouse re-sends after a 5xx and what its first
request did is not said.
"""
from __future__ import annotations

import json
import threading

from icefloe.conformance import adapter as A
from icefloe.conformance.engines.rest_view import RestCatalogView, committed_since

SETTINGS = ("allow_experimental_database_iceberg", "allow_experimental_insert_into_iceberg")
COMMIT_REFUSED = "Iceberg catalog commit failed"      # ClickHouse's message for a refused commit

CAPABILITIES = A.Capabilities(
    operations=frozenset({A.APPEND, A.DELETE}), mode=A.BLACK_BOX, faults=frozenset(),
    swap_over_s3=False, reads=frozenset({A.READ_CURRENT, A.READ_AT}), isolation=A.SERIALIZABLE,
    stores=frozenset({"rest"}), transport=frozenset({A.TRANSPORT_REST}))   # its commits held and faulted at icefloe serve


class UnsupportedOperation(A.EngineSpecError):
    """The suite asked for something ClickHouse cannot do here (see CAPABILITIES)."""


def quote(value) -> str:
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def condition(where) -> str:
    if where is None:
        return "1"
    if not where:
        return "0"
    return f"{A.COLUMN} IN ({', '.join(quote(v) for v in sorted(where))})"


_session = None
_session_lock = threading.Lock()


def session():
    """The process's one chdb session (chdb holds one ClickHouse instance per process)."""
    global _session
    with _session_lock:
        if _session is None:
            from chdb import session as chdb_session
            _session = chdb_session.Session()
            for name in SETTINGS:
                _session.query(f"SET {name} = 1")
        return _session


_databases: dict = {}
_databases_lock = threading.Lock()


def database_for(ctx: A.TableContext, writer: int) -> str:
    """Writer `writer`'s DataLakeCatalog database on ctx's REST catalog (made once)."""
    key = (ctx.catalog_uri, ctx.warehouse, ctx.access_key(writer))
    with _databases_lock:
        name = _databases.get(key)
        if name is None:
            name = _databases[key] = f"ice{len(_databases) + 1}w{writer}"
            token = ctx.access_key(writer).replace("'", "")
            session().query(
                f"CREATE DATABASE {name} ENGINE = DataLakeCatalog({quote(ctx.catalog_uri.rstrip('/') + '/v1')}) "
                f"SETTINGS catalog_type = 'rest', warehouse = {quote(ctx.warehouse)}, vended_credentials = false, "
                f"auth_header = 'Authorization: Bearer {token}'")
        return name


def outcome_of(e: Exception) -> A.Outcome:
    text = str(e)
    if COMMIT_REFUSED in text and "status code: 409" in text:
        return A.Conflict(f"{type(e).__name__}: {text}"[:400], 1)
    return A.Unknown(f"{type(e).__name__}: {text}"[:400], 1)


class ChdbCommit:
    def __init__(self, handle: "ChdbTable", writer: int, op: A.OpSpec):
        self.handle, self.writer, self.op = handle, writer, op

    def run(self) -> A.Outcome:
        h, op = self.handle, self.op
        table = h.name_for(self.writer)
        before = set(h.catalog_snapshot_ids())
        if op.kind == A.APPEND:
            statement = f"INSERT INTO {table} VALUES {', '.join(f'({quote(r)})' for r in op.rows)}"
        elif op.kind == A.DELETE:
            statement = f"DELETE FROM {table} WHERE {condition(op.where)}"
        else:
            raise UnsupportedOperation(f"ClickHouse adapter: no {op.kind!r} (see its capabilities)")
        try:
            session().query(statement)
        except Exception as e:  # noqa: BLE001 - chdb raises one error type for every failed statement
            return outcome_of(e)
        return committed_since(before, h.catalog_snapshot_ids())


class ChdbTable(RestCatalogView):
    def __init__(self, ctx: A.TableContext):
        if not (ctx.catalog_uri or "").startswith(("http://", "https://")):
            raise UnsupportedOperation(f"the ClickHouse adapter writes through a REST catalog, not {ctx.catalog_uri!r}")
        self.ctx = ctx
        self.namespace, self.name = ctx.identifier.rsplit(".", 1)
        self._ensure_namespace()
        location = f"{ctx.warehouse.rstrip('/')}/{self.namespace}/{self.name}"
        self._request(f"namespaces/{self.namespace}/tables", {
            "name": self.name, "location": location, "properties": {"format-version": "2"},
            "schema": {"type": "struct", "schema-id": 0,
                       "fields": [{"id": 1, "name": A.COLUMN, "required": True, "type": "string"}]}})

    def name_for(self, writer: int) -> str:
        return f"{database_for(self.ctx, writer)}.`{self.namespace}.{self.name}`"

    def begin(self, writer: int, op: A.OpSpec) -> ChdbCommit:
        if op.kind not in CAPABILITIES.operations:
            raise UnsupportedOperation(f"ClickHouse adapter: no {op.kind!r} (see its capabilities)")
        return ChdbCommit(self, writer, op)

    def read_at(self, snapshot_id: int) -> A.ReadResult:
        out = session().query(f"SELECT {A.COLUMN}, _path FROM {self.name_for(0)} "
                              f"SETTINGS iceberg_snapshot_id = {int(snapshot_id)}", "JSONCompact")
        rows = json.loads(str(out) or '{"data": []}')["data"]
        return A.ReadResult(snapshot_id, tuple(sorted(r[0] for r in rows)), frozenset(r[1] for r in rows))

    def read_incremental(self, since_snapshot_id: int) -> A.ReadResult:
        raise UnsupportedOperation("ClickHouse 26.9 has no incremental read")

    def remove_orphans(self, older_than_ms: int) -> list:
        raise UnsupportedOperation("ClickHouse 26.9 has no orphan-file removal")

    def close(self) -> None:
        pass


class ChdbEngine:
    name = "clickhouse"
    capabilities = CAPABILITIES

    def create_table(self, ctx: A.TableContext) -> ChdbTable:
        return ChdbTable(ctx)


def engine() -> ChdbEngine:
    """`icefloe conform --engine icefloe.conformance.engines.chdb_engine:engine`: ClickHouse 26.9
    (chdb 4.4.0) through a REST catalog (`make peer-venv-chdb-4.4.0`)."""
    return ChdbEngine()
