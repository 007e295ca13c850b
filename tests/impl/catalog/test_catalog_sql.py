"""SqlCatalog specifics: the unknown and rejected outcomes of database errors, URIs, layout."""
from __future__ import annotations

import multiprocessing
import os
import sqlite3

import pytest

from icefloe.impl.catalog.base import CatalogUnavailable, NamespaceAlreadyExists, TableIdentifier
from icefloe.impl.catalog.sql import SQLITE, SqlCatalog, sqlite_path
from icefloe.impl.outcomes import SwapRejected, Swapped, SwapUnknown

T = TableIdentifier(("db",), "t")


class _CommitAckLosingCursor:
    """Runs every statement on the real SQLite cursor; when armed, a COMMIT is executed and
    then reported as a lost connection, like a network failure after the server committed."""

    def __init__(self, cursor, owner):
        self._cursor, self._owner = cursor, owner

    def execute(self, statement, params=()):
        result = self._cursor.execute(statement, params)
        if statement.strip().upper() == "COMMIT" and self._owner.lose_next_commit_ack:
            self._owner.lose_next_commit_ack = False
            raise sqlite3.OperationalError("injected: connection lost after COMMIT was sent")
        return result

    def __getattr__(self, name):
        return getattr(self._cursor, name)


class CommitAckLosingConnection:
    lose_next_commit_ack = False

    def __init__(self, path):
        self._conn = sqlite3.connect(path, timeout=5, isolation_level=None, check_same_thread=False)

    def cursor(self):
        return _CommitAckLosingCursor(self._conn.cursor(), self)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def fresh_view(db):
    """The pointer as another process sees it: a new connection to the same file."""
    return SqlCatalog(f"sqlite:///{db}")


def test_sqlite_uri_paths():
    """sqlite:/// takes a relative path after three slashes and an absolute one after four."""
    assert sqlite_path("sqlite:///rel/cat.db") == "rel/cat.db"
    assert sqlite_path("sqlite:////abs/cat.db") == "/abs/cat.db"
    for bad in ["sqlite:///:memory:", "sqlite://", "postgres:///x", "sqlite:///x.db?mode=ro"]:
        with pytest.raises(ValueError):
            sqlite_path(bad)


def test_relative_uri_opens_relative_to_cwd(tmp_path):
    """A relative sqlite URI names a file relative to the working directory."""
    # No chdir: tests/conftest.py resolves report paths against the working directory.
    cat = SqlCatalog(f"sqlite:///{os.path.relpath(tmp_path / 'sub.db')}")
    cat.create(T, "v0")
    cat.close()
    assert (tmp_path / "sub.db").exists() and fresh_view(tmp_path / "sub.db").load(T) == "v0"


def test_lost_commit_acknowledgement_is_unknown_and_really_applied(tmp_path):
    """An error raised after COMMIT executed gives SwapUnknown, and the pointer really moved."""
    db = tmp_path / "c.db"
    holder: list[CommitAckLosingConnection] = []

    def connect():
        holder.append(CommitAckLosingConnection(str(db)))
        return holder[-1]

    cat = SqlCatalog(dialect=SQLITE, connect=connect)
    cat.create(T, "v0")
    holder[-1].lose_next_commit_ack = True
    result = cat.swap(T, "v0", "v1")
    assert isinstance(result, SwapUnknown) and "COMMIT" in result.reason
    assert fresh_view(db).load(T) == "v1"
    assert cat.swap(T, "v1", "v2") == Swapped("v2")  # a fresh connection replaced the failed one


def test_busy_commit_is_unknown_never_rejected(tmp_path):
    """A real SQLite error on COMMIT (a reader holds the database, the busy timeout runs out)
    gives SwapUnknown, not SwapRejected; after the reader leaves the same swap succeeds."""
    db = tmp_path / "c.db"
    cat = SqlCatalog(f"sqlite:///{db}", busy_timeout_ms=50)
    cat.create(T, "v0")
    reader = sqlite3.connect(str(db), isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT * FROM iceberg_tables").fetchall()  # holds a SHARED lock
    try:
        result = cat.swap(T, "v0", "v1")
    finally:
        reader.execute("ROLLBACK")
        reader.close()
    assert isinstance(result, SwapUnknown), result
    assert fresh_view(db).load(T) == "v0"  # here SQLite did not commit; Unknown allows either
    assert cat.swap(T, "v0", "v1") == Swapped("v1")


def test_error_before_sending_is_rejected(tmp_path):
    """When the write lock cannot be had (another writer holds it) nothing is sent, so the
    swap is SwapRejected with the reason, and the pointer is unchanged."""
    db = tmp_path / "c.db"
    cat = SqlCatalog(f"sqlite:///{db}", busy_timeout_ms=50)
    cat.create(T, "v0")
    writer = sqlite3.connect(str(db), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        result = cat.swap(T, "v0", "v1")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert isinstance(result, SwapRejected) and "begin" in result.reason and "locked" in result.reason
    assert result.actual_location is None
    assert fresh_view(db).load(T) == "v0"


def test_previous_metadata_location_is_recorded(tmp_path):
    """A swap stores the expected location as previous_metadata_location, as the JDBC layout does."""
    db = tmp_path / "c.db"
    cat = SqlCatalog(f"sqlite:///{db}")
    cat.create(T, "v0")
    cat.swap(T, "v0", "v1")
    row = sqlite3.connect(str(db)).execute(
        "SELECT catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location,"
        " iceberg_type FROM iceberg_tables").fetchall()
    assert row == [("icefloe", "db", "t", "v1", "v0", "TABLE")]


def test_catalog_names_are_isolated(tmp_path):
    """Two catalog names in one database see only their own tables and namespaces."""
    db = tmp_path / "c.db"
    a, b = SqlCatalog(f"sqlite:///{db}"), SqlCatalog(f"sqlite:///{db}", name="other")
    a.create(T, "a0")
    assert b.list_tables(("db",)) == [] and b.list_namespaces() == []
    b.create(T, "b0")
    assert (a.load(T), b.load(T)) == ("a0", "b0")
    assert isinstance(b.swap(T, "a0", "b1"), SwapRejected)


def test_namespaces(tmp_path):
    """create_namespace stores the minimal property, refuses a duplicate, and a parent of a
    nested namespace exists; creating a table registers its namespace."""
    db = tmp_path / "c.db"
    cat = SqlCatalog(f"sqlite:///{db}")
    cat.create_namespace(("a", "b"))
    with pytest.raises(NamespaceAlreadyExists):
        cat.create_namespace(("a", "b"))
    assert cat.namespace_exists(("a",)) and not cat.namespace_exists(("a_",))
    cat.create(TableIdentifier(("z",), "t"), "z0")
    cat.drop(TableIdentifier(("z",), "t"))
    assert cat.list_namespaces() == [("a", "b"), ("z",)]  # the namespace outlives its table
    props = sqlite3.connect(str(db)).execute(
        "SELECT namespace, property_key, property_value FROM iceberg_namespace_properties ORDER BY 1").fetchall()
    assert props == [("a.b", "exists", "true"), ("z", "exists", "true")]


def test_v0_schema_is_used_without_iceberg_type(tmp_path):
    """On an older database without iceberg_type the catalog works and never writes the column."""
    db = tmp_path / "c.db"
    con = sqlite3.connect(str(db))
    con.execute("CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255)"
                " NOT NULL, table_name VARCHAR(255) NOT NULL, metadata_location VARCHAR(1000),"
                " previous_metadata_location VARCHAR(1000), PRIMARY KEY (catalog_name, table_namespace, table_name))")
    con.commit()
    cat = SqlCatalog(f"sqlite:///{db}")
    assert cat.schema_version == "v0"
    cat.create(T, "v0")
    assert cat.swap(T, "v0", "v1") == Swapped("v1")
    assert [c[1] for c in con.execute("PRAGMA table_info(iceberg_tables)")][-1] == "previous_metadata_location"


def test_unreachable_database_is_unavailable(tmp_path):
    """A database that cannot be opened raises CatalogUnavailable, typed."""
    with pytest.raises(CatalogUnavailable):
        SqlCatalog(f"sqlite:///{tmp_path}/no/such/dir/c.db")


PROCESS_RACERS = 4


def _swap_in_process(args):
    db, i, barrier = args
    cat = SqlCatalog(f"sqlite:///{db}", busy_timeout_ms=60_000)
    barrier.wait()
    result = cat.swap(T, "base", f"p{i}")
    cat.close()
    return result


def test_racing_processes_have_one_winner(tmp_path):
    """4 processes, each with its own catalog object, swap from the same expected location:
    exactly one Swapped, the others SwapRejected naming the winner (SQLite's file locks)."""
    db = tmp_path / "c.db"
    SqlCatalog(f"sqlite:///{db}").create(T, "base")
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Manager().Barrier(PROCESS_RACERS)
    with ctx.Pool(PROCESS_RACERS) as pool:
        results = pool.map(_swap_in_process, [(db, i, barrier) for i in range(PROCESS_RACERS)])
    winners = [r.new_location for r in results if isinstance(r, Swapped)]
    assert len(winners) == 1, results
    assert all(isinstance(r, SwapRejected) and r.actual_location == winners[0]
               for r in results if not isinstance(r, Swapped)), results
    assert fresh_view(db).load(T) == winners[0]


def test_missing_tables_without_init_is_an_error(tmp_path):
    """With init_tables=False on an empty database the catalog refuses to start (no guessing)."""
    with pytest.raises(CatalogUnavailable):
        SqlCatalog(f"sqlite:///{tmp_path}/empty.db", init_tables=False)


def test_close_then_reuse(tmp_path):
    """After close() the catalog reopens a connection on its next call, in any thread."""
    import threading

    cat = SqlCatalog(f"sqlite:///{tmp_path}/c.db")
    cat.create(T, "v0")
    seen = []
    worker = threading.Thread(target=lambda: seen.append(cat.load(T)))
    worker.start()
    worker.join()
    cat.close()
    worker = threading.Thread(target=lambda: seen.append(cat.swap(T, "v0", "v1")))
    worker.start()
    worker.join()
    assert seen == ["v0", Swapped("v1")] and cat.load(T) == "v1"
