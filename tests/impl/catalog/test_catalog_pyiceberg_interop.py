"""SqlCatalog and pyiceberg's SqlCatalog share one SQLite file: each sees the other's tables
and pointer moves (pyiceberg is the real peer; nothing is mocked)."""
from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from icefloe.impl.catalog.base import TableIdentifier
from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.io.local import LocalStore
from icefloe.impl.outcomes import SwapRejected, Swapped

T = TableIdentifier(("db",), "events")
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])


@pytest.fixture
def both(tmp_path):
    uri = f"sqlite:///{tmp_path}/catalog.db"
    theirs = PyIcebergSqlCatalog("icefloe", uri=uri, warehouse=f"file://{tmp_path}/warehouse")
    ours = SqlCatalog(uri)
    yield theirs, ours, tmp_path
    ours.close()
    theirs.close()


def _pyiceberg_table(theirs):
    theirs.create_namespace("db")
    table = theirs.create_table("db.events", schema=SCHEMA)
    table.append(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=SCHEMA))
    return theirs.load_table("db.events")


def _next_metadata(store: LocalStore, current_location: str, directory: str, properties: dict[str, str]) -> str:
    """A successor of the current metadata: properties set, the metadata log extended."""
    metadata = json.loads(store.get(current_location))
    metadata["properties"] = {**metadata.get("properties", {}), **properties}
    metadata["metadata-log"] = [*metadata.get("metadata-log", []),
                                {"metadata-file": current_location, "timestamp-ms": metadata["last-updated-ms"]}]
    metadata["last-updated-ms"] += 1
    location = f"{directory}/00099-{uuid.uuid4()}.metadata.json"
    store.put_if_absent(location, json.dumps(metadata).encode())
    return location


def test_pyiceberg_table_is_listed_and_loaded_by_ours(both):
    """A table pyiceberg created and appended to is listed by ours at the same metadata location."""
    theirs, ours, _ = both
    table = _pyiceberg_table(theirs)
    assert ours.list_namespaces() == [("db",)]
    assert ours.list_tables(("db",)) == [T]
    assert ours.load(T) == table.metadata_location
    assert ours.schema_version == "v1"


def test_table_registered_by_ours_is_loaded_by_pyiceberg(both):
    """A pyiceberg-written metadata file copied elsewhere (spelled file:/) and created by ours
    in a new namespace loads in pyiceberg with the same location, schema and rows."""
    theirs, ours, tmp_path = both
    source = _pyiceberg_table(theirs)
    store = LocalStore()
    copy = f"file:{tmp_path}/elsewhere/metadata/00000-{uuid.uuid4()}.metadata.json"
    store.put_if_absent(copy, store.get(source.metadata_location))
    registered = TableIdentifier(("imported",), "events_copy")
    ours.create(registered, copy)
    assert ("imported",) in theirs.list_namespaces()
    assert ("imported", "events_copy") in theirs.list_tables("imported")
    loaded = theirs.load_table("imported.events_copy")
    assert loaded.metadata_location == copy
    assert loaded.schema() == source.schema()
    assert loaded.scan().to_arrow().sort_by("id").column("id").to_pylist() == [1, 2]


def test_swap_by_ours_is_seen_by_pyiceberg_and_back(both):
    """Ours swaps the pointer to a successor metadata file: pyiceberg loads it; pyiceberg then
    commits on top of it and ours loads pyiceberg's new location, with ours as its parent."""
    theirs, ours, tmp_path = both
    table = _pyiceberg_table(theirs)
    store = LocalStore()
    directory = table.metadata_location.rsplit("/", 1)[0]
    successor = _next_metadata(store, table.metadata_location, directory, {"icefloe.touch": "ours"})
    assert ours.swap(T, table.metadata_location, successor) == Swapped(successor)
    seen = theirs.load_table("db.events")
    assert seen.metadata_location == successor and seen.properties["icefloe.touch"] == "ours"

    seen.append(pa.table({"id": [3], "name": ["c"]}, schema=SCHEMA))
    after = ours.load(T)
    assert after not in (successor, table.metadata_location)
    assert after == theirs.load_table("db.events").metadata_location
    log = [e["metadata-file"] for e in json.loads(store.get(after))["metadata-log"]]
    assert log[-1] == successor
    assert isinstance(ours.swap(T, successor, f"{directory}/never.json"), SwapRejected)


def test_pyiceberg_commit_between_load_and_swap_rejects_ours(both):
    """When pyiceberg commits after ours read the pointer, ours's swap from the stale location is
    rejected naming pyiceberg's location, and pyiceberg's commit survives."""
    theirs, ours, tmp_path = both
    table = _pyiceberg_table(theirs)
    store = LocalStore()
    expected = ours.load(T)
    successor = _next_metadata(store, expected, tmp_path.as_posix() + "/ours", {"icefloe.touch": "late"})
    table.append(pa.table({"id": [9], "name": ["z"]}, schema=SCHEMA))
    theirs_location = theirs.load_table("db.events").metadata_location
    result = ours.swap(T, expected, successor)
    assert isinstance(result, SwapRejected) and result.actual_location == theirs_location
    assert theirs.load_table("db.events").metadata_location == theirs_location


def test_drop_by_ours_is_seen_by_pyiceberg(both):
    """A table dropped by ours no longer exists for pyiceberg."""
    theirs, ours, _ = both
    _pyiceberg_table(theirs)
    ours.drop(T)
    assert not theirs.table_exists("db.events")
    assert theirs.list_tables("db") == []


def test_concurrent_writers_of_both_catalogs_lose_nothing(both):
    """2 threads of ours and 2 of pyiceberg each add 5 table properties concurrently, retrying
    on conflict (bounded): all 20 properties survive, so no commit of either side was lost."""
    import threading

    theirs, ours, tmp_path = both
    table = _pyiceberg_table(theirs)
    directory = table.metadata_location.rsplit("/", 1)[0]
    store = LocalStore(fsync=False)
    commits_per_writer, attempts_max = 5, 200
    failures: list[str] = []

    def our_writer(i):
        for k in range(commits_per_writer):
            for _ in range(attempts_max):
                current = ours.load(T)
                location = _next_metadata(store, current, directory, {f"ours-{i}-{k}": "1"})
                if isinstance(ours.swap(T, current, location), Swapped):
                    break
            else:
                failures.append(f"ours-{i}-{k}")

    def their_writer(i):
        from pyiceberg.exceptions import CommitFailedException

        for k in range(commits_per_writer):
            for _ in range(attempts_max):
                try:
                    with theirs.load_table("db.events").transaction() as tx:
                        tx.set_properties({f"theirs-{i}-{k}": "1"})
                    break
                except CommitFailedException:
                    continue
            else:
                failures.append(f"theirs-{i}-{k}")

    threads = [threading.Thread(target=f, args=(i,)) for f in (our_writer, their_writer) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    properties = theirs.load_table("db.events").properties
    expected = {f"{side}-{i}-{k}" for side in ("ours", "theirs") for i in range(2) for k in range(commits_per_writer)}
    assert expected <= set(properties)
    assert ours.load(T) == theirs.load_table("db.events").metadata_location
