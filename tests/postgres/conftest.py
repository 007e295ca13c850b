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

import glob
import os
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from typing import Iterator

import psycopg2
import pytest

START_ATTEMPTS_MAX = 5  # a free port can be taken between choosing and binding it
PG_CTL_TIMEOUT_S = 120
SERVER_SETTINGS = (
    "fsync=off", "full_page_writes=off",  # a throwaway server: durability buys nothing here
    "synchronous_commit=local", "synchronous_standby_names=ghost",  # see the module docstring
    "max_connections=60", "shared_buffers=16MB",
)


def server_bin_dir() -> str:
    def version(path: str) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", path.split("/")[-2]))

    dirs = [d for d in glob.glob("/usr/lib/postgresql/*/bin")
            if os.access(os.path.join(d, "initdb"), os.X_OK)]
    if not dirs:
        raise RuntimeError("no PostgreSQL server in /usr/lib/postgresql/*/bin: run scripts/ensure-postgres.sh")
    return max(dirs, key=version)


def as_server_user(argv: list[str]) -> list[str]:
    """initdb and postgres refuse root: run them as `postgres` when we are root."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *argv]
    return argv


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class PostgresServer:
    root: str
    port: int = 0

    @property
    def data_dir(self) -> str:
        return os.path.join(self.root, "data")

    @property
    def log_path(self) -> str:
        return os.path.join(self.root, "server.log")

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, argv: list[str]) -> None:
        done = subprocess.run(as_server_user(argv), capture_output=True, text=True, timeout=PG_CTL_TIMEOUT_S)
        if done.returncode != 0:
            log = open(self.log_path).read()[-4000:] if os.path.exists(self.log_path) else ""
            raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stdout}{done.stderr}\n{log}")

    def start(self) -> "PostgresServer":
        bin_dir = server_bin_dir()
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self._run([f"{bin_dir}/initdb", "-D", self.data_dir, "-U", "postgres", "-A", "trust",
                   "-E", "UTF8", "--locale=C", "--no-sync"])
        settings = " ".join(f"-c {s}" for s in SERVER_SETTINGS)
        for attempt in range(1, START_ATTEMPTS_MAX + 1):
            self.port = free_port()
            options = f"-h 127.0.0.1 -p {self.port} -k {self.root} {settings}"
            try:
                self._run([f"{bin_dir}/pg_ctl", "-D", self.data_dir, "-l", self.log_path, "-w",
                           "-t", str(PG_CTL_TIMEOUT_S), "-o", options, "start"])
                return self
            except RuntimeError:
                if attempt == START_ATTEMPTS_MAX:
                    raise
        raise AssertionError("unreachable")

    def stop(self) -> None:
        if os.path.exists(os.path.join(self.data_dir, "postmaster.pid")):
            self._run([f"{server_bin_dir()}/pg_ctl", "-D", self.data_dir, "-m", "immediate", "-w", "stop"])

    def connect(self, **options):
        conn = psycopg2.connect(self.dsn, **options)
        conn.autocommit = True
        return conn


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    # Not pytest's tmp_path: its directories are private to root, and the server runs as postgres.
    root = tempfile.mkdtemp(prefix="icefloe-pg-", dir="/tmp")
    server = PostgresServer(root)
    try:
        server.start()
        yield server
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def catalog_name(request: pytest.FixtureRequest) -> str:
    """A catalog name unique to this test: tests share the server's tables."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", request.node.name)[:60] + "_" + uuid.uuid4().hex[:8]
