"""Bounded, reported S3 timeouts and the missing bucket, from the store up to the CLI (issue 14
item 4): an endpoint that accepts connections and never answers ends a call at its deadline
with S3Timeout naming the endpoint (it used to give 4 attempts x 30 s of silence); a missing
bucket is NoSuchBucket, never NoSuchTable."""
from __future__ import annotations

import socket
import threading
from typing import Iterator

import pytest

from icefloe.impl.catalog.base import NoSuchTable, TableIdentifier
from icefloe.impl.catalog.s3 import S3Catalog
from icefloe.impl.io.base import StoreOutcomeUnknown, StoreUnavailable
from icefloe.impl.s3.store import NoSuchBucket, S3Store, S3Timeout, S3TimeoutOutcomeUnknown

READ_TIMEOUT_S = 0.2  # the socket timeout each attempt waits (kept short: the server is silent)


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An endpoint that accepts every connection and never sends a byte."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        server.close()


class StepClock:
    """An injected clock that moves `step` seconds each time it is read: the deadline logic
    is checked by attempt counts, never by measuring time."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def silent_store(endpoint: str, *, deadline_s: float, step: float, attempts_max: int = 4) -> S3Store:
    return S3Store.from_config(endpoint, "writer", "secret", "us-east-1", connect_timeout_s=1,
                               read_timeout_s=READ_TIMEOUT_S, attempts_max=attempts_max,
                               deadline_s=deadline_s, clock=StepClock(step))


@pytest.mark.parametrize("deadline_s, step, attempts", [(100.0, 1.0, 4), (1.5, 1.0, 2), (0.5, 1.0, 1)])
def test_a_silent_endpoint_ends_at_the_deadline_with_a_typed_error_naming_it(silent_endpoint, deadline_s, step,
                                                                              attempts):
    """Goal: a read against an endpoint that never answers stops when its attempts or its
    deadline run out, as S3Timeout (a StoreUnavailable) naming the endpoint and the limits.
    Method: a silent socket server; the store's clock moves one second per reading, so the
    deadline allows a known number of attempts; count the GETs sent."""
    store = silent_store(silent_endpoint, deadline_s=deadline_s, step=step)
    with pytest.raises(S3Timeout) as caught:
        store.get("s3://bucket/some/key")
    assert isinstance(caught.value, StoreUnavailable)
    text = str(caught.value)
    assert silent_endpoint in text and "did not answer" in text and f"deadline {deadline_s:g} s" in text
    assert f"read timeout {READ_TIMEOUT_S:g} s" in text
    assert store.counts["get"] == attempts


def test_a_silent_conditional_write_is_an_unknown_outcome_naming_the_endpoint(silent_endpoint):
    """Goal: a conditional PUT that timed out after it was sent may have landed: its failure is
    an unknown outcome (S3TimeoutOutcomeUnknown), not a definite one, and says why. Method:
    put_if_absent against the silent endpoint with a two-attempt deadline; the read-back
    times out too."""
    store = silent_store(silent_endpoint, deadline_s=1.5, step=1.0)
    with pytest.raises(S3TimeoutOutcomeUnknown) as caught:
        store.put_if_absent("s3://bucket/k", b"data")
    assert isinstance(caught.value, StoreOutcomeUnknown)
    assert silent_endpoint in str(caught.value) and "may have landed" in str(caught.value)
    assert store.counts["put_if_absent"] == 2 and store.counts["get"] >= 1


def test_timeouts_come_from_pyiceberg_property_names(silent_endpoint):
    """Goal: s3.connect-timeout, s3.request-timeout (pyiceberg's names) and s3.deadline set the
    bounds, and a bad value is a typed error. Method: build from properties; read the
    client's config and the store's deadline."""
    from icefloe.impl.outcomes import InvalidArgument
    props = {"s3.endpoint": silent_endpoint, "s3.access-key-id": "a", "s3.secret-access-key": "b",
             "s3.connect-timeout": "2", "s3.request-timeout": "3.5", "s3.deadline": "7"}
    store = S3Store.from_properties(props, environ={})
    assert (store.connect_timeout_s, store.read_timeout_s, store.deadline_s) == (2.0, 3.5, 7.0)
    assert store.endpoint == silent_endpoint
    for bad in ("soon", "-1", "0"):
        with pytest.raises(InvalidArgument, match="s3.deadline"):
            S3Store.from_properties({**props, "s3.deadline": bad}, environ={})


def test_cli_against_a_silent_endpoint_says_so_in_one_line(silent_endpoint, monkeypatch, capsys):
    """Goal: `icefloe scan` on an S3 catalog whose endpoint never answers ends with one line
    naming the endpoint, exit 2, no traceback. Method: the CLI with the endpoint and short
    timeouts from the environment (ICEFLOE_S3_REQUEST_TIMEOUT, ICEFLOE_S3_DEADLINE)."""
    from icefloe.impl import cli
    for name, value in (("ICEFLOE_S3_ENDPOINT", silent_endpoint), ("AWS_ACCESS_KEY_ID", "a"),
                        ("AWS_SECRET_ACCESS_KEY", "b"), ("ICEFLOE_S3_REQUEST_TIMEOUT", str(READ_TIMEOUT_S)),
                        ("ICEFLOE_S3_DEADLINE", "0.3")):
        monkeypatch.setenv(name, value)
    assert cli.main(["--catalog", "s3://bkt/wh", "scan", "db.t"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert silent_endpoint in err and "did not answer" in err and "deadline 0.3 s" in err


def test_a_missing_bucket_never_reads_as_no_such_table(moto_s3, store_for):
    """Goal: an S3 catalog whose warehouse bucket does not exist says so (NoSuchBucket), for
    load, create and list, instead of NoSuchTable or an empty listing. Method: an S3Catalog
    on an unknown bucket of the running moto server; and, as a control, an absent table in
    the real bucket is NoSuchTable."""
    store = store_for(moto_s3.endpoint_url)
    catalog = S3Catalog(store, "s3://no-such-warehouse-bucket/wh")
    ident = TableIdentifier(("db",), "t")
    for call in (lambda: catalog.load(ident), lambda: catalog.create(ident, "s3://x/m.metadata.json"),
                 lambda: catalog.list_tables(("db",))):
        with pytest.raises(NoSuchBucket, match="no-such-warehouse-bucket"):
            call()
    with pytest.raises(NoSuchTable):
        S3Catalog(store, f"s3://{moto_s3.bucket}/wh-missing-bucket-control").load(ident)


def test_cli_scan_on_a_missing_bucket_names_the_bucket(moto_s3, monkeypatch, capsys):
    """Goal: the CLI on a catalog in a bucket that does not exist prints one NoSuchBucket line
    naming it (the report was `NoSuchTable`). Method: icefloe scan against moto with an
    unknown bucket."""
    from icefloe.impl import cli
    monkeypatch.setenv("ICEFLOE_S3_ENDPOINT", moto_s3.endpoint_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "a")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "b")
    assert cli.main(["--catalog", "s3://no-such-cli-bucket/wh", "scan", "db.t"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "NoSuchBucket" in err and "no-such-cli-bucket" in err and "NoSuchTable" not in err
