"""`icefloe demo-pipeline`: the example data pipeline on Spark, judged by the checker
(docs/spark.md "The demo pipeline").

Two Spark applications (separate processes) append to one table with Spark's own Parquet
writer (icefloe.impl.spark.write) while a third compacts it; each records every job's
outcome in a shared commit log. The schedule makes them contend: batch k of both
appenders and, for k = 1 .. compactions, a compaction planned after batch k-1 wait at a
commit barrier when their commit's first attempt has written its metadata and is about to
swap. Then the appenders' swaps race (of two attempts on the same base one wins, the
other is rejected and retries: validation on retry, spec/PROTOCOL.md 7), and in a
compaction's batch the compaction swaps first, so both appenders' attempts are rejected
and retried on top of it: every batch shows contention, every compaction lands among
the appends. No party goes on without the others (BarrierTimeout, a hang guard, fails its
application instead), so the contention does not depend on timing or load. Afterwards the judge
(demo/judge.py) runs the history checker (`icefloe.model.checks.history`) on the table's
metadata chain and the recorded operations and checks the rows: linear history, no lost
or duplicated commit or row, time travel to every snapshot; it reports commit retries,
conflicts and compactions among the appends, and fails a run that shows no contention.
A progress bar follows the jobs.

    icefloe demo-pipeline [--workdir DIR] [--appends N] [--rows R] [--compactions C]

The command's arguments are parsed by conformance/demo/command.py before this module (and
Spark, pyarrow) is imported, so `icefloe demo-pipeline --help` stays a help text.

Exit 0: every check passed; 1: a check failed (the verdict says which); 2: bad usage or
a Spark application did not finish.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from icefloe.impl.spark.job import read_commit_log
from icefloe.model.state import COMMITTED, CONFLICT
from icefloe.conformance.demo.judge import (  # noqa: F401 - re-exported for the tests and users
    APPENDERS, TABLE, DemoVerdict, create_demo_table, judge, options, row_id,
)

ROLE_TIMEOUT_S = 1200       # the three Spark applications, start to finish (a hang guard)
BARRIER_WAIT_S = 900        # a party waiting for the others: then it fails, never runs on alone
POLL_S = 0.2
COMPACTION_ROUNDS_MAX = 500
COMPACTION_IDLE_S = 0.5      # between compactions that found nothing to do
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


# -- the Spark applications --------------------------------------------------------------

def _warm_up(spark) -> None:
    """Start the Python workers before the barrier, so the race is between jobs, not JVMs."""
    spark.sparkContext.parallelize(range(4), 2).map(lambda x: x + 1).count()


def _wait_for(path: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear within {timeout_s} s")
        time.sleep(POLL_S)


def _schedule(workdir: Path) -> dict:
    return json.loads((workdir / "schedule.json").read_text())


def arrive(workdir: Path, batch: int, party: str) -> None:
    """Mark `party` at the commit barrier of `batch` (idempotent)."""
    (workdir / f"arrive-{batch}-{party}").touch()


def barrier(workdir: Path, batch: int, party: str) -> None:
    """Arrive at the commit barrier of `batch` (each party's first attempt has written its
    metadata and is about to swap) and wait for the other parties of that batch (or for
    their exit, or BARRIER_WAIT_S). Then the swaps race; in a compaction's batch the
    compaction swaps first and the appenders after it has finished, so their attempts, made
    on the base before it, are rejected and retried on top of it: the compaction lands
    among the appends every time."""
    arrive(workdir, batch, party)
    compacting = batch in _schedule(workdir)["compaction_batches"]
    parties = list(APPENDERS) + (["C"] if compacting else [])
    _wait_for_all([(workdir / f"arrive-{batch}-{p}", workdir / f"gone-{p}") for p in parties], BARRIER_WAIT_S)
    if compacting and party != "C":
        _wait_for_all([(workdir / f"swapped-{batch}-C", workdir / "gone-C")], BARRIER_WAIT_S)


class BarrierTimeout(TimeoutError):
    """A party waited `BARRIER_WAIT_S` for the others: the run fails rather than going on
    without the overlap the schedule promises (the contention must not depend on timing)."""


def _wait_for_all(alternatives: list[tuple], timeout_s: float) -> None:
    """Until one path of every tuple exists; BarrierTimeout after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not all(any(p.exists() for p in paths) for paths in alternatives):
        if time.monotonic() > deadline:
            raise BarrierTimeout(f"waited {timeout_s} s for one of each of {[[p.name for p in ps] for ps in alternatives]}")
        time.sleep(POLL_S / 4)


def run_appender(workdir: Path, app: str, appends: int, rows: int, spark=None) -> int:
    from icefloe.impl.spark import write
    from icefloe.impl.spark.session import local_session
    spark = spark or local_session(f"demo-append-{app}")
    _warm_up(spark)
    (workdir / f"ready-{app}").touch()
    _wait_for(workdir / "go", BARRIER_WAIT_S)
    opts = options(workdir)
    try:
        for batch in range(appends):
            df = spark.range(rows, numPartitions=2).selectExpr(
                f"id + {row_id(app, batch, 0)} as id", f"'{app}' as app", f"cast({batch} as int) as batch",
                "cast(id % 4 as string) as cat")
            try:  # Spark's own Parquet writer; the commit's first swap waits at the batch's barrier
                write(df, TABLE, opts, before_swap=lambda b=batch: barrier(workdir, b, app))
            except BarrierTimeout:
                raise  # the schedule broke down: this application fails, the run reports it
            except Exception as e:  # noqa: BLE001 - the commit log holds the outcome; keep appending
                print(f"appender {app} batch {batch}: {type(e).__name__}: {str(e).splitlines()[0][:200]}",
                      file=sys.stderr)
            arrive(workdir, batch, app)  # a failed job must not hold the others at the barrier
            (workdir / f"committed-{batch}-{app}").touch()
    finally:
        (workdir / f"gone-{app}").touch()
    (workdir / f"done-{app}").touch()
    return 0


def run_compactor(workdir: Path, compactions: int, spark=None) -> int:
    """Compact once per scheduled batch: plan after the appenders' previous batch committed,
    rewrite, then commit at that batch's barrier, together with its appends."""
    from icefloe.impl.spark.maintenance import compact
    from icefloe.impl.spark.session import local_session
    spark = spark or local_session("demo-compact")
    _warm_up(spark)
    (workdir / "ready-C").touch()
    _wait_for(workdir / "go", BARRIER_WAIT_S)
    opts = options(workdir)
    committed = 0
    try:
        for batch in _schedule(workdir)["compaction_batches"]:
            for app in APPENDERS:
                _wait_for_any([workdir / f"committed-{batch - 1}-{app}", workdir / f"gone-{app}"], BARRIER_WAIT_S)
            try:
                result = compact(spark, TABLE, opts, commit_log=opts["commit-log"],
                                 before_swap=lambda b=batch: barrier(workdir, b, "C"))
                committed += _landed(result)
            finally:
                arrive(workdir, batch, "C")  # nothing to compact: release the appenders
                (workdir / f"swapped-{batch}-C").touch()
        rounds = 0
        while committed < compactions and rounds < COMPACTION_ROUNDS_MAX:
            if all((workdir / f"gone-{a}").exists() for a in APPENDERS):
                committed += _landed(compact(spark, TABLE, opts, commit_log=opts["commit-log"]))
                break
            rounds += 1
            time.sleep(COMPACTION_IDLE_S)
    finally:
        (workdir / "gone-C").touch()
    return 0


def _landed(result) -> int:
    return int(type(result.outcome).__name__ == "Committed" and result.outcome.snapshot_id is not None)


def _wait_for_any(paths: list, timeout_s: float) -> None:
    _wait_for_all([tuple(paths)], timeout_s)


# -- driving -----------------------------------------------------------------------------

def run_pipeline(workdir: Path, appends: int = 3, rows: int = 400, compactions: int = 2,
                 spark=None, log=print, progress=None) -> DemoVerdict:
    """Run the three applications on the contending schedule (module docstring) and judge."""
    workdir.mkdir(parents=True, exist_ok=True)
    create_demo_table(workdir)
    schedule = {"appends": appends, "compaction_batches": list(range(1, min(compactions, appends - 1) + 1))}
    (workdir / "schedule.json").write_text(json.dumps(schedule))
    base = [sys.executable, "-m", "icefloe.conformance.demo.command", "--workdir", str(workdir),
            "--appends", str(appends), "--rows", str(rows), "--compactions", str(compactions)]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    procs = {}
    for role in [*(f"append-{a}" for a in APPENDERS), "compact"]:
        out = open(workdir / f"{role}.log", "wb")
        procs[role] = subprocess.Popen(base + ["--role", role], stdout=out, stderr=subprocess.STDOUT, env=env)
    log(f"started 3 Spark applications (pids {', '.join(str(p.pid) for p in procs.values())})")
    bar = progress or Progress(len(APPENDERS) * appends + max(compactions, len(schedule["compaction_batches"])),
                               log)
    try:
        while not all((workdir / f"ready-{n}").exists() for n in ("A", "B", "C")):
            bar.show("starting Spark", _jobs_done(workdir))
            if any(p.poll() not in (None, 0) for p in procs.values()):
                break
            time.sleep(POLL_S * 2)
        (workdir / "go").touch()
        started = time.monotonic()
        codes = {}
        while len(codes) < len(procs):
            for role, p in procs.items():
                if role not in codes and p.poll() is not None:
                    codes[role] = p.returncode
            bar.show("appending and compacting", _jobs_done(workdir))
            if time.monotonic() - started > ROLE_TIMEOUT_S:
                raise subprocess.TimeoutExpired("demo-pipeline", ROLE_TIMEOUT_S)
            time.sleep(POLL_S * 2)
        bar.show("judging", _jobs_done(workdir), final=True)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    failed = [r for r, c in codes.items() if c != 0]
    if failed:
        raise RuntimeError(f"Spark application(s) {failed} failed; see {workdir}/<role>.log")
    return judge(workdir, rows, spark, require_contention=True)


def _jobs_done(workdir: Path) -> tuple[int, int, int]:
    """(jobs recorded, retries so far, conflicts so far) from the shared commit log."""
    records = read_commit_log(options(workdir)["commit-log"])
    records = [r for r in records if not (r["outcome"] == COMMITTED and r["snapshot-id"] is None)]
    return (len(records), sum(max(0, r["attempts"] - 1) for r in records),
            sum(r["outcome"] == CONFLICT for r in records))


class Progress:
    """A one-line progress bar (redrawn in place on a terminal, a line per change otherwise)."""
    WIDTH = 24

    def __init__(self, total: int, log=print, stream=None):
        self.total, self.log, self.stream = max(1, total), log, stream or sys.stdout
        self.last = None
        self.tty = self.stream.isatty() and log is print

    def show(self, phase: str, done: tuple, final: bool = False) -> None:
        jobs, retries, conflicts = done
        filled = min(self.WIDTH, self.WIDTH * jobs // self.total)
        line = (f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {jobs}/{self.total} jobs, "
                f"{retries} commit retries, {conflicts} conflicts - {phase}")
        if line == self.last:
            return
        self.last = line
        if self.tty:
            self.stream.write("\r" + line.ljust(100) + ("\n" if final else ""))
            self.stream.flush()
        else:
            self.log(line)


def run(args) -> int:
    """Run what command.py parsed: one role of a Spark application (a child process), or the
    whole pipeline and its verdict."""
    if args.role:
        if args.role.startswith("append-"):
            return run_appender(args.workdir, args.role[len("append-"):], args.appends, args.rows)
        if args.role == "compact":
            return run_compactor(args.workdir, args.compactions)
        print(f"demo-pipeline: unknown role {args.role!r}", file=sys.stderr)
        return EXIT_USAGE
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="icefloe-demo-"))
    if (workdir / "catalog.db").exists():
        print(f"demo-pipeline: {workdir} already holds a demo; choose an empty directory", file=sys.stderr)
        return EXIT_USAGE
    print(f"demo-pipeline: workdir {workdir}")
    try:
        verdict = run_pipeline(workdir, args.appends, args.rows, args.compactions)
    except (RuntimeError, TimeoutError, subprocess.TimeoutExpired) as e:
        print(f"demo-pipeline: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(verdict.render())
    return EXIT_OK if verdict.valid else EXIT_FAILED
