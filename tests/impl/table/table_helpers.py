"""Helpers for the table tests: the two real stacks (LocalStore + SqlCatalog on SQLite,
MemoryStore + MemoryCatalog), a small schema, and seeded environments."""
from __future__ import annotations

import itertools

import pyarrow as pa

from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.io.local import LocalStore
from icefloe.impl.io.memory import MemoryStore
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
    return Stack("memory", MemoryCatalog(), MemoryStore(), "memory://warehouse")


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
