"""Caller mistakes are typed errors, never assertions (issue 10): each raises
InvalidArgument (an IcefloeError and a ValueError), also under `python -O`, which strips
assertions; data read from storage that breaks the format is CorruptMetadata or a
catalog error, never an AssertionError."""
from __future__ import annotations

import dataclasses
import sqlite3
import subprocess
import sys

import pytest

from icefloe.impl.catalog.base import CatalogUnavailable, TableIdentifier
from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.outcomes import IcefloeError, InvalidArgument
from icefloe.impl.table import operations as ops, producer as P, updates as U
from icefloe.impl.table.commit import RetryPolicy
from icefloe.impl.table.table import create_table

from table_helpers import SCHEMA, memory_stack, rows

T = TableIdentifier(("db",), "t")


def test_invalid_argument_is_typed_for_every_kind_of_caller():
    """Goal: a caller can catch icefloe's errors by type. Method: InvalidArgument is both
    an IcefloeError (what the CLI reports in one line) and a ValueError (what Python code
    expects for a bad argument)."""
    assert issubclass(InvalidArgument, IcefloeError) and issubclass(InvalidArgument, ValueError)
    assert issubclass(U.InvalidUpdate, InvalidArgument)


@pytest.mark.parametrize("call", [
    lambda: MemoryCatalog().swap(T, "a", "a"),
    lambda: MemoryCatalog().create_namespace(()),
    lambda: RetryPolicy.from_properties({"commit.retry.num-retries": "many"}),
    lambda: RetryPolicy.from_properties({"commit.retry.num-retries": "-1"}),
    lambda: RetryPolicy.from_properties({"commit.retry.min-wait-ms": "50", "commit.retry.max-wait-ms": "10"}),
    lambda: ops.SetRef("main", 1, "tag"),
    lambda: ops.SetRef("b", 1, "bookmark"),
    lambda: ops.RemoveRef("main"),
    lambda: P.DeleteWhere("true", isolation="read-committed"),
    lambda: create_table(MemoryCatalog(), "db.t", SCHEMA, location="", io=None),
], ids=["swap-to-itself", "empty-namespace", "retry-not-a-number", "negative-retries", "min-above-max",
        "main-as-tag", "unknown-ref-type", "remove-main", "unknown-isolation", "no-location"])
def test_caller_mistakes_raise_invalid_argument(call):
    """Goal: each caller mistake is refused with a typed error naming it. Method: call
    each with a bad argument; InvalidArgument, with a message."""
    with pytest.raises(InvalidArgument) as e:
        call()
    assert str(e.value)


def test_table_level_mistakes_and_an_update_that_cannot_apply():
    """Goal: the table handle and the metadata updates refuse what cannot be done with a
    typed error and leave the table as it was. Method: time travel by two selectors, a tag
    on an empty table, an incremental read to an unknown snapshot, and a snapshot whose
    sequence number is not the next one."""
    stack = memory_stack()
    table = stack.create()
    with pytest.raises(InvalidArgument):
        table.create_tag("t1")                      # nothing to tag yet
    table.append(rows([1, 2]))
    before = table.refresh().metadata_location
    with pytest.raises(InvalidArgument):
        table.snapshot_for(snapshot_id=table.current_snapshot().snapshot_id, ref="main")
    with pytest.raises(InvalidArgument):
        table.incremental_append_scan(None, 123456789)
    snap = table.current_snapshot()
    stale = dataclasses.replace(snap, snapshot_id=snap.snapshot_id + 1, parent_snapshot_id=snap.snapshot_id)
    with pytest.raises(U.InvalidUpdate, match="sequence number"):
        U.add_snapshot(stale)(table.metadata)       # the head's sequence number again: not the next
    assert table.refresh().metadata_location == before


def test_a_foreign_iceberg_tables_table_is_a_catalog_error(tmp_path):
    """Goal: a database whose iceberg_tables is not the Iceberg JDBC catalog's table gets a
    one-line catalog error, not an assertion (bug7). Method: create such a table first."""
    db = tmp_path / "foreign.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE iceberg_tables (name TEXT, location TEXT)")
    with pytest.raises(CatalogUnavailable, match="not an Iceberg JDBC catalog table"):
        SqlCatalog(f"sqlite:///{db}").load(T)


def test_caller_mistakes_stay_typed_without_assertions():
    """Goal: the checks survive `python -O`, which removes assertions. Method: run two
    caller mistakes in an optimized interpreter and read what it raised."""
    code = ("from icefloe.impl.catalog.memory import MemoryCatalog\n"
            "from icefloe.impl.catalog.base import TableIdentifier\n"
            "from icefloe.impl.table.commit import RetryPolicy\n"
            "from icefloe.impl.outcomes import InvalidArgument\n"
            "for call in (lambda: MemoryCatalog().swap(TableIdentifier(('db',), 't'), 'a', 'a'),\n"
            "             lambda: RetryPolicy.from_properties({'commit.retry.num-retries': '-1'})):\n"
            "    try:\n        call()\n    except InvalidArgument:\n        print('typed')\n")
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["typed", "typed"]
