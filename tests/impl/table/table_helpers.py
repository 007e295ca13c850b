"""Helpers for the table tests: the real stacks (LocalStore + SqlCatalog on SQLite,
MemoryStore + MemoryCatalog, S3Store + S3Catalog on a moto server), a small schema, and
seeded environments."""
from __future__ import annotations

import itertools

import pyarrow as pa

from icefloe.conformance.testing.faulty_catalog import FaultInjectingCatalog
from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.catalog.s3 import S3Catalog
from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.io.local import LocalStore
from icefloe.impl.io.memory import MemoryStore
from icefloe.impl.io.router import StoreRouter
from icefloe.conformance.testing.moto_server import DEFAULT_REGION
from icefloe.impl.s3.store import S3Store
from icefloe.impl.table.env import Env
from icefloe.impl.table.commit import PendingCommit
from icefloe.impl.table.table import Table, create_table

ARROW_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("cat", pa.string()),
                          pa.field("v", pa.float64())])
SCHEMA = schema_from_arrow(ARROW_SCHEMA)
FAST_RETRY = {"commit.retry.min-wait-ms": "0", "commit.retry.max-wait-ms": "0"}


def rows(ids, cat="a"):
    ids = list(ids)
    cats = cat if isinstance(cat, list) else [cat] * len(ids)
    return pa.table({"id": ids, "cat": cats, "v": [float(i) for i in ids]}, schema=ARROW_SCHEMA)


def ids_of(table: pa.Table) -> list:
    return sorted(table.column("id").to_pylist())


class Stack:
    """One catalog and one store, plus a factory for tables and seeded environments."""

    def __init__(self, kind, catalog, io, root):
        self.kind, self.catalog, self.io, self.root = kind, catalog, io, root
        self._seeds = itertools.count(1)

    def env(self, **kwargs) -> Env:
        return Env.seeded(next(self._seeds), sleep_ms=lambda ms: None, **kwargs)

    def create(self, name="t", partition: str | None = None, properties=None, env=None):
        spec = parse_partition_spec(partition, SCHEMA) if partition else None
        props = dict(FAST_RETRY, **(properties or {}))
        return create_table(self.catalog, f"db.{name}", SCHEMA, spec, f"{self.root}/db/{name}",
                            props, io=self.io, env=env or self.env())


def local_stack(tmp_path) -> Stack:
    return Stack("local", SqlCatalog(f"sqlite:///{tmp_path}/catalog.db"), LocalStore(fsync=False),
                 f"file://{tmp_path}/warehouse")


def memory_stack() -> Stack:
    return Stack("memory", FaultInjectingCatalog(MemoryCatalog()), MemoryStore(), "memory://warehouse")


def s3_stack(endpoint_url: str, bucket: str, prefix: str) -> Stack:
    """S3Store + S3Catalog on an S3 endpoint, everything under s3://bucket/prefix. The
    table's io is a router, as a reader of absolute locations needs: s3:// goes to this
    store, other schemes (a test's memory:// import) to the registry's stores."""
    store = S3Store.from_config(endpoint_url, "tables", "secret", DEFAULT_REGION)
    catalog = S3Catalog(store, f"s3://{bucket}/{prefix}/catalog")
    io = StoreRouter(stores={"s3": store, "s3a": store})
    return Stack("s3", catalog, io, f"s3://{bucket}/{prefix}/warehouse")


def step_to(commit: PendingCommit, phase: str, steps_max: int = 10) -> None:
    """Step a commit phase by phase until it reaches `phase` (bounded)."""
    for _ in range(steps_max):
        if commit.phase == phase:
            return
        commit.step()
    raise AssertionError(f"never reached {phase}, at {commit.phase}")


def rival(stack) -> Table:
    """A second, independent handle on the stack's table db.t (another writer)."""
    return Table(stack.catalog, "db.t", stack.io, stack.env())
