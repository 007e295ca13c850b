"""pyiceberg's S3 FileIO (PyArrowFileIO) through the fault-injecting proxy.

pyiceberg creates a file with "HEAD, then an unconditional upload": a check-then-write,
like the exists-then-rename commits of apache/iceberg #970 (REGRESSIONS.md row 6). A
gate between the check and the write shows two creators both told "created". Every fault
kind is run against this FileIO in test_proxy.py (its `pyiceberg` client). Here, a
pyiceberg table on S3 beside icefloe on one SQLite catalog: pyiceberg's swap is a SQL
UPDATE, not an S3 request, so only its file writes can be held or faulted.
"""
from __future__ import annotations

import threading

import pyarrow as pa
import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO

from icefloe.conformance.testing.proxy import LoseResponse, Match, Rule

BUCKET = "icefloe"
HOLD_S_MAX = 30  # safety net for waits on gates and threads; events decide the order
ARROW_SCHEMA = pa.schema([pa.field("id", pa.int64())])


def file_io(proxy, client: str, warm_up_location: str) -> PyArrowFileIO:
    """A FileIO whose pyarrow filesystem already exists. Constructing a pyarrow
    S3FileSystem waits until no S3 request is in flight anywhere in the process, so
    one created lazily while a gate holds a request would wait for the gate. The
    request timeout is raised from the SDK's 3 s, after which the SDK would silently
    re-send a held request."""
    io = PyArrowFileIO({"s3.endpoint": proxy.endpoint_url, "s3.access-key-id": client,
                        "s3.secret-access-key": "secret", "s3.region": "us-east-1",
                        "s3.request-timeout": 60})
    io.new_input(warm_up_location).exists()
    return io


def create(io: PyArrowFileIO, location: str, data: bytes) -> None:
    with io.new_output(location).create(overwrite=False) as out:
        out.write(data)


def read(io: PyArrowFileIO, location: str) -> bytes:
    with io.new_input(location).open() as stream:
        return stream.read()


def test_pyiceberg_create_refuses_an_existing_file(proxy, prefix):
    """Goal: the proxy is transparent to pyiceberg's FileIO. Method: create, read, create again
    (FileExistsError); the history shows pyiceberg's check-then-write requests."""
    location = f"s3://{BUCKET}/{prefix}/v1.metadata.json"
    io = file_io(proxy, "ice", location)
    proxy.clear()
    create(io, location, b"{}" * 3000)
    assert read(io, location) == b"{}" * 3000
    with pytest.raises(FileExistsError):
        create(io, location, b"again")
    creating = [e.operation for e in proxy.history()][:2]
    assert creating == ["HeadObject", "ListObjectsV2"]  # the existence check, not a condition


def test_pyiceberg_create_is_check_then_write(proxy, prefix):
    """Goal: show two pyiceberg creators can both "create" one file, the last silently
    overwriting the first. Method: gate A's upload after its existence check, let B create the
    file, release A; both calls succeed and A's bytes remain."""
    location = f"s3://{BUCKET}/{prefix}/v1.metadata.json"
    a, b = file_io(proxy, "ice-a", location), file_io(proxy, "ice-b", location)
    gate = proxy.add_gate(Match(operation="CreateMultipartUpload", client="ice-a"))
    errors: list[Exception] = []

    def create_a() -> None:
        try:
            create(a, location, b"from-a" * 1000)
        except Exception as exc:  # noqa: BLE001 - the outcome is the result
            errors.append(exc)

    thread = threading.Thread(target=create_a)
    thread.start()
    assert gate.wait_arrived(HOLD_S_MAX)  # A has checked: the file did not exist
    create(b, location, b"from-b" * 1000)
    gate.release()
    thread.join(HOLD_S_MAX)
    assert not thread.is_alive() and errors == []
    assert read(b, location) == b"from-a" * 1000  # B's "created" file is gone


def test_pyiceberg_write_with_lost_ack_fails_but_landed(proxy, prefix):
    """Goal: a FileIO write whose acknowledgement is lost is reported as failed although the
    file exists. Method: answer every CompleteMultipartUpload with a 500 after upstream applied
    it (the SDK's own retries meet the same fate); then read the file."""
    location = f"s3://{BUCKET}/{prefix}/m.json"
    io = file_io(proxy, "ice", location)
    proxy.add_rule(Rule(LoseResponse("500"), Match(operation="CompleteMultipartUpload")))
    with pytest.raises(OSError):
        create(io, location, b"ours" * 1000)
    completes = proxy.history(["CompleteMultipartUpload"])
    assert completes and all((e.upstream_status, e.returned) == (200, 500) for e in completes)
    proxy.clear()
    assert read(io, location) == b"ours" * 1000


# -- a pyiceberg table on S3 beside icefloe, one SQLite catalog ------------------------------

def _peers(proxy, tmp_path, prefix):
    """One SQLite catalog file, one table on S3: icefloe (S3Store through the proxy as client
    "icefloe") and pyiceberg (SqlCatalog on the same file, its FileIO through the proxy as
    client "ice", one SDK attempt per request)."""
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

    from icefloe.impl.catalog.sql import SqlCatalog
    from icefloe.impl.format.types import schema_from_arrow
    from icefloe.conformance.testing.moto_server import DEFAULT_REGION
    from icefloe.conformance.testing.peer_clients import pyiceberg_s3_properties
    from icefloe.impl.s3.store import S3Store
    from icefloe.impl.table.table import create_table

    store = S3Store.from_config(proxy.endpoint_url, "icefloe", "secret", DEFAULT_REGION)
    ours = SqlCatalog(f"sqlite:///{tmp_path}/catalog.db", busy_timeout_ms=30_000)
    table = create_table(ours, "db.t", schema_from_arrow(ARROW_SCHEMA), location=f"s3://{BUCKET}/{prefix}/t",
                         properties={"commit.retry.min-wait-ms": "0", "commit.retry.max-wait-ms": "0"},
                         io=store)
    theirs = PyIcebergSqlCatalog("icefloe", uri=f"sqlite:///{tmp_path}/catalog.db",
                                 **pyiceberg_s3_properties(proxy.endpoint_url, "ice"))
    peer_table = theirs.load_table("db.t")
    peer_table.scan().to_arrow()  # builds its pyarrow filesystem before any gate is set
    return ours, table, theirs, peer_table


def _rows(ids):
    return pa.table({"id": pa.array(ids, pa.int64())}, schema=ARROW_SCHEMA)


def test_icefloe_commits_while_pyiceberg_metadata_write_is_held(proxy, prefix, tmp_path):
    """Goal: a black-box peer's write can be held at the proxy to force an interleaving, and the
    table stays correct: pyiceberg's commit, built on a base that icefloe then moves, must not
    lose icefloe's rows. Method: gate pyiceberg's upload of its new metadata JSON; icefloe
    appends and commits meanwhile; release. pyiceberg's SQL swap then fails, it retries on the
    new base (its own commit.retry), and both rows are read exactly once by both engines with
    a linear history; the proxy's history shows pyiceberg's held upload reaching the server
    after icefloe's commit."""
    ours, table, theirs, peer_table = _peers(proxy, tmp_path, prefix)
    proxy.clear()
    gate = proxy.add_gate(Match(operation="CreateMultipartUpload", key="*.metadata.json", client="ice"))
    errors: list[BaseException] = []

    def pyiceberg_append() -> None:
        try:
            peer_table.append(_rows([1]))
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    writer = threading.Thread(target=pyiceberg_append)
    writer.start()
    assert gate.wait_arrived(HOLD_S_MAX)  # pyiceberg has written its data, manifest and list
    from icefloe.impl.outcomes import Committed
    outcome = table.append(_rows([2]))
    assert isinstance(outcome, Committed), outcome
    gate.release()
    writer.join(HOLD_S_MAX)
    assert not writer.is_alive() and errors == []
    [held] = [e for e in proxy.history(["CreateMultipartUpload"]) if e.fault == "gate"]
    icefloe_writes = [e for e in proxy.history() if e.client == "icefloe"]
    assert held.upstream_status == 200 and icefloe_writes
    assert held.end_s > max(e.end_s for e in icefloe_writes)  # the order the gate forced
    table.refresh()
    history = table.history()
    assert len(history) == 2 and history[1].parent_snapshot_id == history[0].snapshot_id
    assert sorted(table.scan().column("id").to_pylist()) == [1, 2]
    assert sorted(theirs.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == [1, 2]
    ours.close()
