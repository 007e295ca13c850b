"""Interop under concurrency (issue 13 item 5): icefloe, pyiceberg and Iceberg-Java writers
on ONE table through `icefloe serve`, really racing (processes and threads, not the
lockstep), with commit faults at the server for every writer and, on an S3 warehouse,
storage faults at the S3 proxy; judged afterwards by the history checker
(conformance.campaign.judge over model.checks.history).

    python -m icefloe.conformance.interop.run --icefloe 2 --pyiceberg 2 --java 2 --ops 10 --seed 1
    python -m icefloe.conformance.interop.run --storage s3 --icefloe 3 --pyiceberg 3 --ops 20

Storage: `local` (a local warehouse: every engine; Iceberg-Java's runtime jar has no S3
FileIO here) or `s3` (moto behind the FaultProxy with the S3 campaign's standard plan:
icefloe and pyiceberg, each signing with its own key; the server reaches moto directly).
The server's commit faults: conformance.interop.faults (every kind, per writer, seeded;
parked requests delivered or dropped, gates). The writers: conformance.interop.writers
and conformance.interop_java. The table: id bigint, cat string, v double, identity(cat),
copy-on-write, serializable, 30 commit retries with short waits (contention is the point).

Afterwards the faults are healed, icefloe's Unknowns are resolved by its own
`resolve_unknown` (replaying each attempt's request with its key), every metadata file is
read (campaign_evidence), each black-box operation is found by the op id its snapshots
carry (a rollback, which makes none, by its target and the version that moved main
there), and campaign_judge.judge decides: lost, duplicated, dangling, dirty, cycles,
rows. An op id found in two versions is a duplicate commit; an Unknown of a black-box
engine is resolved by whether its snapshot (or rollback) is in the lineage.
Exit 0 when the history is valid, 1 when not, 2 on usage or setup errors.
"""
from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field

from icefloe.conformance.interop import evidence as IE
from icefloe.conformance.campaign.run import collect, quiet_log, run_and_print
from icefloe.conformance.campaign.judge import judge
from icefloe.conformance.interop.faults import Conductor, WriterPlan, fault_counts
from icefloe.conformance.interop.writers import (
    ENGINES, ICEFLOE, JAVA, NAMESPACE, PYICEBERG, TABLE, WRITER_HEADER, writer_main,
)

TABLE_PROPERTIES = {"commit.retry.num-retries": "30", "commit.retry.min-wait-ms": "2",
                    "commit.retry.max-wait-ms": "100", "commit.retry.total-timeout-ms": "120000",
                    "write.delete.mode": "copy-on-write", "write.update.mode": "copy-on-write",
                    "write.merge.mode": "copy-on-write", "write.delete.isolation-level": "serializable",
                    "write.merge.isolation-level": "serializable", "write.update.isolation-level": "serializable"}
RATE_DEFAULT = 0.3
STORAGES = ("local", "s3")
HARNESS = 0                     # the harness's own requests: no fault plan
RESULT_TIMEOUT_S = 1200.0
REQUEST_TIMEOUT_S = 30.0
S3_SECRET, S3_REGION = "secret", "us-east-1"


@dataclass
class InteropResult:
    writers: dict                   # engine -> number of writers
    ops: int
    seed: int
    rate: float
    storage: str
    elapsed_s: float
    judge_s: float
    load_avg: tuple
    per_engine: dict                # engine -> figures (outcomes, kinds, landed, faults, unknowns each way)
    conductor: dict
    s3_faults: dict
    judgement: object
    evidence: object = field(repr=False, default=None)
    extra_anomalies: list = field(default_factory=list)

    @property
    def valid(self):
        if self.extra_anomalies:
            return False
        return self.judgement.valid

    def tally(self) -> dict:
        t = dict(self.judgement.tally())
        t["duplicated"] += sum(1 for a in self.extra_anomalies if a.name == "duplicate commit")
        return t

    def rerun(self) -> str:
        return (f"python -m icefloe.conformance.interop.run --icefloe {self.writers.get(ICEFLOE, 0)} "
                f"--pyiceberg {self.writers.get(PYICEBERG, 0)} --java {self.writers.get(JAVA, 0)} "
                f"--ops {self.ops} --seed {self.seed} --rate {self.rate:g} --storage {self.storage}")

    def summary(self) -> str:
        state = {True: "VALID", False: "INVALID", None: "UNKNOWN"}[self.valid]
        lines = [f"interop {state}: {', '.join(f'{n} {e}' for e, n in self.writers.items() if n)} writers x "
                 f"{self.ops} operations on one table through icefloe serve, seed {self.seed}, "
                 f"commit-fault rate {self.rate:g}, {self.storage} warehouse",
                 f"  rerun (same inputs, not the same interleaving): {self.rerun()}",
                 f"  {self.elapsed_s:.1f} s of writing, {self.judge_s:.1f} s to heal, resolve and judge"
                 + (f"; load {self.load_avg[0]:.1f}" if self.load_avg else "")]
        for engine, f in self.per_engine.items():
            lines.append(f"  {engine}: landed {f['landed']} of {f['operations']} operations; outcomes "
                         + ", ".join(f"{k}={v}" for k, v in sorted(f["outcomes"].items()))
                         + "; kinds " + ", ".join(f"{k}={v}" for k, v in sorted(f["kinds"].items())))
            if f.get("conflicts"):
                lines.append("    conflicts: " + ", ".join(f"{k} ({v})" for k, v in sorted(f["conflicts"].items())))
            lines.append("    commit faults: " + (", ".join(f"{k}={v}" for k, v in sorted(f["faults"].items())) or "none"))
            lines.append(f"    unknown resolved committed={f['unknown_committed']}, "
                         f"not committed={f['unknown_not_committed']}, still unknown={f['unknown_unresolved']}"
                         + (f"; client {f['client']}" if f.get("client") else ""))
        c = self.conductor
        lines.append(f"  delayed requests delivered late {c['delivered']}, dropped {c['dropped']}; "
                     f"commits held at a gate {c['gates']}")
        if self.s3_faults:
            lines.append("  S3 proxy faults: " + ", ".join(f"{k}={v}" for k, v in sorted(self.s3_faults.items())))
        lines.append("  anomalies by family: " + ", ".join(f"{k}={v}" for k, v in self.tally().items()))
        lines.append(self.judgement.render())
        for a in self.extra_anomalies:
            lines.append(f"  anomaly: {a.name}: {a.explanation}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"writers": self.writers, "ops": self.ops, "seed": self.seed, "rate": self.rate,
                "storage": self.storage, "valid": "unknown" if self.valid is None else self.valid,
                "elapsed_s": round(self.elapsed_s, 1), "judge_s": round(self.judge_s, 1),
                "load_avg": list(self.load_avg), "per_engine": self.per_engine, "conductor": self.conductor,
                "s3_faults": self.s3_faults, "tally": self.tally(), "anomalies": self.judgement.names()
                + [a.name for a in self.extra_anomalies], "verdict": self.judgement.verdict.to_json(),
                "campaign_anomalies": [asdict(a) for a in self.judgement.anomalies + self.extra_anomalies],
                "rerun": self.rerun()}


# -- the run ----------------------------------------------------------------------------------

def run_interop(icefloe: int = 2, pyiceberg: int = 2, java: int = 2, ops: int = 8, seed: int = 1, *,
                rate: float = RATE_DEFAULT, storage: str = "local", gates: bool = True,
                s3_rate: float = 1.0, weights: dict | None = None, server_variant: str | None = None,
                result_timeout_s: float = RESULT_TIMEOUT_S) -> InteropResult:
    """The campaign (module docstring). `weights`: fault kind -> weight (interop_faults);
    `server_variant`: a flawed server of conformance.testing.rest_flawed instead of
    icefloe serve (a negative control: the judge must find what it breaks)."""
    if storage not in STORAGES:
        raise ValueError(f"storage must be one of {STORAGES}, not {storage!r}")
    if min(icefloe, pyiceberg, java) < 0 or icefloe + pyiceberg + java < 2 or ops < 1:
        raise ValueError("at least two writers in all, and at least one operation each")
    if storage == "s3" and java:
        raise ValueError("Iceberg-Java writes a local warehouse only here (its runtime jar has no S3 FileIO)")
    if not 0 <= rate <= 1:
        raise ValueError("rate is a probability per commit request")
    counts = {ICEFLOE: icefloe, PYICEBERG: pyiceberg, JAVA: java}
    engine_of, w = {}, 1
    for engine in ENGINES:
        for _ in range(counts[engine]):
            engine_of[w], w = engine, w + 1
    with contextlib.ExitStack() as stack:
        stack.enter_context(_quiet_dropped_answers())
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="icefloe-interop-"))
        store, server, proxy, s3 = stack.enter_context(_storage(storage, tmp, seed, s3_rate, server_variant))
        harness = _harness_catalog(server.url, store)
        _create(harness, store, server, tmp, storage)
        java_writers = None
        if java:
            from icefloe.conformance.interop.java import JavaWriters
            java_writers = JavaWriters(server.url, [x for x, e in engine_of.items() if e == JAVA])
        rules = [server.faults.add_rule(WriterPlan(x, seed, rate, weights)) for x in engine_of]
        conductor = Conductor(server.faults, list(engine_of), seed, gates=gates)
        jobs = [dict(writer=x, engine=e, seed=seed * 1000 + x, ops=ops, uri=server.url, timeout_s=REQUEST_TIMEOUT_S,
                     **_writer_storage(s3, x)) for x, e in engine_of.items()]
        results, elapsed = _race(jobs, java_writers, store, server.url, conductor, result_timeout_s)
        load = os.getloadavg()
        judging = time.monotonic()
        conductor.heal(rules)
        exchanges = server.faults.history()
        s3_faults = {}
        if proxy is not None:
            proxy.clear(forget=False)
            proxy.wait_idle(120)
            s3_faults = dict(Counter(label for x in proxy.history() for label in (x.fault or "").split("+")
                                     if label and label != "gate"))
        all_ops = tuple(o for r in results for o in r["ops"])
        resolutions = IE.resolve_icefloe(all_ops, engine_of, store, _harness_catalog(server.url, store), TABLE)
        evidence, tags = IE.gather(store, server.service.catalog, all_ops, resolutions, results, TABLE)
        evidence, extra = IE.attribute(evidence, engine_of, tags)
        judgement = judge(evidence)
        per_engine = IE.figures(evidence, judgement, engine_of, results,
                                fault_counts(exchanges, engine_of), resolutions)
        c = conductor.counts
        return InteropResult({e: n for e, n in counts.items() if n}, ops, seed, rate, storage, elapsed,
                             time.monotonic() - judging, tuple(round(x, 2) for x in load), per_engine,
                             {"delivered": c.delivered, "dropped": c.dropped,
                              "gates": c.gates, "gates_unused": c.gates_unused},
                             s3_faults, judgement, evidence, extra)


def _quiet_dropped_answers():
    """uvicorn logs a traceback for every answer the fault layer drops on purpose (`lost`);
    the campaign counts them instead."""
    return quiet_log("uvicorn.error")


def _harness_catalog(url: str, store):
    from icefloe.impl.catalog.rest import RestCatalog
    return RestCatalog(url, store, headers={WRITER_HEADER: str(HARNESS)}, timeout_s=REQUEST_TIMEOUT_S)


@contextlib.contextmanager
def _storage(storage: str, tmp: str, seed: int, s3_rate: float, variant: str | None = None):
    """(the harness's store, the faulty server, the S3 proxy or None, S3 settings or None)."""
    from icefloe.conformance.testing.rest_flawed import VARIANTS
    from icefloe.conformance.testing.rest_server import faulty_rest_server
    from icefloe.impl.io.router import StoreRouter
    catalog_uri = f"sqlite:///{tmp}/catalog.db"
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"no flawed server {variant!r}: {', '.join(sorted(VARIANTS))}")
    flaw = VARIANTS.get(variant, {})
    if storage == "local":
        with faulty_rest_server(catalog_uri, f"{tmp}/warehouse", **flaw) as server:
            yield StoreRouter(), server, None, None
            server.faults.close()
        return
    from icefloe.conformance.campaign.run import _moto_process, _quiet_moto
    from icefloe.conformance.campaign.faults import fault_plan
    from icefloe.conformance.testing.proxy import FaultProxy
    from icefloe.impl.catalog.sql import SqlCatalog
    from icefloe.impl.serve.service import CatalogService
    from icefloe.impl.serve.store import store_for
    from icefloe.impl.s3.store import S3Store
    with _quiet_moto(), _moto_process(tmp) as moto, FaultProxy(moto.endpoint_url, seed=seed) as proxy:
        direct = S3Store.from_config(moto.endpoint_url, "server", S3_SECRET, S3_REGION, read_timeout_s=30)
        router = StoreRouter(stores={"s3": direct, "s3a": direct})
        warehouse = f"s3://{moto.bucket}/interop-{seed}-{uuid.uuid4().hex[:8]}"
        catalog = SqlCatalog(catalog_uri)
        service = CatalogService(catalog, store_for(catalog), router, warehouse)
        for rule in fault_plan(seed, s3_rate).rules:
            proxy.add_rule(rule)
        with faulty_rest_server(catalog_uri, warehouse, service=service, **flaw) as server:
            yield router, server, proxy, {"endpoint": proxy.endpoint_url}
            server.faults.close()


def _writer_storage(s3: dict | None, writer: int) -> dict:
    if not s3:
        return {}
    key = f"writer-{writer}"
    return {"s3": {"endpoint": s3["endpoint"], "access_key": key, "secret": S3_SECRET, "region": S3_REGION},
            "pyiceberg_io": {"s3.endpoint": s3["endpoint"], "s3.access-key-id": key,
                             "s3.secret-access-key": S3_SECRET, "s3.region": S3_REGION,
                             "s3.request-timeout": "60"}}


def _create(harness, store, server, tmp: str, storage: str) -> None:
    from icefloe.conformance.campaign.writer import rows
    from icefloe.impl.format.transforms import parse_partition_spec
    from icefloe.impl.format.types import schema_from_arrow
    from icefloe.impl.table.table import create_table
    harness.create_namespace((NAMESPACE,))
    schema = schema_from_arrow(rows([0], "a").schema)
    location = f"{server.service.warehouse.rstrip('/')}/{NAMESPACE}/t"
    if storage == "local":
        location = "file://" + os.path.abspath(f"{tmp}/warehouse/{NAMESPACE}/t")
    create_table(harness, TABLE, schema, parse_partition_spec("cat", schema), location, TABLE_PROPERTIES, io=store)


def _race(jobs, java_writers, store, uri, conductor, timeout_s):
    """Spawn the process writers, start the Java threads, let all go at once, collect."""
    import queue
    ctx = mp.get_context("spawn")
    go, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=writer_main, args=(j, go, results), daemon=True)
             for j in jobs if j["engine"] != JAVA]
    java_go, java_out, threads = threading.Event(), [], []
    for j in (j for j in jobs if j["engine"] == JAVA):
        reader = _reader(uri, store)
        t = threading.Thread(target=_java_thread, args=(java_writers, j, reader, java_go, java_out), daemon=True)
        threads.append(t)
    out = []
    try:
        for p in procs:
            p.start()
        collect(results, procs, "ready", len(procs), 240.0)
        for t in threads:
            t.start()
        conductor.start()
        started = time.monotonic()
        go.set()
        java_go.set()
        out = collect(results, procs, "done", len(procs), timeout_s)
        for t in threads:
            t.join(max(1.0, timeout_s - (time.monotonic() - started)))
            if t.is_alive():
                raise RuntimeError("a Java writer did not finish in time")
        elapsed = time.monotonic() - started
    finally:
        go.set()
        java_go.set()
        for p in procs:
            if p.pid is None:
                continue                      # never started
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    errors = [r for r in java_out if "error" in r]
    if errors:
        raise RuntimeError(errors[0]["error"])
    return sorted(out + java_out, key=lambda r: r["writer"]), elapsed


def _reader(uri, store):
    from icefloe.impl.table.table import Table

    def read():
        return Table(_harness_catalog(uri, store), TABLE, store)
    return read


def _java_thread(java_writers, job, reader, go, out) -> None:
    try:
        out.append(java_writers.run(job, reader, go))
    except BaseException as e:  # noqa: BLE001 - reported by the parent
        import traceback
        out.append({"writer": job["writer"], "error": f"Java writer {job['writer']}: {e!r}\n{traceback.format_exc()}"})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--icefloe", type=int, default=2, help="icefloe writers (processes)")
    ap.add_argument("--pyiceberg", type=int, default=2, help="pyiceberg writers (processes)")
    ap.add_argument("--java", type=int, default=2, help="Iceberg-Java writers (threads on one Spark worker)")
    ap.add_argument("--ops", type=int, default=8, help="operations per writer")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rate", type=float, default=RATE_DEFAULT, help="probability of a fault per commit request")
    ap.add_argument("--storage", choices=STORAGES, default="local")
    ap.add_argument("--no-gates", action="store_true")
    ap.add_argument("--server-variant", default=None, help="a flawed server (rest_flawed) as a negative control")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    return run_and_print("interop", lambda: run_interop(
        args.icefloe, args.pyiceberg, args.java, args.ops, args.seed, rate=args.rate, storage=args.storage,
        gates=not args.no_gates, server_variant=args.server_variant), args.json)


if __name__ == "__main__":
    sys.exit(main())
