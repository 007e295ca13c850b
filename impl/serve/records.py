"""What the REST server's stores share (store.py's PointerStore, sql_store.py's SqlStore):
a table's pointer move, an Idempotency-Key's record, and how namespaces are listed one
level at a time. Its own module, one floor below both stores, so neither imports the other
(issue 28 item 3).
"""
from __future__ import annotations

from dataclasses import dataclass

from icefloe.impl.catalog.base import TableIdentifier

PENDING = -1  # KeyRecord.status of a PointerStore commit whose swap had an unknown outcome


TABLE, VIEW = "TABLE", "VIEW"   # the JDBC catalog's iceberg_type of a row


@dataclass(frozen=True)
class TableChange:
    """One catalog row's move (`expected` None: create it); `kind` TABLE or VIEW."""
    identifier: TableIdentifier
    expected: str | None        # None: create the table
    new: str
    kind: str = TABLE


@dataclass(frozen=True)
class KeyRecord:
    """A finalized response, stored under its Idempotency-Key: the operation it answered
    (method and path), its status, and its body as JSON text (for a commit or a create: the
    metadata locations, re-read on replay)."""
    key: str
    operation: str
    status: int
    response: str
    created_at_ms: int


def children(namespaces, parent: tuple[str, ...] | None) -> list[tuple[str, ...]]:
    """The namespaces one level below `parent` (top level for None), as REST lists them."""
    depth = len(parent or ())
    out = {ns[:depth + 1] for ns in namespaces if len(ns) > depth and ns[:depth] == tuple(parent or ())}
    return sorted(out)
