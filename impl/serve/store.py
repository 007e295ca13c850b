"""What `icefloe serve` needs of a catalog beyond the Catalog protocol (load, create, swap):
namespaces with properties, rename, and `commit(changes, key)`: every table's pointer moves
(or a new table's row is created) and the request's Idempotency-Key is recorded, all or
nothing.

`store_for(catalog)` picks the store: `SqlStore` (sql_store.py) for the SQL catalog, where
the swaps and the key are one database transaction; `PointerStore` for any other catalog
(the S3 pointer catalog, the in-memory one): one table per commit, and the key recorded in
this server's memory right after the swap, so a replay is exact while the server runs
(docs/rest.md says so). A change is `TableChange(identifier, expected, new)`; `expected`
None creates the table.
"""
from __future__ import annotations

import threading
from typing import Protocol

from icefloe.impl.catalog.base import NamespaceAlreadyExists, NoSuchTable, TableAlreadyExists, TableIdentifier
from icefloe.impl.outcomes import SwapRejected, SwapResult, Swapped, SwapUnknown
from icefloe.impl.serve.errors import RestError, no_such_namespace, unsupported
from icefloe.impl.serve.records import PENDING, KeyRecord, TableChange, children

KEYS_REMEMBERED_MAX = 100_000  # PointerStore's keys in memory (oldest forgotten first)


class Store(Protocol):
    def list_namespaces(self, parent: tuple[str, ...] | None) -> list[tuple[str, ...]]: ...
    def namespace_exists(self, namespace: tuple[str, ...]) -> bool: ...
    def create_namespace(self, namespace: tuple[str, ...], properties: dict[str, str]) -> None: ...
    def namespace_properties(self, namespace: tuple[str, ...]) -> dict[str, str]: ...
    def update_namespace_properties(self, namespace: tuple[str, ...], updates: dict[str, str],
                                    removals: list[str]) -> tuple[list[str], list[str], list[str]]: ...
    def drop_namespace(self, namespace: tuple[str, ...]) -> None: ...
    def rename(self, source: TableIdentifier, destination: TableIdentifier) -> None: ...
    def commit(self, changes: list[TableChange], key: KeyRecord | None) -> SwapResult: ...
    def lookup_key(self, key: str) -> KeyRecord | None: ...
    def record_key(self, key: KeyRecord) -> None: ...
    def purge_keys(self, older_than_ms: int) -> int: ...


class PointerStore:
    """Any Catalog (load, create, swap, list_tables, drop): namespaces and their properties
    and the Idempotency-Keys live in this server's memory, beside the catalog's own."""

    def __init__(self, catalog):
        self.catalog = catalog
        self._lock = threading.Lock()
        self._namespaces: dict[tuple[str, ...], dict[str, str]] = {}
        self._keys: dict[str, KeyRecord] = {}

    def _all_namespaces(self) -> set:
        listed = set(getattr(self.catalog, "list_namespaces", lambda: [])())
        with self._lock:
            return listed | set(self._namespaces)

    def list_namespaces(self, parent):
        return children(self._all_namespaces(), parent)

    def namespace_exists(self, namespace):
        return any(ns[:len(namespace)] == tuple(namespace) for ns in self._all_namespaces())

    def create_namespace(self, namespace, properties):
        if self.namespace_exists(namespace):
            raise NamespaceAlreadyExists(".".join(namespace))
        with self._lock:
            self._namespaces[tuple(namespace)] = dict(properties)

    def namespace_properties(self, namespace):
        if not self.namespace_exists(namespace):
            raise no_such_namespace(".".join(namespace))
        with self._lock:
            return dict(self._namespaces.get(tuple(namespace), {}))

    def update_namespace_properties(self, namespace, updates, removals):
        current = self.namespace_properties(namespace)
        missing = [k for k in removals if k not in current]
        with self._lock:
            props = self._namespaces.setdefault(tuple(namespace), {})
            for k in removals:
                props.pop(k, None)
            props.update(updates)
        return sorted(updates), [k for k in removals if k not in missing], missing

    def drop_namespace(self, namespace):
        if not self.namespace_exists(namespace):
            raise no_such_namespace(".".join(namespace))
        with self._lock:
            self._namespaces.pop(tuple(namespace), None)

    def rename(self, source, destination):
        raise unsupported(f"rename is not supported on the {type(self.catalog).__name__} catalog")

    def commit(self, changes, key):
        if len(changes) != 1:
            raise unsupported("a multi-table transaction needs the SQL catalog (one database transaction)")
        change = changes[0]
        if change.expected is None:
            try:
                self.catalog.create(change.identifier, change.new)
            except TableAlreadyExists:
                return SwapRejected("", None, "table already exists")
            result: SwapResult = Swapped(change.new)
        else:
            result = self.catalog.swap(change.identifier, change.expected, change.new)
        if key is not None and isinstance(result, Swapped):
            self.record_key(key)
        elif key is not None and isinstance(result, SwapUnknown):
            # Not final: a replay first finds out whether this attempt landed (service.py).
            self.record_key(KeyRecord(key.key, key.operation, PENDING, key.response, key.created_at_ms))
        return result

    def lookup_key(self, key):
        with self._lock:
            return self._keys.get(key)

    def forget_key(self, key: str) -> None:
        """A pending key whose attempt did not land: the replay runs the request afresh."""
        with self._lock:
            if key in self._keys and self._keys[key].status == PENDING:
                del self._keys[key]

    def record_key(self, key):
        with self._lock:
            if key.key not in self._keys or self._keys[key.key].status == PENDING:
                self._keys[key.key] = key
            while len(self._keys) > KEYS_REMEMBERED_MAX:
                self._keys.pop(next(iter(self._keys)))

    def purge_keys(self, older_than_ms):
        with self._lock:
            old = [k for k, r in self._keys.items() if r.created_at_ms < older_than_ms]
            for k in old:
                del self._keys[k]
        return len(old)


def store_for(catalog) -> Store:
    from icefloe.impl.catalog.sql import SqlCatalog
    if isinstance(catalog, SqlCatalog):
        from icefloe.impl.serve.sql_store import SqlStore
        return SqlStore(catalog)
    return PointerStore(catalog)


__all__ = ["TableChange", "KeyRecord", "Store", "PointerStore", "store_for", "children",
           "NoSuchTable", "RestError", "SwapUnknown"]
