"""Table writers in separate processes committing to one table through SqlCatalog on the real
PostgreSQL server (issue 4, item 6): a stress campaign judged afterwards on the final table."""
from __future__ import annotations

import multiprocessing

import pyarrow as pa

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.io.local import LocalStore
from icefloe.impl.outcomes import Committed
from icefloe.impl.table.env import Env
from icefloe.impl.table.table import Table, create_table

PROCESSES = 3
APPENDS_PER_PROCESS = 6
LOCK_TIMEOUT_MS = 60_000
ARROW_SCHEMA = pa.schema([pa.field("id", pa.int64())])
CONTENTION = {"commit.retry.num-retries": "100", "commit.retry.min-wait-ms": "1",
              "commit.retry.max-wait-ms": "20", "commit.retry.total-timeout-ms": "600000"}


def _appender(args) -> list[tuple[str, int | None, int]]:
    """One writer process: its own catalog connection and table handle, real clocks and sleeps."""
    dsn, catalog_name, i, barrier = args
    catalog = SqlCatalog(dsn, name=catalog_name, busy_timeout_ms=LOCK_TIMEOUT_MS, init_tables=False)
    table = Table(catalog, "db.t", LocalStore(fsync=False), Env.seeded(1000 + i))
    barrier.wait()
    outcomes = []
    for k in range(APPENDS_PER_PROCESS):
        outcome = table.append(pa.table({"id": pa.array([i * 100 + k], pa.int64())}))
        outcomes.append((type(outcome).__name__, getattr(outcome, "snapshot_id", None), i * 100 + k))
    catalog.close()
    return outcomes


def test_table_writers_in_separate_processes_commit_every_row_once(postgres, catalog_name, tmp_path):
    """Goal: appends from separate processes to one table on PostgreSQL are each Committed once,
    with no lost or duplicated row and a linear history (P1-P3). Method: 3 processes x 6 appends
    started together on one table (LocalStore warehouse); afterwards the table's rows, history and
    snapshot ids are checked against the outcomes each process reported."""
    setup = SqlCatalog(postgres.dsn, name=catalog_name, busy_timeout_ms=LOCK_TIMEOUT_MS)
    create_table(setup, "db.t", schema_from_arrow(ARROW_SCHEMA), location=f"file://{tmp_path}/db/t",
                 properties=CONTENTION, io=LocalStore(fsync=False))
    ctx = multiprocessing.get_context("fork")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(PROCESSES)
        with ctx.Pool(PROCESSES) as pool:
            per_process = pool.map(_appender, [(postgres.dsn, catalog_name, i, barrier) for i in range(PROCESSES)])
    outcomes = [o for process in per_process for o in process]
    assert [kind for kind, _, _ in outcomes] == [Committed.__name__] * PROCESSES * APPENDS_PER_PROCESS, outcomes
    table = Table(setup, "db.t", LocalStore())
    assert sorted(table.scan().column("id").to_pylist()) == sorted(row_id for *_, row_id in outcomes)
    history = table.history()
    assert len(history) == PROCESSES * APPENDS_PER_PROCESS and history[0].parent_snapshot_id is None
    assert all(b.parent_snapshot_id == a.snapshot_id for a, b in zip(history, history[1:]))
    assert {snapshot_id for _, snapshot_id, _ in outcomes} == {s.snapshot_id for s in history}
    setup.close()
