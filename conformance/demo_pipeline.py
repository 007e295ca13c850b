"""`icefloe demo-pipeline`: the example data pipeline on Spark, judged by the checker
(docs/spark.md "The demo pipeline").

Two Spark applications (separate processes) append to one table at the same time while a
third compacts it; each records every job's outcome in a shared commit log (the data
source's `commit-log` option). Afterwards the history checker
(`icefloe.model.checks.history`) judges the table's metadata chain and the recorded
operations, and the rows are checked: linear history (one parent chain, no fork), no lost
or duplicated commit, no lost or duplicated row, and time travel to every snapshot reads
exactly the rows committed up to it.

    icefloe demo-pipeline [--workdir DIR] [--appends N] [--rows R] [--compactions C]

Exit 0: every check passed; 1: a check failed (the verdict says which); 2: bad usage or
a Spark application did not finish.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format import types as T
from icefloe.impl.format.manifest import ManifestContent
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.io.local import LocalStore
from icefloe.impl.spark.job import read_commit_log
from icefloe.impl.table.commit import read_metadata
from icefloe.impl.table.files import TreeReader
from icefloe.impl.table.table import Table, create_table
from icefloe.model.checks.history import (
    SERIALIZABLE, History, Operation, SnapshotRecord, TableHistory, check_history, lineage, render,
)

TABLE = "icefloe.demo.events"
APPENDERS = ("A", "B")
ROLE_TIMEOUT_S = 600        # one Spark application, start to finish
BARRIER_WAIT_S = 300        # waiting for the others to be ready
POLL_S = 0.2
COMPACTION_ROUNDS_MAX = 500
COMPACTION_IDLE_S = 0.5      # between compactions that found nothing to do
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def options(workdir: Path) -> dict:
    return {"catalog-uri": f"sqlite:///{workdir / 'catalog.db'}", "warehouse": str(workdir / "warehouse"),
            "commit-log": str(workdir / "commits.jsonl")}


def row_id(app: str, batch: int, i: int) -> int:
    return (APPENDERS.index(app) + 1) * 10_000_000 + batch * 100_000 + i


def create_demo_table(workdir: Path) -> Table:
    import pyarrow as pa
    (workdir / "warehouse").mkdir(parents=True, exist_ok=True)
    arrow = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("app", pa.string()),
                       pa.field("batch", pa.int32()), pa.field("cat", pa.string())])
    schema = T.schema_from_arrow(arrow)
    spec = parse_partition_spec("cat", schema)
    opts = options(workdir)
    location = (workdir / "warehouse" / "demo.db" / "events").resolve().as_uri()
    return create_table(SqlCatalog(opts["catalog-uri"], name="icefloe"), "demo.events", schema, spec, location,
                        io=LocalStore())


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


def run_appender(workdir: Path, app: str, appends: int, rows: int, spark=None) -> int:
    from icefloe.impl.spark.session import local_session
    spark = spark or local_session(f"demo-append-{app}")
    _warm_up(spark)
    (workdir / f"ready-{app}").touch()
    _wait_for(workdir / "go", BARRIER_WAIT_S)
    opts = options(workdir)
    for batch in range(appends):
        df = spark.range(rows, numPartitions=2).selectExpr(
            f"id + {row_id(app, batch, 0)} as id", f"'{app}' as app", f"cast({batch} as int) as batch",
            "cast(id % 4 as string) as cat")
        try:
            df.write.format("icefloe").mode("append").options(**opts).save(TABLE)
        except Exception as e:  # noqa: BLE001 - the commit log holds the outcome; keep appending
            print(f"appender {app} batch {batch}: {type(e).__name__}: {str(e).splitlines()[0][:200]}",
                  file=sys.stderr)
    (workdir / f"done-{app}").touch()
    return 0


def run_compactor(workdir: Path, compactions: int, spark=None) -> int:
    from icefloe.impl.spark.maintenance import compact
    from icefloe.impl.spark.session import local_session
    spark = spark or local_session("demo-compact")
    _warm_up(spark)
    (workdir / "ready-C").touch()
    _wait_for(workdir / "go", BARRIER_WAIT_S)
    opts = options(workdir)
    rounds = committed = 0
    while rounds < COMPACTION_ROUNDS_MAX:
        appenders_done = all((workdir / f"done-{a}").exists() for a in APPENDERS)
        result = compact(spark, TABLE, opts, commit_log=opts["commit-log"])
        rounds += 1
        landed = type(result.outcome).__name__ == "Committed" and result.outcome.snapshot_id is not None
        committed += landed
        if appenders_done and (committed >= compactions or not landed):
            break  # the appends are over and there is nothing more (or enough) to compact
        if not landed:
            time.sleep(COMPACTION_IDLE_S)
    return 0


# -- judging -----------------------------------------------------------------------------

@dataclass
class DemoVerdict:
    valid: bool
    lines: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    history_text: str = ""

    def render(self) -> str:
        head = "PASS" if self.valid else "FAIL"
        out = [f"demo-pipeline: {head}: " + ", ".join(f"{k}={v}" for k, v in self.counts.items())]
        out += [f"  {line}" for line in self.lines]
        out.append(self.history_text)
        return "\n".join(out)


def build_history(table: Table, records: list[dict]) -> tuple[History, dict, dict]:
    """The metadata chain (every version, its snapshots and their live files) plus the
    recorded operations; also data file -> partition and snapshot id -> live files."""
    io, tree = table.io, TreeReader(table.io)
    table.refresh()
    current = table.metadata_location
    chain = [(e.metadata_file) for e in table.metadata.metadata_log] + [current]
    files_of: dict[int, frozenset] = {}
    partitions: dict[str, tuple] = {}
    versions = []
    previous = None
    for location in chain:
        metadata = read_metadata(io, location)
        infos = []
        for s in metadata.snapshots:
            if s.snapshot_id not in files_of:
                live = tree.live_entries(s, ManifestContent.DATA)
                files_of[s.snapshot_id] = frozenset(e.data_file.file_path for _, e in live)
                partitions.update({e.data_file.file_path: e.data_file.partition for _, e in live})
            infos.append(SnapshotRecord(s.snapshot_id, s.parent_snapshot_id, s.operation or "",
                                        files_of[s.snapshot_id]))
        versions.append((location, previous, metadata.current_snapshot_id, infos))
        previous = location
    ops = []
    for r in records:
        if r["outcome"] == "committed" and r["snapshot-id"] is None:
            continue  # a compaction that found nothing to do: no commit
        removed = frozenset(r["removed-files"])
        ops.append(Operation(
            op_id=f"{r['kind']}-{r['job-id'][:8]}", kind=r["kind"], outcome=r["outcome"],
            snapshot_id=r["snapshot-id"], committed_location=r.get("metadata-location"),
            start_snapshot_id=r.get("starting-snapshot-id"), read_partitions=frozenset(),
            read_files=removed, added_files=frozenset(r["added-files"]), removed_files=removed))
    history = History(TableHistory.from_versions(versions, current), operations=tuple(ops),
                      file_partitions=partitions)
    return history, files_of, partitions


def judge(workdir: Path, rows: int, spark=None) -> DemoVerdict:
    """Check the table in `workdir` against its commit log (each append wrote `rows` rows);
    time travel reads go through Spark when a session is given, else through
    icefloe.impl's reader."""
    opts = options(workdir)
    table = Table(SqlCatalog(opts["catalog-uri"], name="icefloe"), "demo.events", LocalStore())
    records = read_commit_log(opts["commit-log"])
    _attach_append_params(records, rows, table.io)
    history, files_of, _ = build_history(table, records)
    verdict = check_history(history, SERIALIZABLE)
    lines, ok = [], verdict.valid is True
    meta = table.metadata
    # Linear history: every retained snapshot is an ancestor of main's head, each child of
    # the one before it, and the chain of metadata files is the lineage the checker saw.
    ancestry = [s.snapshot_id for s in meta.ancestors_of(meta.current_snapshot_id)]
    side = sorted({s.snapshot_id for s in meta.snapshots} - set(ancestry))
    if side or len(lineage(history)) != len(history.versions):
        ok = False
        lines.append(f"linear history: snapshots off main's ancestry {side[:5]}")
    # Rows: each committed append's rows, at every snapshot from its own onwards.
    by_snapshot = {r["snapshot-id"]: r for r in records if r["outcome"] == "committed" and r["snapshot-id"]}
    unknown = [r["job-id"] for r in records if r["outcome"] == "unknown"]
    if unknown:
        ok = False
        lines.append(f"unresolved unknown outcomes: {unknown}")
    expected_at: dict[int, int] = {}
    expected_ids: dict[int, set] = {}
    running: set = set()
    for sid in reversed(ancestry):
        r = by_snapshot.get(sid)
        if r is not None and r["kind"] == "append":
            running = running | set(_ids_of_append(r))
        expected_ids[sid] = running
        expected_at[sid] = len(running)
    ids_by_file = _ids_by_file(table)
    travelled = 0
    for sid in reversed(ancestry):
        got = _read_ids(table, sid, spark, opts)
        travelled += 1
        want = expected_ids[sid]
        if len(got) != len(want) or set(got) != want:
            ok = False
            dup = len(got) - len(set(got))
            lines.append(f"time travel to {sid}: read {len(got)} rows ({dup} duplicated), expected {len(want)}; "
                         f"missing {sorted(want - set(got))[:3]}, extra {sorted(set(got) - want)[:3]}")
        if sid in files_of:
            from_files = sum(ids_by_file.get(f, 0) for f in files_of[sid])
            if from_files != len(want):
                ok = False
                lines.append(f"snapshot {sid}: its files hold {from_files} rows, expected {len(want)}")
    noops = sum(r["outcome"] == "committed" and r["snapshot-id"] is None for r in records)
    counts = {"jobs": len(records) - noops, "no-op compactions": noops,
              "appends committed": sum(r["outcome"] == "committed" and r["kind"] == "append" for r in records),
              "compactions committed": sum(r["outcome"] == "committed" and r["kind"] == "replace"
                                           and r["snapshot-id"] is not None for r in records),
              "conflicts": sum(r["outcome"] == "conflict" for r in records),
              "commit retries": sum(r["attempts"] - 1 for r in records if r["attempts"] > 1),
              "compactions among appends": _compactions_among_appends(records),
              "snapshots": len(ancestry), "snapshots time-travelled": travelled,
              "rows": expected_at.get(ancestry[0], 0) if ancestry else 0}
    return DemoVerdict(ok, lines, counts, render(verdict))


def _compactions_among_appends(records: list[dict]) -> int:
    """Committed compactions that landed between the first and the last append."""
    times = [r["time-ms"] for r in records if r["kind"] == "append" and r["outcome"] == "committed"]
    if not times:
        return 0
    return sum(1 for r in records if r["kind"] == "replace" and r["snapshot-id"] is not None
               and min(times) < r["time-ms"] < max(times))


def _ids_of_append(record: dict) -> list[int]:
    app, batch, rows = record["app"], record["batch"], record["rows"]
    return [row_id(app, batch, i) for i in range(rows)]


def _ids_by_file(table: Table) -> dict[str, int]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    out = {}
    for path in {f for s in table.metadata.snapshots for f in TreeReader(table.io).live_data_paths(s)}:
        out[path] = pq.ParquetFile(pa.BufferReader(table.io.get(path))).metadata.num_rows
    return out


def _read_ids(table: Table, snapshot_id: int, spark, opts: dict) -> list[int]:
    if spark is None:
        return table.scan(snapshot_id=snapshot_id).column("id").to_pylist()
    df = spark.read.format("icefloe").options(**opts).option("snapshot-id", str(snapshot_id)).load(TABLE)
    return [r.id for r in df.select("id").collect()]


# -- driving -----------------------------------------------------------------------------

def _attach_append_params(records: list[dict], rows: int, io) -> None:
    """The commit log names files, not rows: which (app, batch) an append was is read back
    from its first file; the ids it must have put in the table follow from those."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    for r in records:
        if r["kind"] != "append" or not r["added-files"]:
            continue
        first = pq.read_table(pa.BufferReader(io.get(r["added-files"][0])), columns=["app", "batch"])
        r["app"], r["batch"], r["rows"] = first.column("app")[0].as_py(), first.column("batch")[0].as_py(), rows


def run_pipeline(workdir: Path, appends: int = 3, rows: int = 400, compactions: int = 2,
                 spark=None, log=print) -> DemoVerdict:
    workdir.mkdir(parents=True, exist_ok=True)
    create_demo_table(workdir)
    base = [sys.executable, "-m", "icefloe.conformance.demo_pipeline", "--workdir", str(workdir),
            "--appends", str(appends), "--rows", str(rows), "--compactions", str(compactions)]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    procs = {}
    for role in [*(f"append-{a}" for a in APPENDERS), "compact"]:
        out = open(workdir / f"{role}.log", "wb")
        procs[role] = subprocess.Popen(base + ["--role", role], stdout=out, stderr=subprocess.STDOUT, env=env)
    log(f"started 3 Spark applications (pids {', '.join(str(p.pid) for p in procs.values())}); waiting for them")
    try:
        for name in ("A", "B", "C"):
            _wait_for(workdir / f"ready-{name}", BARRIER_WAIT_S)
        (workdir / "go").touch()
        started = time.monotonic()
        codes = {}
        for role, p in procs.items():
            codes[role] = p.wait(timeout=max(1, ROLE_TIMEOUT_S - (time.monotonic() - started)))
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    failed = [r for r, c in codes.items() if c != 0]
    if failed:
        raise RuntimeError(f"Spark application(s) {failed} failed; see {workdir}/<role>.log")
    log("judging")
    return judge(workdir, rows, spark)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="icefloe demo-pipeline", description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, help="where the table, catalog and logs go (default: a new temp dir)")
    ap.add_argument("--appends", type=int, default=3, help="appends per appending application")
    ap.add_argument("--rows", type=int, default=400, help="rows per append")
    ap.add_argument("--compactions", type=int, default=2, help="compactions the third application commits at least")
    ap.add_argument("--role", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.appends < 1 or args.rows < 1 or args.compactions < 0:
        print("demo-pipeline: --appends and --rows must be positive, --compactions not negative", file=sys.stderr)
        return EXIT_USAGE
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


if __name__ == "__main__":
    sys.exit(main())
