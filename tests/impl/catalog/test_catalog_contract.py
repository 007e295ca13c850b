"""The catalog contract, run against every catalog: create, load, list, drop and swap.

Each catalog is one parameter of the `catalog` fixture: memory, SQLite, and the S3
pointer object on a moto server (atomic conditional writes, `conformance/testing/atomic.py`).
"""
from __future__ import annotations

import re
import threading
from typing import Iterator

import pytest

from icefloe.impl.catalog.base import NoSuchTable, TableAlreadyExists, TableIdentifier
from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.catalog.s3 import S3Catalog
from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.outcomes import SwapRejected, Swapped
from icefloe.conformance.testing.moto_server import DEFAULT_REGION, MotoS3Server
from icefloe.impl.s3.store import S3Store

RACERS = 8
T = TableIdentifier(("db",), "events")


@pytest.fixture(scope="session")
def contract_moto_s3() -> Iterator[MotoS3Server]:
    with MotoS3Server(bucket="icefloe-contract", atomic=True) as server:
        yield server


@pytest.fixture(params=["memory", "sql", "s3"])
def catalog(request, tmp_path):
    if request.param == "memory":
        yield MemoryCatalog()
        return
    if request.param == "s3":
        # moto's state is process-global: each test gets its own warehouse prefix.
        server = request.getfixturevalue("contract_moto_s3")
        store = S3Store.from_config(server.endpoint_url, "contract", "secret", DEFAULT_REGION)
        yield S3Catalog(store, "s3://icefloe-contract/" + re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name))
        return
    # A long busy timeout: racers queue on SQLite's write lock, and CI machines can be slow.
    cat = SqlCatalog(f"sqlite:///{tmp_path}/catalog.db", busy_timeout_ms=60_000)
    yield cat
    cat.close()


def test_create_load_list_drop(catalog):
    """A created table loads at its location and is listed in its namespace until dropped."""
    catalog.create(T, "file:///w/db/events/metadata/v0.json")
    catalog.create(TableIdentifier(("db",), "users"), "file:///w/u0.json")
    catalog.create(TableIdentifier(("other",), "x"), "file:///w/x0.json")
    assert catalog.load(T) == "file:///w/db/events/metadata/v0.json"
    assert catalog.list_tables(("db",)) == [T, TableIdentifier(("db",), "users")]
    assert catalog.list_namespaces() == [("db",), ("other",)]
    catalog.drop(T)
    with pytest.raises(NoSuchTable):
        catalog.load(T)
    assert catalog.list_tables(("db",)) == [TableIdentifier(("db",), "users")]
    with pytest.raises(NoSuchTable):
        catalog.drop(T)


def test_create_twice_is_refused(catalog):
    """Creating an existing table raises TableAlreadyExists and keeps the first pointer."""
    catalog.create(T, "file:///a.json")
    with pytest.raises(TableAlreadyExists):
        catalog.create(T, "file:///b.json")
    assert catalog.load(T) == "file:///a.json"


def test_nested_namespace(catalog):
    """A multi-level namespace round-trips through create, load and list."""
    nested = TableIdentifier(("a", "b"), "t")
    catalog.create(nested, "file:///n.json")
    assert catalog.load(nested) == "file:///n.json"
    assert catalog.list_tables(("a", "b")) == [nested]
    assert catalog.list_tables(("a",)) == []


def test_swap_moves_pointer_only_from_expected(catalog):
    """swap from the current location moves the pointer; from a stale one it is rejected with
    the actual location; on a missing table it is rejected with none."""
    catalog.create(T, "v0")
    assert catalog.swap(T, "v0", "v1") == Swapped("v1")
    assert catalog.load(T) == "v1"
    stale = catalog.swap(T, "v0", "v2")
    assert isinstance(stale, SwapRejected) and stale.actual_location == "v1" and stale.expected_location == "v0"
    assert catalog.load(T) == "v1"
    missing = catalog.swap(TableIdentifier(("db",), "nope"), "v0", "v1")
    assert isinstance(missing, SwapRejected) and missing.actual_location is None


@pytest.mark.parametrize("round_", range(3))
def test_racing_swaps_have_one_winner(catalog, round_):
    """8 threads swap from the same expected location at once: exactly one Swapped, the rest
    SwapRejected naming the winner's location, and the pointer is the winner's."""
    catalog.create(T, "base")
    barrier = threading.Barrier(RACERS)
    results: list = [None] * RACERS

    def run(i):
        barrier.wait()
        results[i] = catalog.swap(T, "base", f"writer-{i}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(RACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, r in enumerate(results) if isinstance(r, Swapped)]
    assert len(winners) == 1, results
    winner = f"writer-{winners[0]}"
    losers = [r for i, r in enumerate(results) if i != winners[0]]
    assert all(isinstance(r, SwapRejected) and r.actual_location == winner for r in losers), results
    assert catalog.load(T) == winner


def test_chain_of_swaps_from_many_threads(catalog):
    """Threads that each retry swap(load(), new) until Swapped build one linear chain: each
    acknowledged swap starts where the previous one ended, none is lost or forked."""
    catalog.create(T, "w-start")
    writes_per_thread, threads_n = 5, 4
    attempts_max = 1000
    acknowledged: list[tuple[str, str]] = []
    lock = threading.Lock()

    def run(i):
        for k in range(writes_per_thread):
            for _ in range(attempts_max):
                expected = catalog.load(T)
                if isinstance(catalog.swap(T, expected, f"w{i}-{k}"), Swapped):
                    with lock:
                        acknowledged.append((expected, f"w{i}-{k}"))
                    break
            else:
                raise AssertionError("retry bound exhausted")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    successor = dict(acknowledged)
    assert len(successor) == len(acknowledged) == writes_per_thread * threads_n  # no fork
    chain, location = [], "w-start"
    while location in successor:
        location = successor[location]
        chain.append(location)
    assert len(chain) == writes_per_thread * threads_n  # no lost commit
    assert catalog.load(T) == chain[-1]
