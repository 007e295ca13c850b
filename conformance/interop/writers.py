"""The writers of an interop campaign (conformance.interop.run): icefloe, pyiceberg and
Iceberg-Java, each committing through `icefloe serve` to the same table with its own
identity (the X-Icefloe-Writer header), recording each operation as an `OpRecord`.

- icefloe: a spawned process; its Table over `impl.catalog.rest.RestCatalog` (the swap
  a REST commit with an Idempotency-Key); operations and files as the S3 campaign's
  writers build them (campaign_writer): append, overwrite of a partition, rewrite,
  rollback. It knows its snapshot ids, attempts and Unknowns' attempts.
- pyiceberg 0.12: a spawned process; its RestCatalog; append, overwrite of a partition
  (`overwrite_filter`), rollback (`manage_snapshots`). Outcomes as the pyiceberg-rest
  adapter maps them (engines/pyiceberg_rest.py).
- Iceberg-Java 1.10.2: a thread of the parent driving the shared Spark worker
  (java_env): each writer its own Spark catalog of type rest. INSERT INTO (append), MERGE
  INTO ... WHEN NOT MATCHED BY SOURCE AND cat = p THEN DELETE (overwrite of a partition,
  copy-on-write, validated at serializable isolation), the rewrite_data_files action
  (rewrite), `CALL system.rollback_to_snapshot` (rollback). Outcomes as the java adapter
  maps them (engines/java_engine.py).

A black-box engine does not say which snapshot it committed: its snapshots carry the op id
(`OP_ID_PROPERTY` in their summaries) and conformance.interop.run finds them afterwards. Every
row id is unique in the campaign: writer * 1_000_000 + op * 100 + j.
"""
from __future__ import annotations

import random
import time

from icefloe.conformance.campaign.judge import (
    APPEND, COMMITTED, CONFLICT, FAILED, OVERWRITE, REWRITE, ROLLBACK, UNKNOWN, OpRecord,
)
from icefloe.conformance.campaign.writer import PARTITIONS, ROWS_PER_OP, outcome_fields, read_current, rows
from icefloe.model.checks.history import Read

OP_ID_PROPERTY = "icefloe.conformance.op-id"      # adapter.OP_ID_PROPERTY
WRITER_HEADER = "X-Icefloe-Writer"
NAMESPACE, TABLE_NAME = "db", "t"
TABLE = f"{NAMESPACE}.{TABLE_NAME}"
READ_PROBABILITY = 0.25
ROLLBACK_DEPTH_MAX = 3
START_TIMEOUT_S = 180.0
ICEFLOE, PYICEBERG, JAVA = "icefloe", "pyiceberg", "java"
ENGINES = (ICEFLOE, PYICEBERG, JAVA)
MIXES = {ICEFLOE: {APPEND: 0.5, OVERWRITE: 0.2, REWRITE: 0.15, ROLLBACK: 0.15},
         PYICEBERG: {APPEND: 0.6, OVERWRITE: 0.25, ROLLBACK: 0.15},
         JAVA: {APPEND: 0.5, OVERWRITE: 0.2, REWRITE: 0.15, ROLLBACK: 0.15}}


def choose(rng: random.Random, engine: str) -> str:
    mix = MIXES[engine]
    kinds = sorted(mix)
    return rng.choices(kinds, [mix[k] for k in kinds])[0]


def ids_of(writer: int, k: int) -> list:
    return [writer * 1_000_000 + k * 100 + j for j in range(ROWS_PER_OP)]


def rollback_target(rng: random.Random, ancestry: list, heads: set):
    """A snapshot among the few before main's head (`ancestry` oldest first) that this
    writer saw as main's head, or None. Only a head: one commit may add several snapshots
    (pyiceberg's overwrite: a delete, then an append), and the one in between was never a
    state of the table, so the judge's row replay has nothing to compare a rollback to it with."""
    choices = [s for s in ancestry[-1 - ROLLBACK_DEPTH_MAX:-1] if s in heads]
    return rng.choice(choices) if choices else None


def _record(op_id, writer, kind, outcome, started, **kw) -> OpRecord:
    return OpRecord(op_id, writer, kind, outcome, started_s=started, ended_s=time.time(), **kw)


# -- icefloe ----------------------------------------------------------------------------------

def run_icefloe(job: dict, ready=None) -> dict:
    """One icefloe writer: `job["ops"]` operations through impl's RestCatalog."""
    from icefloe.conformance.campaign.writer import _build, _files_of   # the S3 campaign's own recipes
    from icefloe.impl.catalog.rest import RestCatalog
    from icefloe.impl.io.router import StoreRouter
    from icefloe.impl.outcomes import IcefloeError
    from icefloe.impl.table.env import Env
    from icefloe.impl.table.table import Table
    w, rng = job["writer"], random.Random(job["seed"])
    io = StoreRouter(stores=_stores(job))
    catalog = RestCatalog(job["uri"], io, headers={WRITER_HEADER: str(w)}, timeout_s=job["timeout_s"])
    env = Env.seeded(job["seed"])
    ops, reads, observed, heads = [], [], [], set()
    if ready is not None:
        ready.wait(START_TIMEOUT_S)
    table = None
    for k in range(job["ops"]):
        op_id, kind, started = f"w{w}.{k}", choose(rng, ICEFLOE), time.time()
        try:
            table = table.refresh() if table is not None else Table(catalog, TABLE, io, env)
        except IcefloeError as e:
            ops.append(_record(op_id, w, kind, FAILED, started, reason=f"refresh: {e}"))
            continue
        observed.append(table.metadata_location)
        if table.current_snapshot() is not None:
            heads.add(table.current_snapshot().snapshot_id)
        target = None
        if kind == ROLLBACK:
            target = rollback_target(rng, [s.snapshot_id for s in table.history()], heads)
            kind = ROLLBACK if target is not None else APPEND
        if kind == ROLLBACK:
            from icefloe.impl.format.metadata import MAIN_BRANCH
            from icefloe.impl.table.operations import SetRef
            operation, known = SetRef(MAIN_BRANCH, target, must_be_ancestor=True), dict(rollback_to=target)
        else:
            operation, known = _build(kind, table, rng, ids_of(w, k))
            kind = known.pop("kind", kind)
        commit = table.new_commit(operation)
        try:
            outcome = commit.run()
        except (IcefloeError, ValueError) as e:
            ops.append(_record(op_id, w, kind, FAILED, started, start_snapshot_id=commit.starting_snapshot_id,
                               base_location=commit.first_base_location, reason=f"{type(e).__name__}: {e}",
                               **{k2: v for k2, v in known.items() if k2 != "rows"}))
            continue
        try:
            files = _files_of(commit, kind, operation, table, known.get("rollback_to"))
        except IcefloeError:
            # A rollback's files come from reading its two snapshots' manifests; where the table
            # names a manifest that is gone (a flawed server's cleanup) they are recorded as
            # unknown (no edges for them, never a false one), as the campaign's writer does;
            # the judge finds the dangling reference in the table itself.
            files = {}
        rec = outcome_fields(outcome)
        ops.append(OpRecord(op_id, w, kind, start_snapshot_id=commit.starting_snapshot_id,
                            base_location=commit.first_base_location, started_s=started, ended_s=time.time(),
                            **rec, **known, **files))
        if rng.random() < READ_PROBABILITY:
            read_current(table, f"{op_id}.read", reads, observed)   # a failed read is left out
    return {"writer": w, "engine": ICEFLOE, "ops": ops, "reads": reads, "observed": observed,
            "client": dict(catalog.counts)}


def _stores(job: dict) -> dict:
    """The writer's own S3 store (through the campaign's S3 fault proxy, signed with its own
    key) when the warehouse is on S3; a local warehouse needs none."""
    s3 = job.get("s3")
    if not s3:
        return {}
    from icefloe.impl.s3.store import S3Store
    store = S3Store.from_config(s3["endpoint"], s3["access_key"], s3["secret"], s3["region"],
                                read_timeout_s=s3.get("read_timeout_s", 5.0))
    return {"s3": store, "s3a": store}


# -- pyiceberg --------------------------------------------------------------------------------

def run_pyiceberg(job: dict, ready=None) -> dict:
    """One pyiceberg writer: `job["ops"]` operations through pyiceberg's RestCatalog."""
    import logging
    import pyarrow as pa
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import (
        CommitFailedException, CommitStateUnknownException, ServiceUnavailableError, ValidationException)
    from pyiceberg.expressions import EqualTo
    from requests.exceptions import ChunkedEncodingError, ConnectionError, ReadTimeout
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)
    w, rng = job["writer"], random.Random(job["seed"])
    props = {f"header.{WRITER_HEADER}": str(w), **job.get("pyiceberg_io", {})}
    catalog = RestCatalog("interop", uri=job["uri"], **props)
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("cat", pa.string()), pa.field("v", pa.float64())])
    ops, reads, observed, heads = [], [], [], set()
    if ready is not None:
        ready.wait(START_TIMEOUT_S)
    for k in range(job["ops"]):
        op_id, kind, started = f"w{w}.{k}", choose(rng, PYICEBERG), time.time()
        try:
            table = catalog.load_table(TABLE)
        except Exception as e:  # noqa: BLE001 - nothing written yet
            ops.append(_record(op_id, w, kind, FAILED, started, reason=f"load: {type(e).__name__}: {e}"))
            continue
        observed.append(table.metadata_location)
        snap = table.metadata.current_snapshot()
        if snap is not None:
            heads.add(snap.snapshot_id)
        ancestry = []
        sid = None if snap is None else snap.snapshot_id
        while sid is not None and len(ancestry) <= ROLLBACK_DEPTH_MAX + 1:
            ancestry.append(sid)
            s = table.metadata.snapshot_by_id(sid)
            sid = None if s is None else s.parent_snapshot_id
        target = rollback_target(rng, ancestry[::-1], heads) if kind == ROLLBACK else None
        if kind == ROLLBACK and target is None:
            kind = APPEND
        cat = rng.choice(PARTITIONS)
        ids = ids_of(w, k)
        data = rows(ids, cat).cast(schema)
        known = {}
        try:
            if kind == APPEND:
                known = dict(rows=tuple((i, cat) for i in ids))
                table.append(data, snapshot_properties={OP_ID_PROPERTY: op_id})
            elif kind == OVERWRITE:
                known = dict(rows=tuple((i, cat) for i in ids), partition=cat)
                table.overwrite(data, overwrite_filter=EqualTo("cat", cat), snapshot_properties={OP_ID_PROPERTY: op_id})
            else:
                known = dict(rollback_to=target)
                table.manage_snapshots().rollback_to_snapshot(target).commit()
            rec = dict(outcome=COMMITTED, committed_location=table.metadata_location)
        except (CommitFailedException, ValidationException) as e:
            rec = dict(outcome=CONFLICT, reason=f"{type(e).__name__}: {e}"[:300])
        except (CommitStateUnknownException, ServiceUnavailableError) as e:
            rec = dict(outcome=UNKNOWN, reason=f"{type(e).__name__}: {e}"[:300])
        except (ChunkedEncodingError, ConnectionError, ReadTimeout) as e:
            rec = dict(outcome=UNKNOWN, reason=f"untyped transport failure: {type(e).__name__}: {e}"[:300])
        except Exception as e:  # noqa: BLE001 - unmapped: nothing says it did not land
            rec = dict(outcome=UNKNOWN, reason=f"unmapped {type(e).__name__}: {e}"[:300])
        ops.append(_record(op_id, w, kind, started=started, **rec, **known))
        if rng.random() < READ_PROBABILITY:
            try:
                t = catalog.load_table(TABLE)
                s = t.metadata.current_snapshot()
                files = frozenset(task.file.file_path for task in t.scan().plan_files()) if s else frozenset()
                reads.append(Read(f"{op_id}.read", None if s is None else s.snapshot_id, files))
                observed.append(t.metadata_location)
            except Exception:  # noqa: BLE001 - a read that failed reads nothing
                pass
    return {"writer": w, "engine": PYICEBERG, "ops": ops, "reads": reads, "observed": observed}


def writer_main(job: dict, go, results) -> None:
    """A spawned writer process (icefloe or pyiceberg)."""
    try:
        results.put(("ready", job["writer"]))
        run = run_icefloe if job["engine"] == ICEFLOE else run_pyiceberg
        results.put(("done", run(job, go)))
    except BaseException as e:  # noqa: BLE001 - the parent reports it
        import traceback
        results.put(("error", f"writer {job['writer']}: {e!r}\n{traceback.format_exc()}"))
