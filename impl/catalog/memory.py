"""An in-memory catalog (spec/PROTOCOL.md, "The catalog's swap"; model and TLA+ action
`Swap`).

One lock makes each swap an atomic compare-and-set of the table's pointer. Faults (lost
acknowledgements, delayed swaps) are test infrastructure and wrap any catalog from
outside: icefloe.conformance.testing.faulty_catalog.
"""
from __future__ import annotations

import threading

from icefloe.impl.catalog.base import (
    NamespaceNotEmpty, NoSuchNamespace, NoSuchTable, TableAlreadyExists, TableIdentifier,
)
from icefloe.impl.outcomes import SwapRejected, SwapResult, Swapped, require


class MemoryCatalog:
    def __init__(self, name: str = "memory"):
        self.name = name
        self._lock = threading.Lock()
        self._tables: dict[TableIdentifier, str] = {}
        self._namespaces: set[tuple[str, ...]] = set()

    # -- namespaces -------------------------------------------------------------------

    def create_namespace(self, namespace: tuple[str, ...]) -> None:
        require(bool(namespace) and all(namespace), f"not a namespace: {namespace!r}")
        with self._lock:
            self._namespaces.add(tuple(namespace))

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        namespace = tuple(namespace)
        with self._lock:
            if any(i.namespace[:len(namespace)] == namespace for i in self._tables):
                raise NamespaceNotEmpty(f"namespace {'.'.join(namespace)} holds tables: drop them first")
            if namespace not in self._namespaces:
                raise NoSuchNamespace(".".join(namespace))
            self._namespaces.discard(namespace)

    def list_namespaces(self) -> list[tuple[str, ...]]:
        with self._lock:
            return sorted(self._namespaces | {i.namespace for i in self._tables})

    # -- tables -----------------------------------------------------------------------

    def load(self, identifier: TableIdentifier) -> str:
        with self._lock:
            location = self._tables.get(identifier)
        if location is None:
            raise NoSuchTable(str(identifier))
        return location

    def create(self, identifier: TableIdentifier, metadata_location: str) -> None:
        with self._lock:
            if identifier in self._tables:
                raise TableAlreadyExists(str(identifier))
            self._tables[identifier] = metadata_location
            self._namespaces.add(identifier.namespace)

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]:
        with self._lock:
            return sorted(i for i in self._tables if i.namespace == tuple(namespace))

    def drop(self, identifier: TableIdentifier) -> None:
        with self._lock:
            if self._tables.pop(identifier, None) is None:
                raise NoSuchTable(str(identifier))

    def swap(self, identifier: TableIdentifier, expected_location: str, new_location: str) -> SwapResult:
        require(expected_location != new_location, "a swap must move the pointer")
        with self._lock:
            return self._apply(identifier, expected_location, new_location)

    # -- internals (caller holds the lock) --------------------------------------------

    def _apply(self, identifier: TableIdentifier, expected_location: str, new_location: str) -> SwapResult:
        actual = self._tables.get(identifier)
        if actual is None:
            return SwapRejected(expected_location, None, "no such table")
        if actual != expected_location:
            return SwapRejected(expected_location, actual, "metadata location changed")
        self._tables[identifier] = new_location
        return Swapped(new_location)
