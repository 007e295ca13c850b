"""The catalog interface (spec/PROTOCOL.md, "The catalog's swap"; TLA+ `Swap`).

A catalog maps a table identifier to its current metadata location and swaps it
atomically: swap(identifier, expected, new) succeeds only if the pointer still names
`expected`. Of several racing swaps from the same expected location at most one wins.
A lost acknowledgement or an error with unknown effect is SwapUnknown, never
SwapRejected.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from icefloe.impl.outcomes import IcefloeError, SwapResult


# Characters a level of an identifier may not hold: a level becomes a path segment of the
# table's location, so a separator would let one identifier reach another's directory or
# leave the warehouse (../shared/repro bug3, bug4).
_FORBIDDEN_IN_LEVEL = ("/", "\\", "\x00")


@dataclass(frozen=True, order=True)
class TableIdentifier:
    namespace: tuple[str, ...]
    name: str

    def __post_init__(self):
        levels = (*self.namespace, self.name)
        if not self.namespace:
            raise InvalidIdentifier(f"table name must be 'namespace.table', got {self.name!r}")
        for level in levels:
            if not isinstance(level, str) or not level.strip() or level in (".", "..") \
                    or any(c in level for c in _FORBIDDEN_IN_LEVEL):
                raise InvalidIdentifier(f"{'.'.join(map(str, levels))!r}: {level!r} cannot be a level of a table "
                                        "name (empty, '.', '..', or holding '/', '\\' or NUL)")

    @classmethod
    def parse(cls, text: str) -> "TableIdentifier":
        parts = [p for p in text.split(".")]
        if len(parts) < 2 or any(not p for p in parts):
            raise InvalidIdentifier(f"table name must be 'namespace.table', got {text!r}")
        return cls(tuple(parts[:-1]), parts[-1])

    @property
    def namespace_str(self) -> str:
        return ".".join(self.namespace)

    def __str__(self) -> str:
        return f"{self.namespace_str}.{self.name}"


class CatalogError(IcefloeError):
    pass


class InvalidIdentifier(CatalogError):
    pass


class NoSuchTable(CatalogError):
    pass


class TableAlreadyExists(CatalogError):
    pass


class NamespaceAlreadyExists(CatalogError):
    pass


class NoSuchNamespace(CatalogError):
    pass


class NamespaceNotEmpty(CatalogError):
    """A namespace that still holds tables (or namespaces below it) cannot be dropped."""


class CatalogUnavailable(CatalogError):
    """A catalog request other than swap failed (database down, locked, ...). A swap never
    raises this: its failures are SwapRejected or SwapUnknown results."""


class Catalog(Protocol):
    name: str

    def load(self, identifier: TableIdentifier) -> str:
        """The current metadata location; raises NoSuchTable."""

    def create(self, identifier: TableIdentifier, metadata_location: str) -> None:
        """Register a new table; raises TableAlreadyExists."""

    def swap(self, identifier: TableIdentifier, expected_location: str, new_location: str) -> SwapResult:
        """Compare-and-swap the metadata location."""

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]: ...

    def drop(self, identifier: TableIdentifier) -> None: ...
