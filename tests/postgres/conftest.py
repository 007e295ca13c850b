"""Fixtures for the PostgreSQL suite: one real PostgreSQL server per xdist worker.

Debian's server binaries (`/usr/lib/postgresql/<version>/bin`; `scripts/ensure-postgres.sh`
installs them when missing). The server runs as the `postgres` user when the tests run as
root, because initdb and postgres refuse to run as root; its data directory is a fresh
temporary directory owned by that user, it listens on 127.0.0.1 on a free port with trust
authentication (initdb -A trust), and it is stopped and removed at the end of the session.

Tests share the server and isolate themselves by catalog name (`catalog_name`), which is
part of every key of the Iceberg JDBC tables.

`synchronous_standby_names` names a standby that never exists, with
`synchronous_commit = local` as the default, so ordinary commits never wait. A session that
sets `synchronous_commit = on` waits in COMMIT after its transaction has committed locally,
for as long as the test wants: a COMMIT held in flight on a real server.
"""
from __future__ import annotations

import re
import uuid
from typing import Iterator

import psycopg2  # noqa: F401 - the suite needs the driver; fail here, not in each test
import pytest

from icefloe.conformance.testing.postgres_server import (  # noqa: F401 - re-exported for the suite's tests
    PostgresServer, as_server_user, free_port, server_bin_dir,
)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    with PostgresServer.temporary() as server:
        yield server


@pytest.fixture
def catalog_name(request: pytest.FixtureRequest) -> str:
    """A catalog name unique to this test: tests share the server's tables."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", request.node.name)[:60] + "_" + uuid.uuid4().hex[:8]
