"""One writer process of a concurrency campaign (icefloe.conformance.campaign.run): `job["commits"]`
seeded operations on the campaign's table, each recorded as an `OpRecord` with the outcome
its commit returned (Committed / Conflict / Unknown), plus the reads it made.

A job is a plain dict (it crosses a spawn): the S3 endpoint (the fault proxy), the client
name (its access key id, so the proxy can tell writers apart), the store's attempts per
request, the catalog (S3 pointer, or a SQL URI: SQLite or PostgreSQL) and, for a SQL catalog
under the deep plan, the COMMIT faults (`faulty_sql.UnresolvedCommits`).
"""
from __future__ import annotations

import random
import time
from collections import Counter

from icefloe.conformance.campaign.judge import (
    APPEND, COMMITTED, CONFLICT, FAILED, KINDS, NOOP, OVERWRITE, REWRITE, ROLLBACK, UNKNOWN, OpRecord,
)
from icefloe.model.checks.history import SERIALIZABLE, Read

TABLE = "db.t"
PARTITIONS = ("a", "b", "c")
ROWS_PER_OP = 3
REGION = "us-east-1"
SECRET = "secret"
READ_PROBABILITY = 0.3
START_TIMEOUT_S = 120.0       # spawning imports pyarrow and boto3 in every writer
ROLLBACK_DEPTH_MAX = 3        # how far back a rollback may go
STALLS_JOIN_S = 30.0          # a writer's stalled COMMITs are all sent before it reports
FILES_READ_ATTEMPTS_MAX = 5   # a rollback's files, read after its commit through the faulty proxy
FILES_READ_WAIT_S = 0.5


def read_current(table, read_id: str, reads: list, observed: list) -> str | None:
    """A reader's look at the table after an operation: refresh, then the live data files of
    main's head, appended to `reads`, and the metadata file it read to `observed`. Returns
    the failure's type name when the table could not be read."""
    from icefloe.impl.outcomes import IcefloeError
    try:
        table.refresh()
        snap = table.current_snapshot()
        reads.append(Read(read_id, None if snap is None else snap.snapshot_id,
                          frozenset(table.tree.live_data_paths(snap))))
        observed.append(table.metadata_location)
    except IcefloeError as e:
        return type(e).__name__
    return None


def outcome_fields(outcome) -> dict:
    """What a commit returned (Committed, Conflict or Unknown) as OpRecord fields; a commit
    that had nothing to do (no attempt) is a noop, and names no version: the one its outcome
    carries is the version it read (its base_location), often another writer's commit."""
    from icefloe.impl.outcomes import Committed, Conflict, Unknown
    if isinstance(outcome, Committed):
        if outcome.attempts == 0:
            return dict(outcome=NOOP, attempts=0)
        return dict(outcome=COMMITTED, snapshot_id=outcome.snapshot_id,
                    committed_location=outcome.metadata_location, attempts=outcome.attempts)
    if isinstance(outcome, Conflict):
        return dict(outcome=CONFLICT, snapshot_id=outcome.snapshot_id, attempts=outcome.attempts,
                    reason=outcome.reason)
    assert isinstance(outcome, Unknown), outcome
    return dict(outcome=UNKNOWN, snapshot_id=outcome.snapshot_id, attempts=outcome.attempts,
                reason=outcome.reason, attempted_locations=tuple(outcome.attempted_locations))


def rows(ids, cat):
    import pyarrow as pa
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": [cat] * len(ids),
                     "v": [float(i) for i in ids]})


def open_catalog(job: dict, sql_faults=None):
    """The job's store and catalog; with `sql_faults` (an UnresolvedCommits) the SQL
    catalog's connections go through it."""
    from icefloe.impl.catalog.s3 import S3Catalog
    from icefloe.impl.catalog.sql import SqlCatalog, connection_factory
    from icefloe.impl.s3.store import S3Store
    store = S3Store.from_config(job["endpoint"], job["client"], SECRET, REGION,
                                read_timeout_s=job["read_timeout_s"],
                                attempts_max=job.get("store_attempts_max", 4))
    if job["catalog_uri"] is None:
        return store, S3Catalog(store, job["warehouse"])
    name = job.get("catalog_name", "icefloe")
    if sql_faults is None:
        return store, SqlCatalog(job["catalog_uri"], name=name)
    dialect, connect = connection_factory(job["catalog_uri"])
    error = None
    if dialect.name == "postgresql":
        import psycopg2
        error = psycopg2.OperationalError
    return store, SqlCatalog(name=name, dialect=dialect, connect=sql_faults.wrap(connect, error), init_tables=False)


def _choose(rng: random.Random, mix: dict) -> str:
    kinds = [k for k in KINDS if mix.get(k, 0) > 0]
    return rng.choices(kinds, [mix[k] for k in kinds])[0]


def _build(kind: str, table, rng: random.Random, ids: list, isolation: str = SERIALIZABLE):
    """The operation object, and what the writer knows of it before committing."""
    from icefloe.impl.format.metadata import MAIN_BRANCH
    from icefloe.impl.table import operations as O, producer as P
    if kind == ROLLBACK:
        line = [s.snapshot_id for s in table.history()]
        if len(line) < 2:
            kind = APPEND  # nothing to roll back to yet
        else:
            target = rng.choice(line[-1 - ROLLBACK_DEPTH_MAX:-1])
            return O.SetRef(MAIN_BRANCH, target, must_be_ancestor=True), dict(rollback_to=target)
    cat = rng.choice(PARTITIONS)
    added = tuple((i, cat) for i in ids)
    if kind == APPEND:
        return P.FastAppend(rows(ids, cat)), dict(kind=APPEND, rows=added)
    if kind == OVERWRITE:
        return (P.DeleteWhere(f"cat = '{cat}'", rows(ids, cat), isolation=isolation),
                dict(partition=cat, rows=added))
    return P.RewriteFiles(None, files_min=2), {}


def _files_of(commit, kind: str, operation, table, target) -> dict:
    if kind == APPEND:
        return dict(added_files=frozenset(f.file_path for f in operation.files))
    if kind in (OVERWRITE, REWRITE):
        removed = frozenset(operation.removed)
        return dict(read_files=removed, removed_files=removed,
                    added_files=frozenset(f.file_path for f in operation.added))
    head = table.tree.live_data_paths(table.metadata.snapshot_by_id(commit.starting_snapshot_id))
    back = table.tree.live_data_paths(table.metadata.snapshot_by_id(target))
    return dict(removed_files=frozenset(head - back), added_files=frozenset(back - head))


def _files_read(commit, kind: str, operation, table, target, errors: Counter) -> dict:
    """What the operation read, added and removed. A rollback's comes from reading manifests
    after the commit, through the faulty proxy: retried, and if it still fails, recorded as
    unknown (empty sets: the checker then has fewer edges for it, never a false one)."""
    from icefloe.impl.outcomes import IcefloeError
    for attempt in range(1, FILES_READ_ATTEMPTS_MAX + 1):
        try:
            return _files_of(commit, kind, operation, table, target)
        except IcefloeError:
            if attempt == FILES_READ_ATTEMPTS_MAX:
                errors["files of a rollback unread"] += 1
                return {}
            time.sleep(FILES_READ_WAIT_S)
    raise AssertionError("unreachable")


def _sql_faults(job: dict):
    if job["catalog_uri"] is None or not job.get("commit_faults"):
        return None
    from icefloe.conformance.testing.faulty_sql import UnresolvedCommits
    spec = dict(job["commit_faults"])
    return UnresolvedCommits(job["seed"], spec.pop("probability"), **spec)


def run_writer(job: dict, ready=None, stop=None, ended=None) -> dict:
    """One writer: `job["commits"]` operations, each recorded. Runs in a spawned process.
    It starts no new operation once `stop` (an Event: the campaign's budget is spent) is
    set, and calls `ended()` after each operation (the campaign's progress)."""
    from icefloe.impl.outcomes import IcefloeError
    from icefloe.impl.table.env import Env
    from icefloe.impl.table.table import Table
    p, rng = job["process"], random.Random(job["seed"])
    sql_faults = _sql_faults(job)
    store, catalog = open_catalog(job, sql_faults)
    env = Env.seeded(job["seed"])  # real clocks and sleep: the writers really race
    ops, reads, observed, errors = [], [], [], Counter()
    if ready is not None:
        ready.wait(START_TIMEOUT_S)
    table = None
    for k in range(job["commits"]):
        if stop is not None and stop.is_set():
            break
        if k and ended is not None:
            ended()
        op_id = f"p{p}.{k}"
        kind = _choose(rng, job["mix"])
        ids = [p * 1_000_000 + k * 100 + j for j in range(ROWS_PER_OP)]
        started = time.time()
        try:
            table = table.refresh() if table is not None else Table(catalog, TABLE, store, env)
        except IcefloeError as e:
            ops.append(OpRecord(op_id, p, kind, FAILED,
                                reason=f"refresh: {e}", started_s=started, ended_s=time.time()))
            continue
        observed.append(table.metadata_location)
        operation, known = _build(kind, table, rng, ids, job["isolation"])
        kind = known.pop("kind", kind if "rollback_to" not in known else ROLLBACK)
        commit = table.new_commit(operation)
        try:
            outcome = commit.run()
        except (IcefloeError, ValueError) as e:  # raised while planning: nothing was written
            ops.append(OpRecord(op_id, p, kind, FAILED, start_snapshot_id=commit.starting_snapshot_id,
                                base_location=commit.first_base_location,
                                reason=f"{type(e).__name__}: {e}", started_s=started, ended_s=time.time(),
                                **{k2: v for k2, v in known.items() if k2 != "rows"}))
            continue
        files = _files_read(commit, kind, operation, table, known.get("rollback_to"), errors)
        rec = outcome_fields(outcome)
        ops.append(OpRecord(op_id, p, kind, start_snapshot_id=commit.starting_snapshot_id,
                            base_location=commit.first_base_location, started_s=started, ended_s=time.time(),
                            **rec, **known, **files))
        if rng.random() < READ_PROBABILITY:
            failed = read_current(table, f"{op_id}.read", reads, observed)
            if failed:
                errors[failed] += 1
    sql_injected = {}
    if sql_faults is not None:
        stalls = getattr(catalog._connect, "stalls", None)
        if stalls is not None and not stalls.join(STALLS_JOIN_S):
            errors["stalled COMMIT still pending"] += 1
        sql_injected = {f"sql:{k}": v for k, v in sql_faults.injected.items() if v}
    return {"process": p, "ops": ops, "reads": reads, "observed": observed,
            "read_errors": dict(errors), "requests": dict(store.counts), "sql_faults": sql_injected}


def writer_main(job: dict, go, results, stop=None) -> None:
    try:
        results.put(("ready", job["process"]))
        results.put(("done", run_writer(job, go, stop, lambda: results.put(("op", job["process"])))))
    except BaseException as e:  # noqa: BLE001 - the parent reports it as a setup failure
        import traceback
        results.put(("error", f"writer {job['process']}: {e!r}\n{traceback.format_exc()}"))
