"""Interoperability with real peers on the same files (spec/PROTOCOL.md 4.1 "SQL catalog"):
pyiceberg 0.12 (SqlCatalog on the same SQLite file) and DuckDB's iceberg extension read
what icefloe commits, icefloe reads what pyiceberg commits, and both commit to one table
alternately and concurrently. Rows are compared exactly, for every retained snapshot."""
from __future__ import annotations

import glob
import os
import threading

import duckdb
import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
from pyiceberg.exceptions import CommitFailedException

from icefloe.impl.outcomes import Committed
from icefloe.impl.table.env import Env
from icefloe.impl.table.table import Table

from table_helpers import ARROW_SCHEMA, ids_of, local_stack, rows
from delete_writers import equality_delete_file, position_delete_file

PEER_RETRIES_MAX = 200  # bound on the test's own retry of pyiceberg's CommitFailedException


def canonical_rows(table: pa.Table) -> list:
    return sorted(table.select(["id", "cat", "v"]).to_pylist(), key=lambda r: r["id"])


@pytest.fixture
def peers(tmp_path):
    stack = local_stack(tmp_path)
    theirs = PyIcebergSqlCatalog("icefloe", uri=f"sqlite:///{tmp_path}/catalog.db",
                                 warehouse=f"file://{tmp_path}/warehouse")
    yield stack, theirs
    stack.catalog.close()
    theirs.close()


def duckdb_connection():
    con = duckdb.connect(config={"autoinstall_known_extensions": False})
    site = os.path.dirname(os.path.dirname(duckdb.__file__))
    for name in ("avro", "iceberg"):  # avro first: iceberg needs it
        [path] = glob.glob(f"{site}/duckdb_extension_{name}/**/*.duckdb_extension", recursive=True)
        con.execute(f"INSTALL '{path}'")
    con.execute("LOAD iceberg")
    return con


def icefloe_history_table(stack) -> Table:
    """A partitioned table with every kind of snapshot icefloe writes."""
    table = stack.create(partition="cat")
    table.append(rows([1, 2, 3], ["a", "b", "a"]))
    table.append(rows([4, 5], ["b", "c"]))
    table.delete("id = 2")
    table.overwrite(rows([30, 31], "a"), "cat = 'a'")
    table.rewrite_files(files_min=1)
    path = next(t.data_file.file_path for t in table.plan_files() if t.data_file.partition == ("b",))
    assert isinstance(table.add_delete_files([position_delete_file(table, [(path, 0)], ("b",))], [path]), Committed)
    table.append(rows([6], "c"))
    return table


def test_pyiceberg_reads_icefloe_tables_at_every_snapshot(peers):
    """pyiceberg loads the table through the shared catalog and reads, for the current and
    every older snapshot, exactly the rows icefloe reads (position deletes included)."""
    stack, theirs = peers
    table = icefloe_history_table(stack)
    theirs_table = theirs.load_table("db.t")
    assert theirs_table.metadata_location == table.metadata_location
    assert canonical_rows(theirs_table.scan().to_arrow()) == canonical_rows(table.scan())
    for snap in table.metadata.snapshots:
        ours = canonical_rows(table.scan(snapshot_id=snap.snapshot_id))
        assert canonical_rows(theirs_table.scan(snapshot_id=snap.snapshot_id).to_arrow()) == ours, snap.summary
    assert ids_of(table.scan()) == [5, 6, 30, 31]


def test_duckdb_reads_icefloe_tables_at_every_snapshot(peers):
    """DuckDB's iceberg_scan of the current metadata file returns the same rows as icefloe,
    for the current snapshot and for every older one (position deletes included)."""
    stack, _ = peers
    table = icefloe_history_table(stack)
    con = duckdb_connection()
    scan = f"SELECT id, cat, v FROM iceberg_scan('{table.metadata_location}'"
    got = con.execute(f"{scan}) ORDER BY id").fetchall()
    assert got == [(r["id"], r["cat"], r["v"]) for r in canonical_rows(table.scan())]
    for snap in table.metadata.snapshots:
        got = con.execute(f"{scan}, snapshot_from_id={snap.snapshot_id}) ORDER BY id").fetchall()
        ours = canonical_rows(table.scan(snapshot_id=snap.snapshot_id))
        assert got == [(r["id"], r["cat"], r["v"]) for r in ours], snap.summary
    con.close()


def test_duckdb_applies_equality_deletes_by_sequence_number_as_icefloe(peers):
    """An equality delete hides older rows with its key but not a later append of the same
    key: DuckDB and icefloe agree (pyiceberg 0.12 refuses equality deletes altogether)."""
    stack, _ = peers
    table = stack.create()
    table.append(rows([5, 6, 7]))
    assert isinstance(table.add_delete_files([equality_delete_file(table, "id", [5, 7])]), Committed)
    table.append(rows([5]))
    con = duckdb_connection()
    got = con.execute(f"SELECT id FROM iceberg_scan('{table.metadata_location}') ORDER BY id").fetchall()
    assert [r[0] for r in got] == ids_of(table.scan()) == [5, 6]
    con.close()


def test_icefloe_reads_pyiceberg_tables_at_every_snapshot(peers):
    """A pyiceberg table with appends, an overwrite and a delete reads in icefloe exactly as
    in pyiceberg, snapshot by snapshot."""
    stack, theirs = peers
    theirs.create_namespace("db")
    theirs_table = theirs.create_table("db.p", schema=ARROW_SCHEMA)
    with theirs_table.update_spec() as update:
        update.add_identity("cat")
    theirs_table.append(rows([1, 2], ["a", "b"]))
    theirs_table.append(rows([3, 4], ["a", "c"]))
    theirs_table.overwrite(rows([9], "b"), overwrite_filter="cat == 'b'")
    theirs_table.delete(delete_filter="id == 3")
    theirs_table = theirs.load_table("db.p")
    table = Table(stack.catalog, "db.p", stack.io)
    assert len(table.metadata.snapshots) == len(theirs_table.snapshots()) >= 4
    for snap in theirs_table.snapshots():
        expected = canonical_rows(theirs_table.scan(snapshot_id=snap.snapshot_id).to_arrow())
        assert canonical_rows(table.scan(snapshot_id=snap.snapshot_id)) == expected
    assert ids_of(table.scan()) == [1, 4, 9]


def test_alternating_commits_between_pyiceberg_and_icefloe(peers):
    """Each side commits on top of the other's metadata; both see the same rows and one
    linear history whose metadata log names every previous version."""
    stack, theirs = peers
    table = stack.create()
    for i in range(3):
        assert isinstance(table.append(rows([i * 10])), Committed)
        theirs.load_table("db.t").append(rows([i * 10 + 1]))
        table.refresh()
    assert isinstance(table.delete("id = 10"), Committed)
    theirs.load_table("db.t").delete(delete_filter="id == 11")
    table.refresh()
    expected = [0, 1, 20, 21]
    assert ids_of(table.scan()) == expected
    assert ids_of(theirs.load_table("db.t").scan().to_arrow()) == expected
    history = table.history()
    assert len(history) == 8
    assert all(b.parent_snapshot_id == a.snapshot_id for a, b in zip(history, history[1:]))


def test_concurrent_commits_from_pyiceberg_and_icefloe(peers):
    """Two threads, one pyiceberg and one icefloe, append to one table at once: every row
    lands exactly once and the history stays linear."""
    stack, theirs = peers
    stack.create(properties={"commit.retry.num-retries": "100", "commit.retry.min-wait-ms": "1",
                             "commit.retry.max-wait-ms": "10"})
    appends = 10
    errors, outcomes = [], []

    def ours():
        try:
            table = Table(stack.catalog, "db.t", stack.io, Env.seeded(5))
            for k in range(appends):
                outcomes.append(table.append(rows([k])))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def peer():
        try:
            for k in range(appends):
                for _ in range(PEER_RETRIES_MAX):
                    try:
                        theirs.load_table("db.t").append(rows([1000 + k]))
                        break
                    except CommitFailedException:
                        continue
                else:
                    raise AssertionError("pyiceberg never committed")
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=ours), threading.Thread(target=peer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert all(isinstance(o, Committed) for o in outcomes)
    table = Table(stack.catalog, "db.t", stack.io)
    expected = sorted(list(range(appends)) + [1000 + k for k in range(appends)])
    assert ids_of(table.scan()) == expected
    assert ids_of(theirs.load_table("db.t").scan().to_arrow()) == expected
    history = table.history()
    assert len(history) == 2 * appends
    assert all(b.parent_snapshot_id == a.snapshot_id for a, b in zip(history, history[1:]))


class AckLosingCatalog:
    """The real SqlCatalog with the next swap's acknowledgement lost (applied, then
    answered SwapUnknown): a fault injector around a real part, as AckLost in the model."""

    def __init__(self, inner):
        self.inner, self.name, self.lose_next = inner, inner.name, False

    def load(self, identifier):
        return self.inner.load(identifier)

    def swap(self, identifier, expected, new):
        from icefloe.impl.outcomes import SwapUnknown
        result = self.inner.swap(identifier, expected, new)
        if self.lose_next:
            self.lose_next = False
            return SwapUnknown(expected, new, "injected: acknowledgement lost")
        return result


def test_lost_ack_resolved_through_pyiceberg_metadata_log(peers):
    """icefloe's swap lands but its answer is lost; pyiceberg commits twice on top before
    icefloe resolves; icefloe finds its attempt through pyiceberg's metadata log: Committed
    once, no duplicate rows."""
    from icefloe.impl.table import producer as P
    stack, theirs = peers
    stack.create()
    catalog = AckLosingCatalog(stack.catalog)
    table = Table(catalog, "db.t", stack.io, Env.seeded(9, sleep_ms=lambda ms: None))
    commit = table.new_commit(P.FastAppend(rows([1])))
    for _ in range(5):
        commit.step()
    catalog.lose_next = True
    assert commit.step() == "resolve"
    theirs.load_table("db.t").append(rows([2]))
    theirs.load_table("db.t").append(rows([3]))
    outcome = commit.run()
    assert outcome == Committed(commit.snapshot_id, 1, commit.attempted[0])
    assert ids_of(theirs.load_table("db.t").scan().to_arrow()) == [1, 2, 3]
