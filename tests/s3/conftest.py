"""Fixtures for the S3 suite: one atomic moto server per xdist worker, on 127.0.0.1.

moto's state is process-global, so tests isolate themselves by key prefix
(`prefix`, derived from the test's own name), never by restarting moto.
"""
from __future__ import annotations

import re
import socket
from typing import Iterator

import pytest
from pyarrow import fs

from icefloe.conformance.testing.moto_server import DEFAULT_BUCKET, DEFAULT_REGION, MotoS3Server
from icefloe.conformance.testing.proxy import FaultProxy
from icefloe.impl.s3.store import S3Store

BUCKET = DEFAULT_BUCKET


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[MotoS3Server]:
    with MotoS3Server(bucket=BUCKET, atomic=True) as server:
        yield server


@pytest.fixture
def prefix(request: pytest.FixtureRequest) -> str:
    """A key prefix unique to this test (and to its parameters)."""
    return "t/" + re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)


def make_store(endpoint_url: str, client: str = "writer", **options) -> S3Store:
    """A store whose access key id is `client` (how the proxy names clients)."""
    return S3Store.from_config(endpoint_url, client, "secret", DEFAULT_REGION, **options)


def make_arrow_fs(proxy: FaultProxy, client: str = "arrow",
                  attempts_max: int = 1) -> fs.S3FileSystem:
    return fs.S3FileSystem(
        access_key=client, secret_key="secret", region=DEFAULT_REGION,
        endpoint_override=proxy.endpoint, scheme="http",
        retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=attempts_max))


@pytest.fixture
def store(moto_s3: MotoS3Server) -> S3Store:
    return make_store(moto_s3.endpoint_url)


@pytest.fixture
def proxy(moto_s3: MotoS3Server) -> Iterator[FaultProxy]:
    with FaultProxy(moto_s3.endpoint_url, seed=0) as running:
        yield running


@pytest.fixture
def refused_endpoint() -> Iterator[str]:
    """An address where connections are refused: a port bound but not listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def store_for():
    """store_for(endpoint_url, client="writer", **options) -> S3Store."""
    return make_store


@pytest.fixture
def arrow_fs_for():
    """arrow_fs_for(proxy, client="arrow", attempts_max=1) -> pyarrow S3FileSystem."""
    return make_arrow_fs
