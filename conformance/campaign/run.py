"""Real concurrency campaigns (issue 5 item 5, issue 14 item 8): N writer processes x M commits
of mixed operations on one icefloe table on moto S3, through the fault-injecting proxy, with
the table's pointer in the S3 catalog, SQLite or PostgreSQL, judged afterwards by the
history checker (`campaign_judge`). Fault plans: `campaign_faults` (the deep plan leaves
outcomes unresolved); one writer: `campaign_writer`; the evidence: `campaign_evidence`.

Unlike the Hypothesis machine, nothing here is interleaved by hand: the writers are OS
processes (spawned, so none inherits the parent's server threads) that really race, and
their interleaving is whatever the machine does. The seed fixes each writer's choice of
operations and rows, the fault plan's rates, and the proxy's random draws; it does not fix
the interleaving, so a campaign is replayable in its inputs, not step for step. What it
finds is judged from records, like Jepsen: each writer records every operation (starting
snapshot, filter, files read/added/removed, outcome Committed / Conflict / Unknown,
snapshot id, attempts) and its reads; after the run the faults are healed, each Unknown is
resolved by the writer's own `resolve_unknown` (once every request held in the proxy has
gone on to S3), every metadata file left in the store is read, and `campaign_judge.judge`
decides.

    python -m icefloe.conformance.campaign.run --processes 4 --commits 25 --seed 1
    python -m icefloe.conformance.campaign.run --processes 16 --commits 100 --plan deep --catalog postgresql

prints the summary and exits 0 when the history is valid, 1 when it is not, 2 on usage
or setup errors. Needs the `s3` extra (moto); PostgreSQL needs the `pg` extra and Debian's
server (a throwaway one is started unless `--postgres-dsn` names one).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import multiprocessing as mp
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field

from icefloe.conformance.campaign.budget import Budget, Watch, fault_counts
from icefloe.conformance.campaign.evidence import gather_evidence, resolve_unknowns
from icefloe.conformance.campaign.faults import PLANS, STANDARD, FaultPlan, fault_plan
from icefloe.conformance.campaign.judge import (
    APPEND, COMMITTED, CONFLICT, KINDS, OVERWRITE, REWRITE, ROLLBACK, UNKNOWN, Evidence, Judgement, judge,
)
from icefloe.conformance.campaign.writer import START_TIMEOUT_S, TABLE, open_catalog, rows, writer_main
from icefloe.model.checks.history import SERIALIZABLE, SNAPSHOT

DEFAULT_MIX = {APPEND: 0.55, OVERWRITE: 0.2, REWRITE: 0.15, ROLLBACK: 0.1}
# Contention is the point: many retries, short waits.
RETRY_PROPERTIES = {"commit.retry.num-retries": "30", "commit.retry.min-wait-ms": "2",
                    "commit.retry.max-wait-ms": "100", "commit.retry.total-timeout-ms": "120000"}
RESULT_TIMEOUT_S = 900.0
CATALOGS = ("s3", "sqlite", "postgresql")
DRAIN_TIMEOUT_S = 120.0       # after the writers end: stalled requests still inside the proxy


# -- the campaign ---------------------------------------------------------------------------

@dataclass
class CampaignResult:
    processes: int
    commits: int
    seed: int
    faults_enabled: bool
    fault_rate: float
    catalog: str
    isolation: str
    elapsed_s: float
    outcomes: dict
    kinds: dict
    retries: int                    # commit attempts beyond the first, over every operation
    faults: dict                    # fault label -> how many requests (or COMMITs) it hit
    requests: int                   # requests through the proxy
    unknown_resolved: dict          # committed / conflict / unknown after healing
    read_errors: int
    judgement: Judgement
    evidence: Evidence = field(repr=False)
    plan: str = STANDARD
    judge_s: float = 0.0            # healing, resolving, reading the evidence and judging
    load_avg: tuple = ()            # 1, 5, 15-minute load when the writers ended
    server_errors: int = 0          # 5xx answers moto gave on its own (not injected)
    phases: dict = field(default_factory=dict)   # seconds after the writers: heal, resolve, evidence, judge
    stopped: str = ""               # why the writers stopped early (campaign_budget), "" if they ran to the end
    stopped_at_s: float | None = None
    ops_per_writer: tuple = ()      # operations each writer ended, by process

    @property
    def committed(self) -> int:
        return self.outcomes.get(COMMITTED, 0)

    @property
    def commits_per_s(self) -> float:
        return self.committed / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def valid(self) -> bool | None:
        return self.judgement.valid

    @property
    def faults_injected(self) -> int:
        return sum(self.faults.values())

    def rerun(self) -> str:
        return (f"python -m icefloe.conformance.campaign.run --processes {self.processes} "
                f"--commits {self.commits} --seed {self.seed}"
                + ("" if self.faults_enabled else " --no-faults")
                + ("" if self.plan == STANDARD or not self.faults_enabled else f" --plan {self.plan}")
                + ("" if self.fault_rate == 1.0 or not self.faults_enabled else f" --fault-rate {self.fault_rate:g}")
                + ("" if self.catalog == "s3" else f" --catalog {self.catalog}")
                + ("" if self.isolation == SERIALIZABLE else f" --isolation {self.isolation}"))

    def summary(self) -> str:
        state = {True: "VALID", False: "INVALID", None: "UNKNOWN"}[self.valid]
        faults = f"{self.plan} plan" if self.faults_enabled else "off"
        lines = [
            f"campaign {state}: {self.processes} processes x {self.commits} operations, seed {self.seed}, "
            f"catalog {self.catalog}, faults {faults}, {self.isolation}",
            f"  rerun (same inputs, not the same interleaving): {self.rerun()}",
            f"  {self.committed} commits in {self.elapsed_s:.1f} s = {self.commits_per_s:.2f} commits/s; "
            f"{self.retries} retries; {self.requests} S3 requests through the proxy "
            f"({self.server_errors} 5xx of moto's own); judged in {self.judge_s:.1f} s"
            + (f"; load {self.load_avg[0]:.1f}" if self.load_avg else ""),
            *([f"  stopped early at {self.stopped_at_s} s ({self.stopped}); operations per writer "
               f"{min(self.ops_per_writer)}-{max(self.ops_per_writer)}"] if self.stopped else []),
            "  outcomes: " + ", ".join(f"{k}={v}" for k, v in sorted(self.outcomes.items())),
            "  operations: " + ", ".join(f"{k}={v}" for k, v in sorted(self.kinds.items())),
            f"  faults injected: {self.faults_injected}: "
            + (", ".join(f"{k}={v}" for k, v in sorted(self.faults.items())) or "none"),
            "  unknown outcomes resolved after healing: "
            + (", ".join(f"{k}={v}" for k, v in sorted(self.unknown_resolved.items())) or "none"),
            "  anomalies by family: " + ", ".join(f"{k}={v}" for k, v in self.judgement.tally().items()),
            self.judgement.render(),
        ]
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"processes": self.processes, "commits": self.commits, "seed": self.seed,
                "faults_enabled": self.faults_enabled, "plan": self.plan, "fault_rate": self.fault_rate,
                "catalog": self.catalog, "isolation": self.isolation,
                "valid": "unknown" if self.valid is None else self.valid,
                "elapsed_s": self.elapsed_s, "judge_s": self.judge_s, "load_avg": list(self.load_avg),
                "commits_per_s": self.commits_per_s,
                "outcomes": self.outcomes, "kinds": self.kinds, "retries": self.retries,
                "faults": self.faults, "faults_injected": self.faults_injected, "requests": self.requests,
                "server_errors": self.server_errors, "phases": self.phases,
                "stopped": self.stopped, "stopped_at_s": self.stopped_at_s, "ops_per_writer": list(self.ops_per_writer),
                "unknown_resolved": self.unknown_resolved, "read_errors": self.read_errors,
                "anomalies": self.judgement.names(), "tally": self.judgement.tally(),
                "verdict": self.judgement.verdict.to_json(),
                "campaign_anomalies": [asdict(a) for a in self.judgement.anomalies], "rerun": self.rerun()}


def run_campaign(processes: int = 4, commits: int = 25, seed: int = 1, *, faults: bool = True,
                 fault_rate: float = 1.0, catalog: str = "s3", isolation: str = SERIALIZABLE,
                 mix: dict | None = None, plan: str = STANDARD, postgres_dsn: str | None = None,
                 result_timeout_s: float | None = None, separate_moto: bool = True,
                 budget: Budget | None = None, label: str = "campaign") -> CampaignResult:
    """Start moto (atomic; in a process of its own unless `separate_moto` is False) and the
    proxy (and, for `catalog="postgresql"` without a `postgres_dsn`, a throwaway PostgreSQL
    server), create the table, race `processes` writers of `commits` operations each, heal,
    gather the evidence and judge it. With a `budget` (campaign_budget) the writers stop
    starting operations once it is spent, and a progress line is printed now and then."""
    from icefloe.conformance.testing.moto_server import MotoS3Server
    from icefloe.conformance.testing.proxy import FaultProxy
    if processes < 1 or commits < 1:
        raise ValueError("processes and commits must be at least 1")
    if catalog not in CATALOGS:
        raise ValueError(f"catalog must be one of {CATALOGS}, not {catalog!r}")
    if isolation not in (SERIALIZABLE, SNAPSHOT):
        raise ValueError(f"isolation must be {SERIALIZABLE!r} or {SNAPSHOT!r}")
    if plan not in PLANS:
        raise ValueError(f"plan must be one of {PLANS}, not {plan!r}")
    mix = dict(mix or DEFAULT_MIX)
    if not set(mix) <= set(KINDS) or sum(mix.values()) <= 0:
        raise ValueError(f"mix must weigh some of {KINDS}")
    faults_plan = fault_plan(seed, fault_rate if faults else 0.0, plan)
    with contextlib.ExitStack() as stack:
        stack.enter_context(_quiet_moto())
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="icefloe-campaign-"))
        moto = stack.enter_context(_moto_process(tmp) if separate_moto else MotoS3Server(atomic=True))
        proxy = stack.enter_context(FaultProxy(moto.endpoint_url, seed=seed))
        warehouse = f"s3://{moto.bucket}/campaign-{seed}-{uuid.uuid4().hex[:8]}"
        catalog_uri, catalog_name = None, f"campaign_{seed}_{uuid.uuid4().hex[:8]}"
        if catalog == "sqlite":
            catalog_uri = f"sqlite:///{tmp}/catalog.db"
        elif catalog == "postgresql":
            if postgres_dsn is None:
                from icefloe.conformance.testing.postgres_server import PostgresServer
                postgres_dsn = stack.enter_context(PostgresServer.temporary()).dsn
            catalog_uri = postgres_dsn
        direct = dict(endpoint=moto.endpoint_url, client="judge", read_timeout_s=30, warehouse=warehouse,
                      catalog_uri=catalog_uri, catalog_name=catalog_name)
        direct_store, direct_catalog = open_catalog(direct)
        _create(direct_store, direct_catalog, warehouse)
        for rule in faults_plan.rules:
            proxy.add_rule(rule)
        schedule = faults_plan.schedule(catalog)
        if schedule is not None:
            proxy.add_schedule(schedule)
        jobs = [dict(process=p, seed=seed * 1000 + p, commits=commits, mix=mix, endpoint=proxy.endpoint_url,
                     client=f"writer-{p}", read_timeout_s=faults_plan.read_timeout_s, warehouse=warehouse,
                     catalog_uri=catalog_uri, catalog_name=catalog_name, isolation=isolation,
                     store_attempts_max=faults_plan.store_attempts_max, commit_faults=faults_plan.commits)
                for p in range(processes)]
        watch = None if budget is None else (lambda stop: Watch(budget, proxy, stop, label))
        results, elapsed, watch = _race(jobs, result_timeout_s or RESULT_TIMEOUT_S * max(1.0, commits / 25), watch)
        load = os.getloadavg()
        judging = time.monotonic()
        proxy.clear(forget=False)  # heal: no new fault; what is still inside the proxy goes on to S3
        if not proxy.wait_idle(DRAIN_TIMEOUT_S):
            raise RuntimeError(f"requests still inside the fault proxy {DRAIN_TIMEOUT_S:.0f} s after the writers ended")
        exchanges = proxy.history()
        if catalog_uri is not None:
            direct_catalog.close()
            _, direct_catalog = open_catalog(direct)
        return _assemble(processes, commits, seed, faults_plan, (faults, fault_rate), catalog, isolation,
                         elapsed, results, exchanges, schedule, direct_store, direct_catalog, judging, load, watch)


MOTO_START_TIMEOUT_S = 60.0


@contextlib.contextmanager
def _moto_process(tmp: str):
    """moto (atomic) in a process of its own: every writer's request passes through moto and
    through the proxy; in one process they would share one interpreter lock (and, on a
    loaded machine, one thread's share of the CPU). Its log goes to a file in `tmp`."""
    import subprocess
    from types import SimpleNamespace
    from icefloe.conformance.testing.moto_server import DEFAULT_BUCKET
    log_path = os.path.join(tmp, "moto.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "icefloe.conformance.testing.moto_server",
                                 "--bucket", DEFAULT_BUCKET], stdout=subprocess.PIPE, stderr=log)
    try:
        import selectors
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(MOTO_START_TIMEOUT_S) or not (line := proc.stdout.readline().decode().strip()):
            raise RuntimeError(f"moto did not start: {open(log_path, errors='replace').read()[-2000:]}")
        yield SimpleNamespace(endpoint_url=line, bucket=DEFAULT_BUCKET)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def quiet_log(name: str):
    """Silence logger `name` for a while: a server that logs a traceback for each failure a
    campaign provokes or counts on purpose."""
    log = logging.getLogger(name)
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def _quiet_moto():
    """moto answers 500 when a GET races an overwrite of the same key (the old value's
    buffer is closed under it); the store retries it like any 5xx. werkzeug would log a
    traceback for each: the campaign counts them instead (`server_errors`)."""
    return quiet_log("werkzeug")


def _create(store, catalog, warehouse: str) -> None:
    from icefloe.impl.format.transforms import parse_partition_spec
    from icefloe.impl.format.types import schema_from_arrow
    from icefloe.impl.table.table import create_table
    if hasattr(catalog, "create_namespace"):
        catalog.create_namespace(("db",))
    schema = schema_from_arrow(rows([0], "a").schema)
    create_table(catalog, TABLE, schema, parse_partition_spec("cat", schema), f"{warehouse}/db.db/t",
                 RETRY_PROPERTIES, io=store)


def _race(jobs: list, timeout_s: float, watching=None) -> tuple[list, float, Watch | None]:
    """Spawn the writers, start them together once all are ready, collect their records
    (with `watching`, a Watch built on the writers' stop event, ticked meanwhile)."""
    ctx = mp.get_context("spawn")
    go, stop, results = ctx.Event(), ctx.Event(), ctx.Queue()
    watch = watching(stop) if watching is not None else None
    workers = [ctx.Process(target=writer_main, args=(job, go, results, stop), daemon=True) for job in jobs]
    for w in workers:
        w.start()
    try:
        collect(results, workers, "ready", len(jobs), START_TIMEOUT_S)
        go.set()
        started = time.monotonic()
        if watch is not None:
            watch.started = watch.clock()
        out = collect(results, workers, "done", len(jobs), timeout_s, watch)
        elapsed = time.monotonic() - started
    finally:
        go.set()
        for w in workers:
            w.join(timeout=10)
            if w.is_alive():
                w.kill()
    return sorted(out, key=lambda r: r["process"]), elapsed, watch


def collect(results, workers, want: str, n: int, timeout_s: float, watch: Watch | None = None) -> list:
    """The payloads of `n` messages of kind `want` from writer processes (an "error"
    message, a dead writer or the timeout raise); with a `watch` (campaign_budget), ticked
    meanwhile and told of each "op" message."""
    import queue
    out, deadline = [], time.monotonic() + timeout_s
    while len(out) < n:
        if watch is not None:
            watch.tick()
        if time.monotonic() > deadline:
            raise RuntimeError(f"writers not {want} after {timeout_s:.0f} s")
        try:
            kind, payload = results.get(timeout=0.5)
        except queue.Empty:
            dead = [w for w in workers if w.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(f"a writer process died with exit code {dead[0].exitcode}") from None
            continue
        if kind == "error":
            raise RuntimeError(f"a writer process failed: {payload}")
        if kind == want:
            out.append(payload)
        elif kind == "op" and watch is not None:
            watch.op_ended()
    return out


def _assemble(processes, commits, seed, plan: FaultPlan, faults, catalog, isolation, elapsed, results, exchanges,
              schedule, store, catalog_obj, judging, load, watch: Watch | None = None) -> CampaignResult:
    ops = tuple(o for r in results for o in r["ops"])
    phases = {"heal_s": time.monotonic() - judging}
    t = time.monotonic()
    resolutions = resolve_unknowns(ops, store, catalog_obj, TABLE)
    phases["resolve_s"], t = time.monotonic() - t, time.monotonic()
    evidence = gather_evidence(store, catalog_obj, ops, resolutions,
                               tuple(x for r in results for x in r["reads"]),
                               tuple(x for r in results for x in r["observed"]), TABLE)
    phases["evidence_s"], t = time.monotonic() - t, time.monotonic()
    faults_by_kind = fault_counts(exchanges)
    for r in results:
        faults_by_kind.update(r.get("sql_faults", {}))
    server_errors = sum(1 for e in exchanges if e.fault is None and isinstance(e.upstream_status, int)
                        and e.upstream_status >= 500)
    judgement = judge(evidence, isolation)
    phases["judge_s"] = time.monotonic() - t
    return CampaignResult(
        processes, commits, seed, faults[0], faults[1], catalog, isolation, elapsed,
        outcomes=dict(Counter(o.outcome for o in ops)), kinds=dict(Counter(o.kind for o in ops)),
        retries=sum(max(0, o.attempts - 1) for o in ops), faults=dict(faults_by_kind),
        requests=len(exchanges), unknown_resolved=dict(Counter(v[0] for v in resolutions.values())),
        read_errors=sum(sum(r["read_errors"].values()) for r in results),
        judgement=judgement, evidence=evidence, plan=plan.name,
        judge_s=time.monotonic() - judging, load_avg=tuple(round(x, 2) for x in load),
        server_errors=server_errors, phases={k: round(v, 1) for k, v in phases.items()},
        stopped=watch.stopped if watch else "", stopped_at_s=watch.stopped_at_s if watch else None,
        ops_per_writer=tuple(len(r["ops"]) for r in results))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--commits", type=int, default=25, help="operations per process")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-faults", action="store_true")
    ap.add_argument("--plan", choices=PLANS, default=STANDARD,
                    help="fault plan: standard, or deep (unresolved outcomes; docs/campaigns.md)")
    ap.add_argument("--fault-rate", type=float, default=1.0, help="scales every fault probability")
    ap.add_argument("--catalog", choices=CATALOGS, default="s3")
    ap.add_argument("--postgres-dsn", default=None,
                    help="with --catalog postgresql: an existing server (default: a throwaway one)")
    ap.add_argument("--isolation", choices=(SERIALIZABLE, SNAPSHOT), default=SERIALIZABLE)
    ap.add_argument("--json", action="store_true", help="print the result as JSON instead")
    args = ap.parse_args(argv)
    return run_and_print("campaign", lambda: run_campaign(
        args.processes, args.commits, args.seed, faults=not args.no_faults, fault_rate=args.fault_rate,
        catalog=args.catalog, isolation=args.isolation, plan=args.plan, postgres_dsn=args.postgres_dsn),
        args.json)


def run_and_print(name: str, run, as_json: bool) -> int:
    """A judged run's command-line ending (campaign, interop): its summary or JSON on
    stdout; exit 0 valid, 1 judged invalid, 2 when it could not run (one line on stderr)."""
    try:
        result = run()
    except (ValueError, RuntimeError, ImportError) as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result.to_json(), indent=2, default=str) if as_json else result.summary())
    return 0 if result.valid else 1


if __name__ == "__main__":
    sys.exit(main())
