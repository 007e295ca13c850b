"""The REST server's store on the SQL catalog (the Iceberg JDBC catalog's tables; spec/
PROTOCOL.md 3 "The catalog's swap"): every pointer move of a commit, the new table rows
of a create, and the request's Idempotency-Key in ONE database transaction.

A friend of impl/catalog/sql.py: it uses that catalog's connections, dialect and staged
error rules (an error before COMMIT leaves nothing applied: SwapRejected; an error on
COMMIT: SwapUnknown), so two servers on one PostgreSQL database serialize on the same row
locks as every other writer of the catalog. The keys live in `icefloe_rest_idempotency`;
a key's row is inserted in the commit's own transaction, so "the commit landed" and "the
key is recorded" are one fact: a replay after a lost response finds the key exactly when
the commit landed. A second request with the same key racing the first fails on the key's
primary key and is answered from the first's record.
"""
from __future__ import annotations

from icefloe.impl.catalog.base import NamespaceAlreadyExists, TableIdentifier
from icefloe.impl.catalog.sql import NAMESPACE_MINIMAL_PROPERTIES, TABLE_TYPE, SqlCatalog, _escape_like
from icefloe.impl.outcomes import SwapRejected, SwapResult, Swapped, SwapUnknown
from icefloe.impl.serve.errors import (
    RestError, namespace_not_empty, no_such_namespace, no_such_table, no_such_view, table_exists, unsupported,
)
from icefloe.impl.serve.records import TABLE, VIEW, KeyRecord, TableChange, children

KEYS_DDL = """CREATE TABLE IF NOT EXISTS icefloe_rest_idempotency (
    catalog_name VARCHAR(255) NOT NULL,
    idempotency_key VARCHAR(64) NOT NULL,
    operation VARCHAR(1000) NOT NULL,
    status INTEGER NOT NULL,
    response TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (catalog_name, idempotency_key))"""
INSERT_KEY = ("INSERT INTO icefloe_rest_idempotency (catalog_name, idempotency_key, operation, status, response,"
              " created_at_ms) VALUES (?, ?, ?, ?, ?, ?)")


class SqlStore:
    def __init__(self, catalog: SqlCatalog):
        self.catalog = catalog
        catalog._execute_ddl(KEYS_DDL)

    def _run(self, statement: str, params: tuple = ()) -> list[tuple]:
        return self.catalog._execute(statement, params)

    # -- namespaces -------------------------------------------------------------------

    def list_namespaces(self, parent):
        return children(self.catalog.list_namespaces(), parent)

    def namespace_exists(self, namespace):
        return self.catalog.namespace_exists(tuple(namespace))

    def create_namespace(self, namespace, properties):
        self.catalog.create_namespace(tuple(namespace), properties or None)

    def namespace_properties(self, namespace):
        if not self.namespace_exists(namespace):
            raise no_such_namespace(".".join(namespace))
        rows = self._run("SELECT property_key, property_value FROM iceberg_namespace_properties"
                         " WHERE catalog_name = ? AND namespace = ?", (self.catalog.name, ".".join(namespace)))
        return {k: v for k, v in rows if not (k == "exists" and v == "true")}

    def update_namespace_properties(self, namespace, updates, removals):
        ns = ".".join(namespace)
        with self.catalog._write_transaction() as run:
            if not self.catalog._namespace_exists(run, ns):
                raise no_such_namespace(ns)
            present = {r[0] for r in run("SELECT property_key FROM iceberg_namespace_properties"
                                         " WHERE catalog_name = ? AND namespace = ?", (self.catalog.name, ns))}
            removed = [k for k in removals if k in present]
            for key in removed + [k for k in updates if k in present]:
                run("DELETE FROM iceberg_namespace_properties WHERE catalog_name = ? AND namespace = ?"
                    " AND property_key = ?", (self.catalog.name, ns, key))
            for key, value in updates.items():
                run("INSERT INTO iceberg_namespace_properties (catalog_name, namespace, property_key, property_value)"
                    " VALUES (?, ?, ?, ?)", (self.catalog.name, ns, key, value))
            if "exists" not in updates and present <= set(removed):   # keep the namespace itself
                for key, value in NAMESPACE_MINIMAL_PROPERTIES.items():
                    run("INSERT INTO iceberg_namespace_properties (catalog_name, namespace, property_key,"
                        " property_value) VALUES (?, ?, ?, ?)", (self.catalog.name, ns, key, value))
        return sorted(updates), removed, [k for k in removals if k not in present]

    def drop_namespace(self, namespace):
        ns = ".".join(namespace)
        with self.catalog._write_transaction() as run:
            if not self.catalog._namespace_exists(run, ns):
                raise no_such_namespace(ns)
            below = _escape_like(ns) + ".%"
            if run("SELECT 1 FROM iceberg_tables WHERE catalog_name = ? AND (table_namespace = ?"
                   " OR table_namespace LIKE ? ESCAPE '!') LIMIT 1", (self.catalog.name, ns, below)) \
                    or run("SELECT 1 FROM iceberg_namespace_properties WHERE catalog_name = ?"
                           " AND namespace LIKE ? ESCAPE '!' LIMIT 1", (self.catalog.name, below)):
                raise namespace_not_empty(ns)
            run("DELETE FROM iceberg_namespace_properties WHERE catalog_name = ? AND namespace = ?",
                (self.catalog.name, ns))

    # -- tables -----------------------------------------------------------------------

    def rename(self, source: TableIdentifier, destination: TableIdentifier, kind: str = TABLE) -> None:
        name = self.catalog.name
        with self.catalog._write_transaction() as run:
            if not self.catalog._namespace_exists(run, destination.namespace_str):
                raise no_such_namespace(destination.namespace_str)
            if run("SELECT 1 FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?",
                   (name, destination.namespace_str, destination.name)):
                raise table_exists(str(destination))
            run("UPDATE iceberg_tables SET table_namespace = ?, table_name = ? WHERE catalog_name = ?"
                " AND table_namespace = ? AND table_name = ?" + self._kind_filter(kind),
                (destination.namespace_str, destination.name, name, source.namespace_str, source.name))
            if run.rowcount != 1:
                raise no_such_table(str(source)) if kind == TABLE else no_such_view(str(source))

    def commit(self, changes: list[TableChange], key: KeyRecord | None) -> SwapResult:
        """Every change and the key in one transaction, staged as SqlCatalog.swap is."""
        c = self.catalog
        stage, last = "connect", changes[-1]
        try:
            cur = c._conn().cursor()
            stage = "begin"
            cur.execute(c.dialect.begin_write)
            for change in changes:
                stage = "update"
                found = self._apply(cur, change)
                if found is not True:
                    cur.execute("ROLLBACK")
                    return SwapRejected(change.expected or "", found, f"{change.identifier}: "
                                        + ("already exists" if change.expected is None else
                                           "no such table" if found is None else "metadata location changed"))
            if key is not None:
                stage = "key"
                cur.execute(c.dialect.sql(INSERT_KEY), (c.name, key.key, key.operation, key.status, key.response,
                                                        key.created_at_ms))
            stage = "commit"
            cur.execute("COMMIT")
            return Swapped(last.new)
        except Exception as e:  # noqa: BLE001 - every failure must become a result, and which one matters
            c._discard_conn()
            if stage == "commit":
                return SwapUnknown(last.expected or "", last.new, f"error on COMMIT: {e!r}")
            return SwapRejected(last.expected or "", None, f"database error at {stage}, before COMMIT: {e!r}",
                                unavailable=stage != "key")

    def _apply(self, cur, change: TableChange):
        """True when applied; otherwise the row's current location (None: no row)."""
        c, ident = self.catalog, change.identifier
        key = (c.name, ident.namespace_str, ident.name)
        if change.expected is None:
            cur.execute(c.dialect.sql("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ?"
                                      " AND table_namespace = ? AND table_name = ?"), key)
            row = cur.fetchone()
            if row is not None:
                return row[0] or ""
            if not c._namespace_exists(lambda s, p=(): _fetch(cur, c, s, p), ident.namespace_str):
                for k, v in NAMESPACE_MINIMAL_PROPERTIES.items():
                    cur.execute(c.dialect.sql("INSERT INTO iceberg_namespace_properties (catalog_name, namespace,"
                                              " property_key, property_value) VALUES (?, ?, ?, ?)"),
                                (c.name, ident.namespace_str, k, v))
            columns, values = "catalog_name, table_namespace, table_name, metadata_location", (*key, change.new)
            if c.schema_version == "v1":
                columns, values = columns + ", iceberg_type", values + (TABLE_TYPE if change.kind == TABLE else VIEW,)
            cur.execute(c.dialect.sql(f"INSERT INTO iceberg_tables ({columns}) VALUES "
                                      f"({', '.join('?' * len(values))})"), values)
            return True
        kind = self._kind_filter(change.kind)
        cur.execute(c.dialect.sql(
            "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ?"
            " WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ?"
            + kind), (change.new, change.expected, *key, change.expected))
        if cur.rowcount == 1:
            return True
        cur.execute(c.dialect.sql("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ?"
                                  " AND table_namespace = ? AND table_name = ?" + kind), key)
        row = cur.fetchone()
        return None if row is None else row[0]

    # -- views (rows of iceberg_type VIEW, as Iceberg-Java's JDBC catalog keeps them) ------

    def _kind_filter(self, kind: str) -> str:
        if kind == TABLE:
            return self.catalog._type_filter()
        self.require_views()
        return f" AND iceberg_type = '{VIEW}'"

    def require_views(self) -> None:
        if self.catalog.schema_version != "v1":
            raise unsupported("views need the JDBC catalog's iceberg_type column (schema v1); this "
                              "catalog database predates it")

    def view_location(self, ident: TableIdentifier) -> str | None:
        rows = self._run("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ?"
                         " AND table_name = ?" + self._kind_filter(VIEW),
                         (self.catalog.name, ident.namespace_str, ident.name))
        return rows[0][0] if rows else None

    def list_views(self, namespace) -> list[TableIdentifier]:
        rows = self._run("SELECT table_name FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ?"
                         + self._kind_filter(VIEW), (self.catalog.name, ".".join(namespace)))
        return sorted(TableIdentifier(tuple(namespace), r[0]) for r in rows)

    def view_locations(self) -> dict:
        if self.catalog.schema_version != "v1":
            return {}
        rows = self._run("SELECT table_namespace, table_name, metadata_location FROM iceberg_tables"
                         " WHERE catalog_name = ?" + self._kind_filter(VIEW), (self.catalog.name,))
        return {f"{ns}.{name}": location for ns, name, location in rows}

    def drop_view(self, ident: TableIdentifier) -> bool:
        with self.catalog._write_transaction() as run:
            run("DELETE FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?"
                + self._kind_filter(VIEW), (self.catalog.name, ident.namespace_str, ident.name))
            return run.rowcount == 1

    # -- idempotency keys ---------------------------------------------------------------

    def lookup_key(self, key: str) -> KeyRecord | None:
        rows = self._run("SELECT idempotency_key, operation, status, response, created_at_ms"
                         " FROM icefloe_rest_idempotency WHERE catalog_name = ? AND idempotency_key = ?",
                         (self.catalog.name, key))
        return KeyRecord(*rows[0]) if rows else None

    def record_key(self, key: KeyRecord) -> None:
        """A final response that changed nothing (a 4xx): its own transaction. A key already
        there (a concurrent twin) wins: it is what a replay returns."""
        try:
            self._run(INSERT_KEY, (self.catalog.name, key.key, key.operation, key.status, key.response,
                                   key.created_at_ms))
        except Exception:  # noqa: BLE001 - the twin's record stands; this response is not replayed
            pass

    def forget_key(self, key: str) -> None:
        """Only pending keys are forgotten, and a SQL commit never leaves one."""

    def purge_keys(self, older_than_ms: int) -> int:
        with self.catalog._write_transaction() as run:
            run("DELETE FROM icefloe_rest_idempotency WHERE catalog_name = ? AND created_at_ms < ?",
                (self.catalog.name, older_than_ms))
            return max(run.rowcount, 0)


def _fetch(cur, catalog: SqlCatalog, statement: str, params: tuple) -> list:
    cur.execute(catalog.dialect.sql(statement), params)
    return cur.fetchall()


__all__ = ["SqlStore", "RestError", "NamespaceAlreadyExists"]
