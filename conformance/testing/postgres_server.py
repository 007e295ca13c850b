"""A throwaway PostgreSQL server for tests and campaigns (test infrastructure, never imported by
impl): Debian's server binaries (`/usr/lib/postgresql/<version>/bin`; `scripts/ensure-postgres.sh`
installs them when missing), a fresh data directory, 127.0.0.1 on a free port, trust
authentication. As root, initdb and postgres run as the `postgres` user (they refuse root),
and the data directory is owned by that user.

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
from dataclasses import dataclass

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
        import psycopg2
        conn = psycopg2.connect(self.dsn, **options)
        conn.autocommit = True
        return conn



    @classmethod
    def temporary(cls) -> "PostgresServer":
        """A started server in a fresh directory under /tmp (not a private temporary
        directory: the server runs as postgres); `remove()` stops it and deletes it."""
        root = tempfile.mkdtemp(prefix="icefloe-pg-", dir="/tmp")
        server = cls(root)
        try:
            return server.start()
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise

    def remove(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "PostgresServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()
