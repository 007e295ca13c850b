"""Sail 0.7.2 (pysail: LakeSail's engine in Rust, spoken to through the Spark Connect
protocol) writing Iceberg through a REST catalog, as a black-box engine (the contract:
icefloe.conformance.adapter; what it found: docs/verdicts.md).

Sail writes Iceberg itself (its own Rust Iceberg writer: Parquet, manifests, manifest list)
and commits each statement as one `POST /v1/namespaces/{ns}/tables/{t}` to the REST
catalog, asserting main's head it read (`assert-ref-snapshot-id`), the table's uuid, its
schema id and last column id: it does not go through pyiceberg or Iceberg-Java. The engine
runs in this process (`pysail.spark.SparkConnectServer` on 127.0.0.1, a port of its own)
and the adapter talks to it as a Spark Connect client (PySpark's connect client), one
session per writer and one for the reader.

Writers are told apart at the catalog by their bearer token: Sail's catalogs are configured
when its server starts (`SAIL_CATALOG__LIST`, one `iceberg-rest` catalog `w<n>` per writer,
`bearer_access_token` = the writer's access key), so the adapter starts one Sail server per
REST catalog URI and writer set (`server_for`), and the suite's fault layer maps tokens to
writers (rest_faults, `tokens`).

What Sail 0.7.2 can do here, as probed (docs/verdicts.md): CREATE TABLE ... USING iceberg
LOCATION, INSERT, DELETE ... WHERE (copy-on-write: whole data files rewritten), INSERT
OVERWRITE, MERGE INTO, reads of the current snapshot and time travel (`VERSION AS OF id`).
It has no CALL procedures (no rollback, expiry or compaction), no metadata tables
(`t.snapshots` is refused), no incremental read, no way to put a property in a snapshot's
summary, and no `input_file_name()`: the adapter finds a commit's snapshot by diffing the
table's snapshots (the catalog's load-table answer) and reads data files of the history
from the manifests Sail wrote (fastavro); the files a read touched are unknown (None).

Operations: append `INSERT INTO t VALUES ...`; delete `DELETE FROM t WHERE <filter>`;
overwrite `MERGE INTO t USING (VALUES ...) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *
WHEN NOT MATCHED BY SOURCE AND <filter> THEN DELETE` (the rows matching the filter replaced
by the new ones, one commit). Outcomes: how Sail reports each answer of the commit
endpoint is in `outcome_of` (measured by the probe, docs/verdicts.md).
"""
from __future__ import annotations

import json
import os
import threading

from icefloe.conformance import adapter as A
from icefloe.conformance.engines.metadata_json import local_path
from icefloe.conformance.engines.rest_view import RestCatalogView, committed_since

READER = "reader"
SERVERS_MAX = 4                  # Sail servers kept at once (one per REST catalog URI in use)
CATALOG_ENV = "SAIL_CATALOG__LIST"
DEFAULT_CATALOG_ENV = "SAIL_CATALOG__DEFAULT_CATALOG"
FAILED_COMMIT = "Failed to commit Iceberg table"   # Sail's message for a commit the catalog refused
REFUSED_RETRY = "Iceberg commit failed: reference"  # ... and for a retry it refused itself (main moved)
DATA_CONTENT, ENTRY_DELETED = 0, 2   # manifest_file.content / manifest_entry.status (spec: Manifests)

CAPABILITIES = A.Capabilities(
    operations=frozenset({A.APPEND, A.OVERWRITE, A.DELETE}), mode=A.BLACK_BOX, faults=frozenset(),
    swap_over_s3=False, reads=frozenset({A.READ_CURRENT, A.READ_AT}), isolation=A.SERIALIZABLE,
    stores=frozenset({"rest"}), transport=frozenset({A.TRANSPORT_REST}))   # its commits held and faulted at icefloe serve


class UnsupportedOperation(A.EngineSpecError):
    """The suite asked for something Sail cannot do (see CAPABILITIES)."""


def quote(value) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def condition(where) -> str:
    if where is None:
        return "true"
    if not where:
        return "false"
    return f"{A.COLUMN} IN ({', '.join(quote(v) for v in sorted(where))})"


# -- one Sail server per catalog URI (its catalogs are fixed when it starts) -----------------------

_servers: dict = {}
_servers_lock = threading.Lock()


class SailServer:
    """A Sail Spark Connect server on 127.0.0.1 whose catalogs `w<n>` are the REST catalog at
    `uri`, each with writer n's bearer token."""

    def __init__(self, uri: str, warehouse: str, tokens: dict):
        from pysail.spark import SparkConnectServer
        catalogs = ", ".join(
            f'{{type="iceberg-rest", name="w{w}", uri={json.dumps(uri)}, warehouse={json.dumps(warehouse)}, '
            f'bearer_access_token={json.dumps(token)}}}' for w, token in sorted(tokens.items()))
        saved = {k: os.environ.get(k) for k in (CATALOG_ENV, DEFAULT_CATALOG_ENV)}
        try:      # Sail reads its configuration from the environment when the server starts
            os.environ[CATALOG_ENV] = f"[{catalogs}]"
            os.environ[DEFAULT_CATALOG_ENV] = f"w{min(tokens)}"
            self.server = SparkConnectServer("127.0.0.1", 0)
            self.server.start(background=True)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        host, port = self.server.listening_address
        self.url = f"sc://{host}:{port}"

    def session(self):
        from pyspark.sql import SparkSession
        return SparkSession.builder.remote(self.url).create()

    def stop(self) -> None:
        self.server.stop()


def server_for(ctx: A.TableContext) -> SailServer:
    key = (ctx.catalog_uri, ctx.warehouse, tuple(sorted(ctx.access_keys.items())))
    with _servers_lock:
        server = _servers.get(key)
        if server is None:
            while len(_servers) >= SERVERS_MAX:                # the oldest URI's server is done with
                _servers.pop(next(iter(_servers))).stop()
            tokens = {w: ctx.access_key(w) for w in (ctx.access_keys or {0: None})}
            server = _servers[key] = SailServer(ctx.catalog_uri, ctx.warehouse, tokens)
        return server


# -- outcomes ------------------------------------------------------------------------------------------

def outcome_of(e: Exception) -> A.Outcome | None:
    """What Sail's error for a failed statement says about its commit, or None when it is no
    commit failure (then the adapter lets it through). Sail 0.7.2 re-sends a commit the
    catalog answered 409 (probed: after one 409 the second request commits); its error names
    the catalog's last answer, "Failed to commit Iceberg table T: response error: status
    code 409 Conflict" -> Conflict (not applied). After a 409 Sail reloads the table and
    re-sends only when main's head is still the one it read; otherwise it stops without
    sending ("Iceberg commit failed: reference 'main' expected snapshot Some(a) but found
    Some(b)") -> Conflict: a loop given up early, which the model allows (ci's first run:
    a delete behind a concurrent append). Any other failed commit -> Unknown: a 5xx
    ("status code 502 Bad Gateway"), and an answer whose body was lost ("unknown error:
    status code 200 OK"), neither of which says the commit was not applied. Attempts are not
    reported by Sail: counted 1 (a lower bound; the suite counts the requests at the server)."""
    text = str(e)
    if REFUSED_RETRY in text:
        return A.Conflict(f"{type(e).__name__}: {text}"[:400], 1)
    if FAILED_COMMIT not in text:
        return None
    if "status code 409" in text:
        return A.Conflict(f"{type(e).__name__}: {text}"[:400], 1)
    return A.Unknown(f"{type(e).__name__}: {text}"[:400], 1)


class SailCommit:
    def __init__(self, handle: "SailTable", writer: int, op: A.OpSpec):
        self.handle, self.writer, self.op = handle, writer, op

    def run(self) -> A.Outcome:
        h, op = self.handle, self.op
        table = h.name_for(self.writer)
        values = ", ".join(f"({quote(r)})" for r in op.rows)
        before = set(h.catalog_snapshot_ids())
        if op.kind == A.APPEND:
            statement = f"INSERT INTO {table} VALUES {values}"
        elif op.kind == A.DELETE:
            statement = f"DELETE FROM {table} WHERE {condition(op.where)}"
        elif op.kind == A.OVERWRITE:
            # Sail refuses column aliases on a MERGE source (`(VALUES ...) AS s(id)`): a query
            rows = " UNION ALL ".join(f"SELECT {quote(r)} AS {A.COLUMN}" for r in op.rows) or \
                f"SELECT CAST(NULL AS STRING) AS {A.COLUMN} WHERE false"
            source = f"({rows}) s"
            statement = (f"MERGE INTO {table} t USING {source} ON t.{A.COLUMN} = s.{A.COLUMN} "
                         f"WHEN NOT MATCHED THEN INSERT * "
                         f"WHEN NOT MATCHED BY SOURCE AND {condition(op.where).replace(A.COLUMN, 't.' + A.COLUMN)} "
                         f"THEN DELETE")
        else:
            raise UnsupportedOperation(f"Sail adapter: no {op.kind!r} (see its capabilities)")
        try:
            h.session(self.writer).sql(statement).collect()
        except Exception as e:  # noqa: BLE001 - mapped below; anything else goes through
            outcome = outcome_of(e)
            if outcome is None:
                raise
            return outcome
        return committed_since(before, h.catalog_snapshot_ids())


class SailTable(RestCatalogView):
    NO_FILES = None                      # Sail's reads cannot name the files they touched

    def __init__(self, ctx: A.TableContext):
        if not (ctx.catalog_uri or "").startswith(("http://", "https://")):
            raise UnsupportedOperation(f"the Sail adapter writes through a REST catalog, not {ctx.catalog_uri!r}")
        self.ctx = ctx
        self.namespace, self.name = ctx.identifier.rsplit(".", 1)
        self.server = server_for(ctx)
        self._sessions: dict = {}
        self._lock = threading.Lock()
        self._ensure_namespace()
        location = f"{ctx.warehouse.rstrip('/')}/{self.namespace}/{self.name}"
        self.session(0).sql(f"CREATE TABLE {self.name_for(0)} ({A.COLUMN} STRING NOT NULL) USING iceberg "
                            f"LOCATION {quote(location)}").collect()

    def name_for(self, writer) -> str:
        catalog = f"w{writer}" if writer != READER else f"w{min(self.ctx.access_keys or {0: None})}"
        return f"{catalog}.{self.namespace}.{self.name}"

    def session(self, writer):
        with self._lock:
            if writer not in self._sessions:
                self._sessions[writer] = self.server.session()
            return self._sessions[writer]

    # -- readers (Sail's own reads) ----------------------------------------------------------------------

    def begin(self, writer: int, op: A.OpSpec) -> SailCommit:
        if op.kind not in CAPABILITIES.operations:
            raise UnsupportedOperation(f"Sail adapter: no {op.kind!r} (see its capabilities)")
        return SailCommit(self, writer, op)

    def read_at(self, snapshot_id: int) -> A.ReadResult:
        rows = self.session(READER).sql(
            f"SELECT {A.COLUMN} FROM {self.name_for(READER)} VERSION AS OF {int(snapshot_id)}").collect()
        return A.ReadResult(snapshot_id, tuple(sorted(r[0] for r in rows)), None)

    def read_incremental(self, since_snapshot_id: int) -> A.ReadResult:
        raise UnsupportedOperation("Sail 0.7.2 has no incremental read")

    def files_of(self, snapshot, loaded: dict) -> frozenset:
        """Read from the manifests Sail wrote: its reads cannot name the files they touched."""
        raw = next((s for s in loaded["metadata"].get("snapshots", []) if s["snapshot-id"] == snapshot.snapshot_id),
                   None)
        return live_data_files(raw["manifest-list"]) if raw else frozenset()

    def remove_orphans(self, older_than_ms: int) -> list:
        raise UnsupportedOperation("Sail 0.7.2 has no orphan-file removal")

    def close(self) -> None:
        for session in self._sessions.values():
            try:
                session.stop()
            except Exception:  # noqa: BLE001 - a session whose server is gone is closed already
                pass
        self._sessions.clear()


def live_data_files(manifest_list: str) -> frozenset:
    """The data files a snapshot holds (spec: Manifests; entries not DELETED in its data
    manifests), read from the manifest list Sail wrote."""
    import fastavro
    live = set()
    with open(local_path(manifest_list), "rb") as f:
        manifests = list(fastavro.reader(f))
    for m in manifests:
        if m.get("content", DATA_CONTENT) != DATA_CONTENT:
            continue
        with open(local_path(m["manifest_path"]), "rb") as f:
            for entry in fastavro.reader(f):
                data_file = entry["data_file"]
                if entry["status"] != ENTRY_DELETED and data_file.get("content", DATA_CONTENT) == DATA_CONTENT:
                    live.add(data_file["file_path"])
    return frozenset(live)


class SailEngine:
    name = "sail"
    capabilities = CAPABILITIES

    def create_table(self, ctx: A.TableContext) -> SailTable:
        return SailTable(ctx)


def engine() -> SailEngine:
    """`icefloe conform --engine icefloe.conformance.engines.sail_engine:engine`: Sail 0.7.2
    through a REST catalog (`make peer-venv-sail-0.7.2`)."""
    return SailEngine()
