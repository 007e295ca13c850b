"""pyiceberg's S3 FileIO (PyArrowFileIO) through the fault-injecting proxy.

pyiceberg creates a file with "HEAD, then an unconditional upload": a check-then-write,
like the exists-then-rename commits of apache/iceberg #970 (REGRESSIONS.md row 6). A
gate between the check and the write shows two creators both told "created".
"""
from __future__ import annotations

import threading

import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO

from icefloe.impl.s3.proxy import LoseResponse, Match, Rule

BUCKET = "icefloe"
HOLD_S_MAX = 30  # safety net for waits on gates and threads; events decide the order


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
