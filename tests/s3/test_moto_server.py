"""MotoS3Server as the embedded default S3 (`make run`, the conformance harness): usable with
no setup, in process and from the command line."""
from __future__ import annotations

import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from icefloe.conformance.testing.moto_server import DEFAULT_BUCKET, DEFAULT_REGION, MotoS3Server
from icefloe.impl.s3.store import S3Store

STARTUP_S_MAX = 60


def test_needs_no_setup_and_frees_its_port(prefix):
    """Goal: `with MotoS3Server() as s3` is all a caller writes. Method: two servers at once get
    distinct free ports on 127.0.0.1, each serves the default bucket with atomic conditional
    writes (the middleware counts the requests); after the block the port refuses connections."""
    with MotoS3Server() as first, MotoS3Server() as second:
        assert first.endpoint_url.startswith("http://127.0.0.1:") and first.port != second.port
        store = S3Store.from_config(first.endpoint_url, "setup-free", "secret", DEFAULT_REGION)
        location = f"s3://{DEFAULT_BUCKET}/{prefix}/x"
        store.put_if_absent(location, b"x")
        assert store.get(location) == b"x"
        assert first.middleware is not None
        assert first.middleware.counts()[("PUT", "ConditionalPutObject", "setup-free")] == 1
        endpoint = first.endpoint_url
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(endpoint, timeout=5)


@pytest.mark.parametrize("bucket", ["ab", "Upper", "bad_name", "-dash"])
def test_an_invalid_bucket_name_is_refused_before_starting(bucket):
    """Goal: a bad bucket name is a clear ValueError, not moto's error after start-up."""
    with pytest.raises(ValueError, match="bucket name"):
        MotoS3Server(bucket=bucket)


def test_command_line_prints_the_endpoint_and_stops_on_sigterm(prefix):
    """Goal: `python -m icefloe.conformance.testing.moto_server` serves until SIGTERM. Method: start it, read
    the endpoint it prints, write and read an object there, send SIGTERM; it exits 0."""
    server = subprocess.Popen([sys.executable, "-m", "icefloe.conformance.testing.moto_server", "--bucket", "cli-bucket"],
                              stdout=subprocess.PIPE, text=True)
    try:
        endpoint = server.stdout.readline().strip()
        assert endpoint.startswith("http://127.0.0.1:"), endpoint
        store = S3Store.from_config(endpoint, "cli", "secret", DEFAULT_REGION)
        store.put_if_absent(f"s3://cli-bucket/{prefix}/x", b"x")
        assert store.get(f"s3://cli-bucket/{prefix}/x") == b"x"
        server.send_signal(signal.SIGTERM)
        assert server.wait(STARTUP_S_MAX) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
