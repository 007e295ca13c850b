"""Real concurrency campaigns (issue 5 item 5): N writer processes x M commits of mixed
operations on one icefloe table on moto S3, through the fault-injecting proxy, judged
afterwards by the history checker (`campaign_judge`).

Unlike the Hypothesis machine, nothing here is interleaved by hand: the writers are OS
processes (spawned, so none inherits the parent's server threads) that really race, and
their interleaving is whatever the machine does. The seed fixes each writer's choice of
operations and rows, the fault plan's rates, and the proxy's random draws; it does not fix
the interleaving, so a campaign is replayable in its inputs, not step for step. What it
finds is judged from records, like Jepsen: each writer records every operation (starting
snapshot, filter, files read/added/removed, outcome Committed / Conflict / Unknown,
snapshot id, attempts) and its reads; after the run the faults are healed, each Unknown is
resolved by the writer's own `resolve_unknown`, every metadata file left in the store is
read, and `campaign_judge.judge` decides.

    python -m icefloe.conformance.campaign --processes 4 --commits 25 --seed 1

prints the summary and exits 0 when the history is valid, 1 when it is not, 2 on usage
or setup errors. Needs the `s3` extra (moto).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field

from icefloe.conformance.campaign_judge import (
    APPEND, COMMITTED, CONFLICT, FAILED, KINDS, NOOP, OVERWRITE, REWRITE, ROLLBACK, UNKNOWN,
    Evidence, Judgement, OpRecord, judge,
)
from icefloe.model.checks.history import SERIALIZABLE, SNAPSHOT, Read, SnapshotRecord, TableHistory

TABLE = "db.t"
PARTITIONS = ("a", "b", "c")
ROWS_PER_OP = 3
REGION = "us-east-1"
SECRET = "secret"
DEFAULT_MIX = {APPEND: 0.55, OVERWRITE: 0.2, REWRITE: 0.15, ROLLBACK: 0.1}
READ_PROBABILITY = 0.3
# Contention is the point: many retries, short waits.
RETRY_PROPERTIES = {"commit.retry.num-retries": "30", "commit.retry.min-wait-ms": "2",
                    "commit.retry.max-wait-ms": "100", "commit.retry.total-timeout-ms": "120000"}
READ_TIMEOUT_S = 1.0          # a swap delayed past this is given up on, then lands late
LATE_DELAY_S = 1.5
START_TIMEOUT_S = 120.0       # spawning imports pyarrow and boto3 in every writer
RESULT_TIMEOUT_S = 900.0
ROLLBACK_DEPTH_MAX = 3        # how far back a rollback may go


# -- faults ---------------------------------------------------------------------------------

def fault_plan(seed: int, rate: float = 1.0) -> list:
    """Seeded proxy rules, one per fault kind; `rate` scales every probability (0 = none).
    Survivable faults only: the store retries each request up to 4 times, so most are
    absorbed there; lost responses and late swaps are what reach the commit loop."""
    from icefloe.conformance.testing.proxy import Delay, LoseResponse, Match, Reject, Reset, Rule
    if rate <= 0:
        return []
    rng = random.Random(f"faults-{seed}")
    writes = Match(operation=frozenset({"PutObject", "ConditionalPutObject"}))
    conditional = Match(operation="ConditionalPutObject")

    def p(low: float, high: float) -> float:
        return min(1.0, rate * rng.uniform(low, high))
    return [
        Rule(Reject(503), probability=p(0.01, 0.03)),
        Rule(Reject(500), writes, probability=p(0.005, 0.015)),
        Rule(Reset(), probability=p(0.005, 0.015)),
        Rule(LoseResponse("reset"), conditional, probability=p(0.02, 0.05)),
        Rule(LoseResponse("500"), conditional, probability=p(0.01, 0.03)),
        Rule(Delay(LATE_DELAY_S), Match(operation="ConditionalPutObject", key="*pointer.json"),
             probability=p(0.01, 0.03)),
        Rule(Delay(round(rng.uniform(0.01, 0.05), 3)), probability=p(0.02, 0.05)),
    ]


# -- one writer process ---------------------------------------------------------------------

def _rows(ids, cat):
    import pyarrow as pa
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": [cat] * len(ids),
                     "v": [float(i) for i in ids]})


def _open(job: dict):
    from icefloe.impl.catalog.s3 import S3Catalog
    from icefloe.impl.catalog.sql import SqlCatalog
    from icefloe.impl.s3.store import S3Store
    store = S3Store.from_config(job["endpoint"], job["client"], SECRET, REGION,
                                read_timeout_s=job["read_timeout_s"])
    catalog = (S3Catalog(store, job["warehouse"]) if job["catalog_uri"] is None
               else SqlCatalog(job["catalog_uri"]))
    return store, catalog


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
    rows = tuple((i, cat) for i in ids)
    if kind == APPEND:
        return P.FastAppend(_rows(ids, cat)), dict(kind=APPEND, rows=rows)
    if kind == OVERWRITE:
        return (P.DeleteWhere(f"cat = '{cat}'", _rows(ids, cat), isolation=isolation),
                dict(partition=cat, rows=rows))
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


def run_writer(job: dict, ready=None) -> dict:
    """One writer: `job["commits"]` operations, each recorded. Runs in a spawned process."""
    from icefloe.impl.outcomes import Committed, Conflict, IcefloeError, Unknown
    from icefloe.impl.table.env import Env
    from icefloe.impl.table.table import Table
    p, rng = job["process"], random.Random(job["seed"])
    store, catalog = _open(job)
    env = Env.seeded(job["seed"])  # real clocks and sleep: the writers really race
    ops, reads, observed, errors = [], [], [], Counter()
    if ready is not None:
        ready.wait(START_TIMEOUT_S)
    table = None
    for k in range(job["commits"]):
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
        files = _files_of(commit, kind, operation, table, known.get("rollback_to"))
        if isinstance(outcome, Committed):
            name = NOOP if outcome.attempts == 0 else COMMITTED
            rec = dict(outcome=name, snapshot_id=outcome.snapshot_id,
                       committed_location=outcome.metadata_location, attempts=outcome.attempts)
        elif isinstance(outcome, Conflict):
            rec = dict(outcome=CONFLICT, snapshot_id=outcome.snapshot_id, attempts=outcome.attempts,
                       reason=outcome.reason)
        else:
            assert isinstance(outcome, Unknown), outcome
            rec = dict(outcome=UNKNOWN, snapshot_id=outcome.snapshot_id, attempts=outcome.attempts,
                       reason=outcome.reason, attempted_locations=tuple(outcome.attempted_locations))
        ops.append(OpRecord(op_id, p, kind, start_snapshot_id=commit.starting_snapshot_id,
                            base_location=commit.first_base_location, started_s=started, ended_s=time.time(), **rec, **known, **files))
        if rng.random() < READ_PROBABILITY:
            try:
                table.refresh()
                snap = table.current_snapshot()
                reads.append(Read(f"{op_id}.read", None if snap is None else snap.snapshot_id,
                                  frozenset(table.tree.live_data_paths(snap))))
                observed.append(table.metadata_location)
            except IcefloeError as e:
                errors[type(e).__name__] += 1
    return {"process": p, "ops": ops, "reads": reads, "observed": observed,
            "read_errors": dict(errors), "requests": dict(store.counts)}


def _writer_main(job: dict, go, results) -> None:
    try:
        results.put(("ready", job["process"]))
        results.put(("done", run_writer(job, go)))
    except BaseException as e:  # noqa: BLE001 - the parent reports it as a setup failure
        import traceback
        results.put(("error", f"writer {job['process']}: {e!r}\n{traceback.format_exc()}"))


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
    faults: dict                    # proxy fault label -> how many requests it hit
    requests: int                   # requests through the proxy
    unknown_resolved: dict          # committed / conflict / unknown after healing
    read_errors: int
    judgement: Judgement
    evidence: Evidence = field(repr=False)

    @property
    def committed(self) -> int:
        return self.outcomes.get(COMMITTED, 0)

    @property
    def commits_per_s(self) -> float:
        return self.committed / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def valid(self) -> bool | None:
        return self.judgement.valid

    def summary(self) -> str:
        state = {True: "VALID", False: "INVALID", None: "UNKNOWN"}[self.valid]
        rerun = (f"python -m icefloe.conformance.campaign --processes {self.processes} "
                 f"--commits {self.commits} --seed {self.seed}"
                 + ("" if self.faults_enabled else " --no-faults")
                 + ("" if self.fault_rate == 1.0 or not self.faults_enabled else f" --fault-rate {self.fault_rate:g}")
                 + ("" if self.catalog == "s3" else f" --catalog {self.catalog}")
                 + ("" if self.isolation == SERIALIZABLE else f" --isolation {self.isolation}"))
        lines = [
            f"campaign {state}: {self.processes} processes x {self.commits} operations, seed {self.seed}, "
            f"catalog {self.catalog}, faults {'on' if self.faults_enabled else 'off'}, {self.isolation}",
            f"  rerun (same inputs, not the same interleaving): {rerun}",
            f"  {self.committed} commits in {self.elapsed_s:.1f} s = {self.commits_per_s:.2f} commits/s; "
            f"{self.retries} retries; {self.requests} S3 requests through the proxy",
            "  outcomes: " + ", ".join(f"{k}={v}" for k, v in sorted(self.outcomes.items())),
            "  operations: " + ", ".join(f"{k}={v}" for k, v in sorted(self.kinds.items())),
            "  faults injected: " + (", ".join(f"{k}={v}" for k, v in sorted(self.faults.items())) or "none"),
            "  unknown outcomes resolved after healing: "
            + (", ".join(f"{k}={v}" for k, v in sorted(self.unknown_resolved.items())) or "none"),
            self.judgement.render(),
        ]
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"processes": self.processes, "commits": self.commits, "seed": self.seed,
                "faults_enabled": self.faults_enabled, "fault_rate": self.fault_rate, "catalog": self.catalog,
                "isolation": self.isolation, "valid": "unknown" if self.valid is None else self.valid,
                "elapsed_s": self.elapsed_s, "commits_per_s": self.commits_per_s,
                "outcomes": self.outcomes, "kinds": self.kinds, "retries": self.retries,
                "faults": self.faults, "requests": self.requests,
                "unknown_resolved": self.unknown_resolved, "read_errors": self.read_errors,
                "anomalies": self.judgement.names(), "verdict": self.judgement.verdict.to_json(),
                "campaign_anomalies": [asdict(a) for a in self.judgement.anomalies]}


def run_campaign(processes: int = 4, commits: int = 25, seed: int = 1, *, faults: bool = True,
                 fault_rate: float = 1.0, catalog: str = "s3", isolation: str = SERIALIZABLE,
                 mix: dict | None = None) -> CampaignResult:
    """Start moto (atomic) and the proxy, create the table, race `processes` writers of
    `commits` operations each, heal, gather the evidence and judge it."""
    from icefloe.conformance.testing.moto_server import MotoS3Server
    from icefloe.conformance.testing.proxy import FaultProxy
    if processes < 1 or commits < 1:
        raise ValueError("processes and commits must be at least 1")
    if catalog not in ("s3", "sqlite"):
        raise ValueError(f"catalog must be 's3' or 'sqlite', not {catalog!r}")
    if isolation not in (SERIALIZABLE, SNAPSHOT):
        raise ValueError(f"isolation must be {SERIALIZABLE!r} or {SNAPSHOT!r}")
    mix = dict(mix or DEFAULT_MIX)
    if not set(mix) <= set(KINDS) or sum(mix.values()) <= 0:
        raise ValueError(f"mix must weigh some of {KINDS}")
    with tempfile.TemporaryDirectory(prefix="icefloe-campaign-") as tmp, \
            MotoS3Server(atomic=True) as moto, FaultProxy(moto.endpoint_url, seed=seed) as proxy:
        warehouse = f"s3://{moto.bucket}/campaign-{seed}-{uuid.uuid4().hex[:8]}"
        catalog_uri = None if catalog == "s3" else f"sqlite:///{tmp}/catalog.db"
        direct_store, direct_catalog = _open(dict(endpoint=moto.endpoint_url, client="judge",
                                                  read_timeout_s=30, warehouse=warehouse,
                                                  catalog_uri=catalog_uri))
        _create(direct_store, direct_catalog, warehouse)
        if faults:
            for rule in fault_plan(seed, fault_rate):
                proxy.add_rule(rule)
        jobs = [dict(process=p, seed=seed * 1000 + p, commits=commits, mix=mix, endpoint=proxy.endpoint_url,
                     client=f"writer-{p}", read_timeout_s=READ_TIMEOUT_S, warehouse=warehouse,
                     catalog_uri=catalog_uri, isolation=isolation) for p in range(processes)]
        results, elapsed = _race(jobs)
        exchanges = proxy.history()
        proxy.clear()  # heal: every later request goes through untouched
        if catalog_uri is not None:
            direct_catalog.close()
            _, direct_catalog = _open(dict(endpoint=moto.endpoint_url, client="judge", read_timeout_s=30,
                                           warehouse=warehouse, catalog_uri=catalog_uri))
        return _assemble(processes, commits, seed, (faults, fault_rate), catalog, isolation, elapsed, results,
                         exchanges, direct_store, direct_catalog)


def _create(store, catalog, warehouse: str) -> None:
    from icefloe.impl.format.transforms import parse_partition_spec
    from icefloe.impl.format.types import schema_from_arrow
    from icefloe.impl.table.table import create_table
    if hasattr(catalog, "create_namespace"):
        catalog.create_namespace(("db",))
    schema = schema_from_arrow(_rows([0], "a").schema)
    create_table(catalog, TABLE, schema, parse_partition_spec("cat", schema), f"{warehouse}/db.db/t",
                 RETRY_PROPERTIES, io=store)


def _race(jobs: list) -> tuple[list, float]:
    """Spawn the writers, start them together once all are ready, collect their records."""
    ctx = mp.get_context("spawn")
    go, results = ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=_writer_main, args=(job, go, results), daemon=True) for job in jobs]
    for w in workers:
        w.start()
    try:
        _collect(results, workers, "ready", len(jobs), START_TIMEOUT_S)
        go.set()
        started = time.monotonic()
        out = _collect(results, workers, "done", len(jobs), RESULT_TIMEOUT_S)
        elapsed = time.monotonic() - started
    finally:
        go.set()
        for w in workers:
            w.join(timeout=10)
            if w.is_alive():
                w.kill()
    return sorted(out, key=lambda r: r["process"]), elapsed


def _collect(results, workers, want: str, n: int, timeout_s: float) -> list:
    import queue
    out, deadline = [], time.monotonic() + timeout_s
    while len(out) < n:
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
    return out


def _assemble(processes, commits, seed, faults, catalog, isolation, elapsed, results, exchanges,
              store, catalog_obj) -> CampaignResult:
    ops = tuple(o for r in results for o in r["ops"])
    resolutions = _resolve_unknowns(ops, store, catalog_obj)
    evidence = gather_evidence(store, catalog_obj, ops, resolutions,
                               tuple(x for r in results for x in r["reads"]),
                               tuple(x for r in results for x in r["observed"]))
    fault_counts = Counter()
    for e in exchanges:
        for label in (e.fault or "").split("+"):
            if label and label != "gate":
                fault_counts[label] += 1
    return CampaignResult(
        processes, commits, seed, faults[0], faults[1], catalog, isolation, elapsed,
        outcomes=dict(Counter(o.outcome for o in ops)), kinds=dict(Counter(o.kind for o in ops)),
        retries=sum(max(0, o.attempts - 1) for o in ops), faults=dict(fault_counts),
        requests=len(exchanges), unknown_resolved=dict(Counter(v[0] for v in resolutions.values())),
        read_errors=sum(sum(r["read_errors"].values()) for r in results),
        judgement=judge(evidence, isolation), evidence=evidence)


def _resolve_unknowns(ops, store, catalog) -> dict:
    """Each Unknown, resolved after healing the way its writer would (9.6)."""
    from icefloe.impl.catalog.base import TableIdentifier
    from icefloe.impl.outcomes import Committed, Conflict, Unknown
    from icefloe.impl.table.commit import resolve_unknown
    out = {}
    for o in ops:
        if o.outcome != UNKNOWN:
            continue
        outcome = resolve_unknown(catalog, TableIdentifier.parse(TABLE), store,
                                  Unknown(o.reason, o.attempts, o.snapshot_id, o.attempted_locations))
        if isinstance(outcome, Committed):
            out[o.op_id] = (COMMITTED, outcome.metadata_location)
        elif isinstance(outcome, Conflict):
            out[o.op_id] = (CONFLICT, None)
        else:
            out[o.op_id] = (UNKNOWN, None)
    return out


def gather_evidence(store, catalog, ops, resolutions, reads, observed) -> Evidence:
    """Every metadata file left under the table, the live data files of every snapshot they
    hold, and the rows of every data file (read directly from moto, no faults)."""
    import pyarrow.parquet as pq
    import io as _io
    from icefloe.impl.catalog.base import TableIdentifier
    from icefloe.impl.table.commit import read_metadata
    from icefloe.impl.table.files import TreeReader
    current = catalog.load(TableIdentifier.parse(TABLE))
    location = read_metadata(store, current).location
    tree, entries, snap_files = TreeReader(store), [], {}
    for info in store.list(f"{location}/metadata/"):
        if not info.location.endswith(".metadata.json"):
            continue
        m = read_metadata(store, info.location)
        previous = m.metadata_log[-1].metadata_file if m.metadata_log else None
        snaps = []
        for s in m.snapshots:
            key = (s.snapshot_id, s.manifest_list)
            if key not in snap_files:
                snap_files[key] = frozenset(tree.live_data_paths(s))
            snaps.append(SnapshotRecord(s.snapshot_id, s.parent_snapshot_id, s.operation or "", snap_files[key]))
        entries.append((info.location, previous, m.current_snapshot_id, snaps))
    file_rows = {}
    for path in sorted(set().union(*snap_files.values()) if snap_files else ()):
        t = pq.read_table(_io.BytesIO(store.get(path)), columns=["id", "cat"])
        file_rows[path] = tuple(zip(t.column("id").to_pylist(), t.column("cat").to_pylist()))
    return Evidence(TableHistory.from_versions(entries, current), tuple(ops), tuple(reads), tuple(observed),
                    file_rows, resolutions)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--commits", type=int, default=25, help="operations per process")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-faults", action="store_true")
    ap.add_argument("--fault-rate", type=float, default=1.0, help="scales every fault probability")
    ap.add_argument("--catalog", choices=("s3", "sqlite"), default="s3")
    ap.add_argument("--isolation", choices=(SERIALIZABLE, SNAPSHOT), default=SERIALIZABLE)
    ap.add_argument("--json", action="store_true", help="print the result as JSON instead")
    args = ap.parse_args(argv)
    try:
        result = run_campaign(args.processes, args.commits, args.seed, faults=not args.no_faults,
                              fault_rate=args.fault_rate, catalog=args.catalog, isolation=args.isolation)
    except (ValueError, RuntimeError, ImportError) as e:
        print(f"campaign: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result.to_json(), indent=2, default=str) if args.json else result.summary())
    return 0 if result.valid else 1


if __name__ == "__main__":
    sys.exit(main())
