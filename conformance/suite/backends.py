"""What a conformance run needs started once and handed to each program: moto S3 on
127.0.0.1, a FaultProxy in front of it for black-box engines, `icefloe serve` with its
commit fault layer for REST engines (a local warehouse, a SQLite catalog), and a
directory for SQLite catalogs; `context()` makes each program's fresh TableContext."""
from __future__ import annotations

import itertools
import logging
import os
import tempfile
from dataclasses import replace
from pathlib import Path

from icefloe.conformance import adapter as A
from icefloe.conformance.suite.hooks import FaultSwitchboard
from icefloe.conformance.suite.profiles import MEMORY, REST
from icefloe.conformance.testing.rest_faults import Dropped, RestFaults


class Backends:
    """Storage and catalogs for a run: started lazily, stopped by `close()`."""

    def __init__(self):
        # SQLite catalogs on a RAM file system where there is one: every swap is a
        # transaction, and an fsync per step would dominate a run's time.
        ram = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        self.tmp = tempfile.TemporaryDirectory(prefix="icefloe-conform-", dir=ram)
        self.moto = None
        self.proxy = None
        self.rest_server = None
        self.postgres = None
        self.counter = itertools.count(1)

    def s3(self):
        if self.moto is None:
            from icefloe.conformance.testing.moto_server import MotoS3Server
            self.moto = MotoS3Server().start()
        return self.moto

    def fault_proxy(self):
        if self.proxy is None:
            from icefloe.conformance.testing.proxy import FaultProxy
            self.proxy = FaultProxy(self.s3().endpoint_url).start()
        return self.proxy

    def rest(self):
        """`icefloe serve` on 127.0.0.1 behind the commit fault layer (`.faults`), where a
        writer is told by its number or its access key in X-Icefloe-Writer."""
        if self.rest_server is None:
            from icefloe.conformance.testing.rest_server import RestServer
            root = Path(self.tmp.name) / "rest"
            (root / "warehouse").mkdir(parents=True)
            box = {}

            def wrap(app):
                box["faults"] = WriterFaults(app, {f"w{w}": w for w in range(0, 8)})
                return box["faults"]
            logging.getLogger("uvicorn.error").addFilter(_not_injected)
            self.rest_server = RestServer(f"sqlite:///{root / 'catalog.db'}", str(root / "warehouse"), wrap=wrap)
            self.rest_server.faults, self.rest_server.warehouse = box["faults"], f"file://{root / 'warehouse'}"
            self.rest_server.start()
        return self.rest_server

    def postgres_dsn(self) -> str:
        """A PostgreSQL server of the run's own (conformance.testing.postgres_server), for
        the races family's SQL catalog on a real server; started on first use."""
        if self.postgres is None:
            from icefloe.conformance.testing.postgres_server import PostgresServer
            self.postgres = PostgresServer.temporary()
        return self.postgres.dsn

    def context(self, engine, store: str, seed: int, attempts_max: int, catalog: str | None = None) -> A.TableContext:
        """A fresh table's context (format v2, or the oldest version an engine that makes no
        v2 table declares: Iceberg-Java's `java-v3` runs the families on v3 tables)."""
        ctx = self._context(engine, store, seed, attempts_max, catalog)
        versions = engine.capabilities.format_versions
        return ctx if ctx.format_version in versions else replace(ctx, format_version=min(versions))

    def _context(self, engine, store: str, seed: int, attempts_max: int, catalog: str | None = None) -> A.TableContext:
        """A fresh table's context. On S3 every engine talks to the FaultProxy (transport
        faults, gates); its pointer is in SQLite or, for stepping engines, in the S3 catalog:
        `catalog` "sqlite" / "s3", or alternating between examples when None."""
        n = next(self.counter)
        workdir = Path(self.tmp.name) / f"ex{n}"
        workdir.mkdir()
        hooks = FaultSwitchboard()
        keys = {w: f"w{w}" for w in range(0, 8)}
        sqlite = f"sqlite:///{workdir / 'catalog.db'}"
        if store == MEMORY and catalog == "postgres":      # one server, a table name per program
            return A.TableContext(warehouse="memory://warehouse", catalog_uri=self.postgres_dsn(), faults=hooks,
                                  identifier=f"db.t{n}", commit_attempts_max=attempts_max, seed=seed + n,
                                  workdir=str(workdir), access_keys=keys)
        if store == MEMORY:
            return A.TableContext(warehouse="memory://warehouse", catalog_uri=sqlite, faults=hooks,
                                  commit_attempts_max=attempts_max, seed=seed + n, workdir=str(workdir),
                                  access_keys=keys)
        if store == REST:
            server = self.rest()
            server.faults.close()                 # nothing held or parked from an earlier program
            return A.TableContext(warehouse=server.warehouse, catalog_uri=server.url, identifier=f"db.t{n}",
                                  access_keys=keys, faults=hooks, commit_attempts_max=attempts_max, seed=seed + n,
                                  workdir=str(workdir))
        from icefloe.conformance.testing.moto_server import DEFAULT_SECRET_KEY
        black_box = engine.capabilities.mode == A.BLACK_BOX
        if catalog is None:
            catalog = "s3" if not black_box and n % 2 else "sqlite"
        # A prefix of this run's own: moto keeps its buckets for the whole process, so a second
        # run in one process (a test after a test) would meet the first run's pointers at ex{n}.
        run = Path(self.tmp.name).name
        return A.TableContext(warehouse=f"s3://{self.s3().bucket}/conform/{run}/ex{n}",
                              catalog_uri=None if catalog == "s3" else sqlite,
                              s3_endpoint=self.fault_proxy().endpoint_url, access_keys=keys, secret_key=DEFAULT_SECRET_KEY,
                              faults=hooks, commit_attempts_max=attempts_max, seed=seed + n,
                              workdir=str(workdir))

    def close(self):
        if self.rest_server is not None:
            self.rest_server.faults.close()
            self.rest_server.stop()
            self.rest_server = None
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        if self.moto is not None:
            self.moto.stop()
            self.moto = None
        if self.postgres is not None:
            self.postgres.remove()
            self.postgres = None
        self.tmp.cleanup()


class WriterFaults(RestFaults):
    """The commit fault layer, a writer named by its number or by its access key."""

    def __init__(self, app, aliases: dict):
        super().__init__(app, tokens=aliases)      # DuckDB sends its access key as a bearer token
        self.aliases = aliases

    def writer_of(self, headers: dict):
        writer = super().writer_of(headers)
        return self.aliases.get(writer, writer)


def _not_injected(record: logging.LogRecord) -> bool:
    """uvicorn logs the connection the fault layer drops on purpose as an error: not one."""
    return not (record.exc_info and isinstance(record.exc_info[1], Dropped))
