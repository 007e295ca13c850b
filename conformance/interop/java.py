"""Iceberg-Java 1.10.2 writers of an interop campaign (conformance.interop.run): threads of the
parent, each driving the process's shared Spark 3.5.9 worker (conformance.testing.java_env)
through a Spark catalog of its own, of type rest on `icefloe serve`, whose requests carry
the writer's number (X-Icefloe-Writer), so the server's faults take one writer. The
worker runs requests from several threads concurrently (one JVM thread each).

Operations on the campaign table (id bigint, cat string, v double, partitioned by cat,
copy-on-write, serializable; created by conformance.interop.run), each tagged with the op id
in its snapshot's summary (Iceberg's CommitMetadata commit properties):
  append     INSERT INTO ... VALUES (3 rows of one partition);
  overwrite  MERGE INTO t USING (3 new rows of partition p) ON t.id = s.id WHEN NOT MATCHED
             THEN INSERT * WHEN NOT MATCHED BY SOURCE AND t.cat = p THEN DELETE: partition p
             replaced, validated as Iceberg validates a MERGE at serializable isolation;
  rewrite    CALL system.rewrite_data_files (rewrite-all), a NOOP when it rewrote nothing; the
             procedure cannot tag its snapshot (its commit runs on another thread than the
             commit properties), so conformance.interop.evidence places it as the lineage's
             untagged 'replace' snapshot (the worker's rewrite action, which can tag, fails
             on a fresh worker with a REST catalog: CatalogNotFoundException for
             default_cache_iceberg, its file groups read in a session without it);
  rollback   CALL system.rollback_to_snapshot to one of the few snapshots before main's
             head that the writer saw as the head (main read through the harness's own REST
             catalog client as each operation starts).
Outcomes: Java's exception chain, as engines/java_engine.py maps it (CommitStateUnknown
and an untyped transport failure: Unknown; CommitFailed / Validation: Conflict); an
exception it does not map is recorded Unknown, with its reason (nothing says it did not
land).
"""
from __future__ import annotations

import itertools
import random
import threading
import time

from icefloe.conformance.campaign.judge import (
    APPEND, COMMITTED, CONFLICT, NOOP, OVERWRITE, REWRITE, ROLLBACK, UNKNOWN,
)
from icefloe.conformance.campaign.writer import PARTITIONS
from icefloe.conformance.interop.writers import (
    JAVA, NAMESPACE, OP_ID_PROPERTY, TABLE, WRITER_HEADER, _record, choose, ids_of, rollback_target,
)

_runs = itertools.count(1)
_runs_lock = threading.Lock()


def _sql_string(value) -> str:
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


class JavaWriters:
    """Java writers `writers` on the server at `uri`; `run(job)` in one thread per writer."""

    def __init__(self, uri: str, writers: list):
        from icefloe.conformance.testing import java_env
        self.java_env, self.uri = java_env, uri
        self.worker = java_env.shared_worker()
        with _runs_lock:
            run = next(_runs)
        self.catalogs = {}
        for w in writers:
            name = f"interop{run}w{w}"
            java_env.add_catalog(self.worker, name, "rest", uri=uri,
                                 properties={"cache-enabled": "false", f"header.{WRITER_HEADER}": str(w)})
            self.catalogs[w] = name

    def create_namespace(self, writer: int) -> None:
        self.worker.sql(f"CREATE NAMESPACE IF NOT EXISTS {self.catalogs[writer]}.{NAMESPACE}")


    def run(self, job: dict, reader, go=None) -> dict:
        from icefloe.conformance.engines.java_engine import outcome_of_error
        w, rng = job["writer"], random.Random(job["seed"])
        catalog = self.catalogs[w]
        table = f"{catalog}.{TABLE}"
        ops, heads = [], set()
        if go is not None:
            go.wait()
        for k in range(job["ops"]):
            op_id, kind, started = f"w{w}.{k}", choose(rng, JAVA), time.time()
            ancestry = []
            try:                          # main's head as the writer starts (the harness's read)
                current = reader()
                ancestry = [s.snapshot_id for s in current.history()]
                heads.update(ancestry[-1:])
            except Exception:  # noqa: BLE001 - the harness could not read: no rollback this time
                pass
            props = {OP_ID_PROPERTY: op_id}
            cat, ids = rng.choice(PARTITIONS), ids_of(w, k)
            values = ", ".join(f"({i}, {_sql_string(cat)}, {float(i)})" for i in ids)
            target = None
            if kind == ROLLBACK:
                target = rollback_target(rng, ancestry, heads)
                if target is None:
                    kind = APPEND
            known = {}
            try:
                if kind == APPEND:
                    known = dict(rows=tuple((i, cat) for i in ids))
                    self.worker.sql(f"INSERT INTO {table} VALUES {values}", props)
                elif kind == OVERWRITE:
                    known = dict(rows=tuple((i, cat) for i in ids), partition=cat)
                    self.worker.sql(
                        f"MERGE INTO {table} t USING (SELECT * FROM VALUES {values} AS s(id, cat, v)) s "
                        f"ON t.id = s.id WHEN NOT MATCHED THEN INSERT * "
                        f"WHEN NOT MATCHED BY SOURCE AND t.cat = {_sql_string(cat)} THEN DELETE", props)
                elif kind == REWRITE:
                    answer = self.worker.sql(f"CALL {catalog}.system.rewrite_data_files(table => {_sql_string(TABLE)}, "
                                             f"options => map('rewrite-all', 'true'))")
                    if answer and int(answer[0][0]) == 0:
                        ops.append(_record(op_id, w, kind, NOOP, started))
                        continue
                else:
                    known = dict(rollback_to=target)
                    self.worker.sql(f"CALL {catalog}.system.rollback_to_snapshot({_sql_string(TABLE)}, {int(target)})",
                                    props)
                rec = dict(outcome=COMMITTED)
            except self.java_env.JavaError as e:
                outcome = outcome_of_error(e, 1)
                name = type(outcome).__name__ if outcome is not None else None
                rec = dict(outcome={"Unknown": UNKNOWN, "Conflict": CONFLICT}.get(name, UNKNOWN),
                           reason=(outcome.reason if outcome is not None else f"unmapped: {e}")[:300])
            ops.append(_record(op_id, w, kind, started=started, **rec, **known))
        return {"writer": w, "engine": JAVA, "ops": ops, "reads": [], "observed": []}
