"""pyiceberg 0.12's RestCatalog against `icefloe serve`: goal, every table call a client makes
works end to end and the result is the table icefloe itself reads; method, a real server on
127.0.0.1 over SQLite, pyiceberg's REST client for the writes, icefloe's SqlCatalog and
table code for the reads of the same catalog file."""
from __future__ import annotations

import pyarrow as pa
import pytest

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.table.table import Table

ROWS = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])


def _rows(ids):
    return pa.table({"id": ids, "s": [f"v{i}" for i in ids]}, schema=ROWS)


def _icefloe_rows(catalog_uri, name):
    table = Table(SqlCatalog(catalog_uri), name, StoreRouter())
    return sorted(table.scan().column("id").to_pylist()), table


def test_create_append_overwrite_load(rest_catalog, catalog_uri):
    """Goal: create, two appends, an overwrite and a delete land as pyiceberg sees them and as
    icefloe reads them; method: pyiceberg writes through REST, both read back."""
    rest_catalog.create_namespace("db")
    t = rest_catalog.create_table("db.t", schema=ROWS)
    t.append(_rows([1, 2]))
    t.append(_rows([3]))
    assert sorted(rest_catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    t.overwrite(_rows([9]))
    t.delete("id = 9")
    t.append(_rows([4]))
    loaded = rest_catalog.load_table("db.t")
    assert loaded.scan().to_arrow().column("id").to_pylist() == [4]
    ids, table = _icefloe_rows(catalog_uri, "db.t")
    assert ids == [4]
    assert table.metadata_location == loaded.metadata_location
    ops = [s.operation for s in table.history()]
    assert ops == ["append", "append", "delete", "append", "delete", "append"]
    # The metadata log chains every version the server wrote (1.7): the created one and one
    # per commit but the last (an overwrite's two snapshots are one commit).
    assert len(table.metadata.metadata_log) == 5


def test_namespaces_and_tables(rest_catalog):
    """Goal: the namespace and table routes behave as the spec says; method: pyiceberg's
    calls, including their typed errors."""
    from pyiceberg.exceptions import (
        NamespaceAlreadyExistsError, NamespaceNotEmptyError, NoSuchNamespaceError, NoSuchTableError,
        TableAlreadyExistsError)
    rest_catalog.create_namespace("a", {"owner": "me"})
    rest_catalog.create_namespace(("a", "b"))
    with pytest.raises(NamespaceAlreadyExistsError):
        rest_catalog.create_namespace("a")
    assert rest_catalog.list_namespaces() == [("a",)]
    assert rest_catalog.list_namespaces("a") == [("a", "b")]
    assert rest_catalog.load_namespace_properties("a") == {"owner": "me"}
    summary = rest_catalog.update_namespace_properties("a", removals={"owner", "nope"}, updates={"k": "v"})
    assert summary.updated == ["k"] and summary.removed == ["owner"] and summary.missing == ["nope"]
    with pytest.raises(NoSuchNamespaceError):
        rest_catalog.load_namespace_properties("zz")
    rest_catalog.create_table("a.t", schema=ROWS)
    with pytest.raises(TableAlreadyExistsError):
        rest_catalog.create_table("a.t", schema=ROWS)
    assert rest_catalog.table_exists("a.t") and not rest_catalog.table_exists("a.u")
    with pytest.raises(NamespaceNotEmptyError):
        rest_catalog.drop_namespace("a")
    rest_catalog.rename_table("a.t", "a.u")
    assert rest_catalog.list_tables("a") == [("a", "u")]
    rest_catalog.drop_table("a.u")
    with pytest.raises(NoSuchTableError):
        rest_catalog.load_table("a.u")
    rest_catalog.drop_namespace(("a", "b"))
    rest_catalog.drop_namespace("a")
    assert rest_catalog.list_namespaces() == []


def test_create_transaction_and_register(rest_catalog, catalog_uri):
    """Goal: a staged create (assert-create) lands whole, and register adopts a metadata file;
    method: pyiceberg's create_table_transaction and register_table (refused while the table
    lives, bug12; allowed once it is dropped without purge), icefloe reads both."""
    from pyiceberg.exceptions import TableAlreadyExistsError
    rest_catalog.create_namespace("db")
    with rest_catalog.create_table_transaction("db.tx", schema=ROWS, properties={"p": "1"}) as tx:
        tx.append(_rows([5, 6]))
    t = rest_catalog.load_table("db.tx")
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [5, 6]
    assert t.metadata.properties["p"] == "1" and t.metadata.current_schema_id == 0
    with pytest.raises(TableAlreadyExistsError):       # a second name for a live table (bug12)
        rest_catalog.register_table("db.twin", t.metadata_location)
    rest_catalog.drop_table("db.tx")                  # files kept: the metadata may be adopted
    registered = rest_catalog.register_table("db.copy", t.metadata_location)
    assert registered.metadata_location == t.metadata_location
    ids, _ = _icefloe_rows(catalog_uri, "db.copy")
    assert ids == [5, 6]


def test_drop_with_purge_deletes_only_the_table(rest_catalog, warehouse):
    """Goal: a purge deletes the dropped table's files and nothing of its neighbour whose name
    shares its prefix; method: two tables t and t2, drop t with purge, list the warehouse."""
    import os
    rest_catalog.create_namespace("db")
    for name in ("t", "t2"):
        rest_catalog.create_table(f"db.{name}", schema=ROWS).append(_rows([1]))
    rest_catalog.purge_table("db.t")
    left = [os.path.join(d, f) for d, _, files in os.walk(warehouse) for f in files]
    assert left and all("/db/t2/" in p for p in left)
    assert rest_catalog.load_table("db.t2").scan().to_arrow().num_rows == 1
