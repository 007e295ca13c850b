"""A SQL catalog in the Iceberg JDBC catalog's layout (spec/PROTOCOL.md, "The catalog's swap";
model and TLA+ `Swap`; its database errors are `SwapFails` or an unknown outcome).

The tables are those of Iceberg's JdbcCatalog and pyiceberg's SqlCatalog, so either can
open the same database: `iceberg_tables` (one row per table, the pointer in
`metadata_location`) and `iceberg_namespace_properties`. The `iceberg_type` column
(schema "v1", which marks tables apart from views) is used when the database has it.

The swap is one conditional UPDATE in an explicit transaction. Its outcome is decided by
how far the request got: an error before COMMIT is sent leaves nothing applied (the
database rolls the transaction back), so it is SwapRejected; an error on COMMIT (a lost
connection, a timeout) may or may not have committed, so it is SwapUnknown. SQLite's
"database is locked" on COMMIT in fact leaves the transaction uncommitted, but it is
still reported as SwapUnknown: Unknown is always safe, and one rule for every database
is easier to trust.

Dialect differences (paramstyle, how a write transaction opens, connecting) live in
`Dialect` and `connection_factory` only; connections are plain DB-API ones in autocommit
mode, with transactions opened and closed by explicit statements. One connection per thread.
"""
from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable

from icefloe.impl.catalog.base import (
    CatalogUnavailable,
    NamespaceAlreadyExists, NamespaceNotEmpty, NoSuchNamespace,
    NoSuchTable,
    TableAlreadyExists,
    TableIdentifier,
)
from icefloe.impl.outcomes import SwapRejected, SwapResult, Swapped, SwapUnknown, require

DEFAULT_CATALOG_NAME = "icefloe"
BUSY_TIMEOUT_MS_DEFAULT = 5_000
TABLE_TYPE = "TABLE"
NAMESPACE_MINIMAL_PROPERTIES = {"exists": "true"}
CREATE_ATTEMPTS_MAX = 3  # an IntegrityError on the namespace row can race; the table row cannot loop
DDL_ATTEMPTS_MAX = 3  # concurrent CREATE TABLE IF NOT EXISTS on PostgreSQL: the loser runs it again

DDL = (
    """CREATE TABLE IF NOT EXISTS iceberg_tables (
        catalog_name VARCHAR(255) NOT NULL,
        table_namespace VARCHAR(255) NOT NULL,
        table_name VARCHAR(255) NOT NULL,
        metadata_location VARCHAR(1000),
        previous_metadata_location VARCHAR(1000),
        iceberg_type VARCHAR(5),
        PRIMARY KEY (catalog_name, table_namespace, table_name))""",
    """CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (
        catalog_name VARCHAR(255) NOT NULL,
        namespace VARCHAR(255) NOT NULL,
        property_key VARCHAR(255) NOT NULL,
        property_value VARCHAR(1000) NOT NULL,
        PRIMARY KEY (catalog_name, namespace, property_key))""",
)


@dataclass(frozen=True)
class Dialect:
    """Everything that differs between the databases this catalog runs on."""
    name: str
    placeholder: str  # the DB-API paramstyle marker: "?" (qmark) or "%s" (format)
    begin_write: str  # opens a transaction that will write (SQLite: take the write lock now)

    def sql(self, text: str) -> str:
        """Statements are written with `?` markers (and contain no literal `?` or `%`)."""
        assert "%" not in text, text
        return text.replace("?", self.placeholder)


SQLITE = Dialect("sqlite", "?", "BEGIN IMMEDIATE")
# READ COMMITTED whatever the server's default_transaction_isolation: a swap that waited on
# the row lock re-checks `metadata_location = :expected` against the winner's row (0 rows:
# SwapRejected) and its SELECT then sees the winner's location. Under REPEATABLE READ or
# SERIALIZABLE the waiting UPDATE fails with a serialization error instead, a rejection that
# cannot name the actual location. Tested on a real server in tests/postgres.
POSTGRESQL = Dialect("postgresql", "%s", "BEGIN ISOLATION LEVEL READ COMMITTED")

ConnectionFactory = Callable[[], Any]


def sqlite_path(uri: str) -> str:
    """`sqlite:///relative/path.db` -> `relative/path.db`; `sqlite:////abs/path.db` -> `/abs/path.db`
    (the SQLAlchemy convention pyiceberg uses)."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix):
        raise ValueError(f"not a sqlite URI: {uri!r}")
    path = uri[len(prefix):]
    if not path or path == ":memory:" or "?" in path:
        # Each thread has its own connection, and each would see its own in-memory database.
        raise ValueError(f"need a database file path (no :memory:, no query string): {uri!r}")
    return path


def connection_factory(uri: str, busy_timeout_ms: int = BUSY_TIMEOUT_MS_DEFAULT, *,
                       read_only: bool = False) -> tuple[Dialect, ConnectionFactory]:
    """The dialect and a function that opens one autocommit DB-API connection for `uri`.
    `read_only`: the connection can write nothing, and connecting creates nothing (a SQLite
    file that does not exist is an error naming it, not a new empty database)."""
    if uri.startswith("sqlite:"):
        path = sqlite_path(uri)

        def connect_sqlite():
            # isolation_level=None: the module issues no implicit BEGIN; ours are explicit.
            if not read_only:
                return sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None,
                                       check_same_thread=False)
            if not os.path.isfile(path):
                raise sqlite3.OperationalError(f"no catalog database at {path} (a read-only command creates none)")
            return sqlite3.connect(f"{Path(path).absolute().as_uri()}?mode=ro", uri=True,
                                   timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False)
        return SQLITE, connect_sqlite
    if uri.startswith(("postgresql:", "postgresql+psycopg2:")):
        dsn = uri.replace("postgresql+psycopg2:", "postgresql:", 1)
        options = f"-c lock_timeout={busy_timeout_ms}" + (" -c default_transaction_read_only=on" if read_only else "")

        def connect_postgresql():
            import psycopg2  # optional dependency, only needed for PostgreSQL

            conn = psycopg2.connect(dsn, options=options)
            conn.autocommit = True
            return conn
        return POSTGRESQL, connect_postgresql
    raise ValueError(f"unsupported catalog URI: {uri!r}")


def _escape_like(text: str) -> str:
    return text.replace("!", "!!").replace("_", "!_").replace("%", "!%")


class SqlCatalog:
    def __init__(self, uri: str | None = None, *, name: str = DEFAULT_CATALOG_NAME,
                 dialect: Dialect | None = None, connect: ConnectionFactory | None = None,
                 busy_timeout_ms: int = BUSY_TIMEOUT_MS_DEFAULT, init_tables: bool = True,
                 read_only: bool = False):
        """`read_only` (for commands that only read, e.g. `icefloe scan`): connections that
        can write nothing and create no database file, and no tables created."""
        if connect is None:
            if uri is None:
                raise ValueError("need a uri or a connection factory")
            dialect, connect = connection_factory(uri, busy_timeout_ms, read_only=read_only)
        init_tables = init_tables and not read_only
        self.name = name
        self.dialect = dialect or SQLITE
        self._connect = connect
        self._local = threading.local()
        self._connections: list[Any] = []
        self._connections_lock = threading.Lock()
        if init_tables:
            for statement in DDL:
                self._execute_ddl(statement)
        self.schema_version = self._detect_schema_version()

    # -- connections ------------------------------------------------------------------

    def _conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = self._connect()
            except Exception as e:  # noqa: BLE001 - the factory's driver decides the error types
                raise CatalogUnavailable(f"{self.dialect.name}: cannot connect: {e}") from e
            self._local.conn = conn
            with self._connections_lock:
                self._connections.append(conn)
        return conn

    def _discard_conn(self) -> None:
        """After an error of unknown effect the connection's state is unknown too: drop it
        (closing rolls back anything still open)."""
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with self._connections_lock:
                if conn in self._connections:
                    self._connections.remove(conn)
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - the connection is being thrown away
                pass

    def close(self) -> None:
        """Close every connection; a later call opens a fresh one for its thread."""
        with self._connections_lock:
            connections, self._connections = self._connections, []
            self._local = threading.local()
        for conn in connections:
            conn.close()

    def _execute(self, statement: str, params: tuple = ()) -> list[tuple]:
        """One statement in autocommit mode; database errors become CatalogUnavailable."""
        conn = self._conn()
        try:
            cur = conn.cursor()
            cur.execute(self.dialect.sql(statement), params)
            return cur.fetchall() if cur.description else []
        except conn.Error as e:
            self._discard_conn()  # a broken connection must not be reused by this thread
            raise CatalogUnavailable(f"{self.dialect.name}: {e}") from e

    def _execute_ddl(self, statement: str) -> None:
        """CREATE TABLE IF NOT EXISTS is not atomic on PostgreSQL: sessions creating the same
        table at once all pass the check, and all but one then fail on a unique index of the
        system catalog (pg_type) or with "already exists", although the table now exists.
        Such a loser runs the statement again, and it is a no-op."""
        for attempt in range(1, DDL_ATTEMPTS_MAX + 1):
            conn = self._conn()
            try:
                self._execute(statement)
                return
            except CatalogUnavailable as e:
                lost_race = isinstance(e.__cause__, (conn.IntegrityError, conn.ProgrammingError))
                if attempt == DDL_ATTEMPTS_MAX or not lost_race:
                    raise

    def _detect_schema_version(self) -> str:
        """"v1" if iceberg_tables has the iceberg_type column, else "v0" (an older database;
        the column is then never written). Read from the cursor description, so an
        unreachable database is an error rather than a wrong answer."""
        conn = self._conn()
        try:
            cur = conn.cursor()
            cur.execute("SELECT * FROM iceberg_tables WHERE 1 = 0")
            columns = {d[0].lower() for d in cur.description}
            cur.fetchall()
        except conn.Error as e:
            self._discard_conn()
            raise CatalogUnavailable(f"{self.dialect.name}: cannot read iceberg_tables: {e}") from e
        missing = {"catalog_name", "table_namespace", "table_name", "metadata_location"} - columns
        if missing:
            raise CatalogUnavailable(f"{self.dialect.name}: the table iceberg_tables is not an Iceberg JDBC "
                                     f"catalog table (no column {', '.join(sorted(missing))})")
        return "v1" if "iceberg_type" in columns else "v0"

    def _type_filter(self) -> str:
        if self.schema_version == "v1":
            return f" AND (iceberg_type = '{TABLE_TYPE}' OR iceberg_type IS NULL)"
        return ""

    # -- namespaces -------------------------------------------------------------------

    def namespace_exists(self, namespace: tuple[str, ...]) -> bool:
        """A namespace exists if it, or a namespace below it, has a table or a property."""
        return self._namespace_exists(self._execute, ".".join(namespace))

    def _namespace_exists(self, run, namespace: str) -> bool:
        below = _escape_like(namespace) + ".%"
        for table, column in (("iceberg_tables", "table_namespace"), ("iceberg_namespace_properties", "namespace")):
            rows = run(f"SELECT 1 FROM {table} WHERE catalog_name = ? AND ({column} = ? OR {column} LIKE ? ESCAPE '!')"
                       " LIMIT 1", (self.name, namespace, below))
            if rows:
                return True
        return False

    def create_namespace(self, namespace: tuple[str, ...], properties: dict[str, str] | None = None) -> None:
        require(bool(namespace) and all(namespace), f"not a namespace: {namespace!r}")
        ns = ".".join(namespace)
        with self._write_transaction() as run:
            if self._namespace_exists(run, ns):
                raise NamespaceAlreadyExists(ns)
            self._insert_namespace(run, ns, properties or NAMESPACE_MINIMAL_PROPERTIES)

    def _insert_namespace(self, run, namespace: str, properties: dict[str, str]) -> None:
        for key, value in properties.items():
            run("INSERT INTO iceberg_namespace_properties (catalog_name, namespace, property_key, property_value)"
                " VALUES (?, ?, ?, ?)", (self.name, namespace, key, value))

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        """Remove an empty namespace (its property rows); NamespaceNotEmpty while it or a
        namespace below it holds a table, NoSuchNamespace if it does not exist."""
        require(bool(namespace) and all(namespace), f"not a namespace: {namespace!r}")
        ns = ".".join(namespace)
        with self._write_transaction() as run:
            below = _escape_like(ns) + ".%"
            if run("SELECT 1 FROM iceberg_tables WHERE catalog_name = ? AND (table_namespace = ? OR table_namespace"
                   " LIKE ? ESCAPE '!') LIMIT 1", (self.name, ns, below)):
                raise NamespaceNotEmpty(f"namespace {ns} holds tables: drop them first")
            run("DELETE FROM iceberg_namespace_properties WHERE catalog_name = ? AND namespace = ?", (self.name, ns))
            if run.rowcount == 0:
                raise NoSuchNamespace(ns)

    def list_namespaces(self) -> list[tuple[str, ...]]:
        rows = self._execute("SELECT table_namespace FROM iceberg_tables WHERE catalog_name = ?"
                             " UNION SELECT namespace FROM iceberg_namespace_properties WHERE catalog_name = ?",
                             (self.name, self.name))
        return sorted({tuple(r[0].split(".")) for r in rows})

    # -- tables -----------------------------------------------------------------------

    def load(self, identifier: TableIdentifier) -> str:
        rows = self._execute("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ?"
                             " AND table_namespace = ? AND table_name = ?" + self._type_filter(),
                             (self.name, identifier.namespace_str, identifier.name))
        if not rows or rows[0][0] is None:
            raise NoSuchTable(str(identifier))
        return rows[0][0]

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]:
        rows = self._execute("SELECT table_name FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ?"
                             + self._type_filter(), (self.name, ".".join(namespace)))
        return sorted(TableIdentifier(tuple(namespace), r[0]) for r in rows)

    def table_locations(self) -> dict[str, str]:
        """Every table of this catalog (its name as text, since a foreign writer's name may
        not parse) and its current metadata location, in one query."""
        rows = self._execute("SELECT table_namespace, table_name, metadata_location FROM iceberg_tables"
                             " WHERE catalog_name = ?" + self._type_filter(), (self.name,))
        return {f"{r[0]}.{r[1]}": r[2] for r in rows if r[2]}

    def create(self, identifier: TableIdentifier, metadata_location: str) -> None:
        """Register a table (its metadata file already written); creates its namespace if needed."""
        ns = identifier.namespace_str
        columns = "catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location"
        values: tuple = (self.name, ns, identifier.name, metadata_location, None)
        if self.schema_version == "v1":
            columns += ", iceberg_type"
            values += (TABLE_TYPE,)
        marks = ", ".join("?" * len(values))
        for _ in range(CREATE_ATTEMPTS_MAX):
            conn = self._conn()
            try:
                with self._write_transaction() as run:
                    if not self._namespace_exists(run, ns):
                        self._insert_namespace(run, ns, NAMESPACE_MINIMAL_PROPERTIES)
                    run(f"INSERT INTO iceberg_tables ({columns}) VALUES ({marks})", values)
                return
            except CatalogUnavailable as e:
                if not isinstance(e.__cause__, conn.IntegrityError):
                    raise
                try:
                    self.load(identifier)
                except NoSuchTable:
                    continue  # the namespace row raced with another creator's; try again
                raise TableAlreadyExists(str(identifier)) from None
        raise CatalogUnavailable(f"create {identifier}: namespace row kept racing")

    def rename(self, source: TableIdentifier, destination: TableIdentifier) -> None:
        """Rename a table: its row's name only; its files stay where they are (Iceberg's
        renameTable). TableAlreadyExists, NoSuchTable; one transaction."""
        with self._write_transaction() as run:
            if run("SELECT 1 FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?",
                   (self.name, destination.namespace_str, destination.name)):
                raise TableAlreadyExists(str(destination))
            run("UPDATE iceberg_tables SET table_namespace = ?, table_name = ? WHERE catalog_name = ?"
                " AND table_namespace = ? AND table_name = ?" + self._type_filter(),
                (destination.namespace_str, destination.name, self.name, source.namespace_str, source.name))
            if run.rowcount != 1:
                raise NoSuchTable(str(source))

    def drop(self, identifier: TableIdentifier) -> None:
        with self._write_transaction() as run:
            run("DELETE FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?"
                + self._type_filter(), (self.name, identifier.namespace_str, identifier.name))
            if run.rowcount == 0:
                raise NoSuchTable(str(identifier))

    def swap(self, identifier: TableIdentifier, expected_location: str, new_location: str) -> SwapResult:
        require(expected_location != new_location, "a swap must move the pointer")
        key = (self.name, identifier.namespace_str, identifier.name)
        stage = "connect"
        try:
            conn = self._conn()
            cur = conn.cursor()
            stage = "begin"
            cur.execute(self.dialect.begin_write)
            stage = "update"
            cur.execute(self.dialect.sql(
                "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ?"
                " WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ?"
                + self._type_filter()), (new_location, expected_location, *key, expected_location))
            if cur.rowcount not in (0, 1):   # a foreign table without the JDBC catalog's key
                cur.execute("ROLLBACK")
                return SwapRejected(expected_location, None, f"{cur.rowcount} catalog rows for {identifier}: "
                                    "iceberg_tables lacks the Iceberg JDBC catalog's primary key; nothing changed")
            if cur.rowcount == 1:
                stage = "commit"
                cur.execute("COMMIT")
                return Swapped(new_location)
            stage = "read"
            cur.execute(self.dialect.sql(
                "SELECT metadata_location FROM iceberg_tables"
                " WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?" + self._type_filter()), key)
            row = cur.fetchone()
            cur.execute("ROLLBACK")
        except Exception as e:  # noqa: BLE001 - every failure must become a result, and which one matters
            self._discard_conn()
            if stage == "commit":
                return SwapUnknown(expected_location, new_location, f"error on COMMIT: {e!r}")
            return SwapRejected(expected_location, None, f"database error at {stage}, before COMMIT: {e!r}",
                                unavailable=True)
        if row is None:
            return SwapRejected(expected_location, None, "no such table")
        return SwapRejected(expected_location, row[0], "metadata location changed")

    # -- transactions -----------------------------------------------------------------

    def _write_transaction(self):
        return _WriteTransaction(self)


class _WriteTransaction:
    """`with` block running statements in one write transaction; commits on success, rolls
    back on any error; database errors become CatalogUnavailable. For create and drop
    only: swap spells out its stages itself because their outcomes differ."""

    def __init__(self, catalog: SqlCatalog):
        self.catalog = catalog
        self.rowcount = -1

    def __enter__(self):
        self.conn = self.catalog._conn()
        self.cur = self.conn.cursor()
        try:
            self.cur.execute(self.catalog.dialect.begin_write)
        except self.conn.Error as e:
            self.catalog._discard_conn()
            raise CatalogUnavailable(f"{self.catalog.dialect.name}: {e}") from e
        return self

    def __call__(self, statement: str, params: tuple = ()) -> list[tuple]:
        try:
            self.cur.execute(self.catalog.dialect.sql(statement), params)
        except self.conn.Error as e:
            raise CatalogUnavailable(f"{self.catalog.dialect.name}: {e}") from e
        self.rowcount = self.cur.rowcount
        return self.cur.fetchall() if self.cur.description else []

    def __exit__(self, exc_type, exc, tb):
        try:
            self.cur.execute("COMMIT" if exc_type is None else "ROLLBACK")
        except self.conn.Error as e:
            self.catalog._discard_conn()
            if exc_type is None:
                raise CatalogUnavailable(f"{self.catalog.dialect.name}: error on COMMIT, outcome unknown: {e}") from e
        return False
