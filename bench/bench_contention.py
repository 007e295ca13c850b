"""4 writer threads x 25 appends on one table: commits/s, retries, failed appends and files
left behind, icefloe vs pyiceberg on one warehouse and one SQLite catalog file, default
commit.retry.* properties."""
from __future__ import annotations

import logging
import sys
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow as pa  # noqa: E402
from pyiceberg.exceptions import CommitFailedException  # noqa: E402

import peers  # noqa: E402
from icefloe.impl.format.types import schema_from_arrow  # noqa: E402
from icefloe.impl.io.local import LocalStore  # noqa: E402
from icefloe.impl.outcomes import Committed, Conflict  # noqa: E402
from icefloe.impl.table.table import Table, create_table  # noqa: E402

TITLE = "Contention: 4 writer threads x 25 appends on one table"
WRITERS = 4
APPENDS = 25
ROWS = 10
ARROW_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("writer", pa.int32())])


def batch(writer: int, k: int) -> pa.Table:
    base = (writer * 1000 + k) * ROWS
    return pa.table({"id": list(range(base, base + ROWS)), "writer": [writer] * ROWS}, schema=ARROW_SCHEMA)


def race(work, writers: int) -> float:
    """Run work(writer) on `writers` threads released together; the wall time."""
    gate = threading.Barrier(writers + 1)
    errors = []

    def body(i):
        gate.wait()
        try:
            work(i)
        except BaseException as e:  # noqa: BLE001 - reported below, never swallowed
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    gate.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    took = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return took


def run_ours(w: peers.Warehouse, writers: int, appends: int, name: str, properties: dict) -> dict:
    create_table(w.catalog, f"db.{name}", schema_from_arrow(ARROW_SCHEMA), location=w.location(name),
                 properties=properties, io=w.store)
    written_before = len(w.store.written)
    outcomes: list = []
    lock = threading.Lock()

    def work(i):
        table = Table(w.catalog, f"db.{name}", w.store)
        for k in range(appends):
            outcome = table.append(batch(i, k))
            with lock:
                outcomes.append(outcome)

    windows = _timing_windows(w.catalog)
    try:
        took = race(work, writers)
    finally:
        del w.catalog.load, w.catalog.swap  # the class's methods again
    committed = [o for o in outcomes if isinstance(o, Committed)]
    written = Counter(peers.kind_of(loc) for loc, _ in w.store.written[written_before:])
    table = Table(w.catalog, f"db.{name}", LocalStore())
    return {"took": took, "committed": len(committed), "failed": len(outcomes) - len(committed),
            "conflicts": sum(isinstance(o, Conflict) for o in outcomes),
            "retries": sum(o.attempts - 1 for o in committed) + sum(o.attempts - 1 for o in outcomes
                                                                   if not isinstance(o, Committed)),
            "manifests_written": written["manifest"],
            "rows": table.scan().num_rows, "snapshots": len(table.history()),
            "left": w.left_behind(name), "windows": windows}


def _timing_windows(catalog) -> list[float]:
    """Wrap the catalog's load and swap (on the instance) to time each attempt's retry
    window: from its pointer read (the thread's last load) to its swap's answer."""
    windows: list[float] = []
    local = threading.local()
    load, swap = catalog.load, catalog.swap

    def timed_load(identifier):
        local.t0 = time.perf_counter()
        return load(identifier)

    def timed_swap(identifier, expected, new):
        result = swap(identifier, expected, new)
        windows.append(time.perf_counter() - local.t0)
        return result
    catalog.load, catalog.swap = timed_load, timed_swap
    return windows


def run_theirs(w: peers.Warehouse, writers: int, appends: int, name: str, properties: dict) -> dict:
    catalog = w.peer_catalog()
    catalog.create_namespace_if_not_exists("db")
    catalog.create_table(f"db.{name}", schema=ARROW_SCHEMA, location=w.location(name), properties=properties)
    peers.CountingPeerSqlCatalog.reset()
    peers.METER.reset()
    results = Counter()
    lock = threading.Lock()

    def work(i):
        table = w.peer_catalog().load_table(f"db.{name}")
        for k in range(appends):
            try:
                table.append(batch(i, k))
                kind = "committed"
            except CommitFailedException:
                kind = "failed"
            with lock:
                results[kind] += 1

    took = race(work, writers)
    attempts = peers.CountingPeerSqlCatalog.calls
    written = Counter(peers.kind_of(loc) for loc in peers.METER.written)
    table = Table(w.catalog, f"db.{name}", LocalStore())
    return {"took": took, "committed": results["committed"], "failed": results["failed"],
            "conflicts": results["failed"], "retries": attempts - writers * appends,
            "manifests_written": written["manifest"],
            "rows": table.scan().num_rows, "snapshots": len(table.history()),
            "left": w.left_behind(name)}


def _left(d: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(d.items())) or "none"


NO_RETRY = {"commit.retry.num-retries": "0"}
REPEATS = 4  # further icefloe runs with the default properties: a failed append is a rare event


def run(quick: bool) -> str:
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)  # one warning per retry otherwise
    writers, appends = (WRITERS, 5) if quick else (WRITERS, APPENDS)
    with peers.warehouse() as w:
        theirs = run_theirs(w, writers, appends, "theirs", {})
        ours = run_ours(w, writers, appends, "ours", {})
        theirs_nr = run_theirs(w, writers, appends, "theirs_nr", NO_RETRY)
        ours_nr = run_ours(w, writers, appends, "ours_nr", NO_RETRY)
        again = [run_ours(w, writers, appends, f"ours_again{i}", {}) for i in range(REPEATS)]
    rows = []
    for who, props, r in (("icefloe", "default", ours), ("pyiceberg", "default", theirs),
                          ("icefloe", "num-retries 0", ours_nr), ("pyiceberg", "num-retries 0", theirs_nr)):
        assert r["rows"] == r["committed"] * ROWS and r["snapshots"] == r["committed"], (who, r)
        r["rate"] = r["committed"] / r["took"]
        rows.append(f"| {who} | {props} | {r['committed']} | {r['failed']} ({100 * r['failed'] / (writers * appends):.0f}%) | "
                    f"{r['took']:.1f} | {r['rate']:.1f} | {r['retries']} | "
                    f"{r['manifests_written']} ({r['manifests_written'] / (writers * appends):.2f}) | "
                    f"{_left(r['left'])} |")
    failed_left = {k: v for k, v in ours_nr["left"].items() if k in ("data file", "manifest")}
    for r in again:
        assert r["rows"] == r["committed"] * ROWS and r["snapshots"] == r["committed"], r
    runs = [ours] + again
    total = len(runs) * writers * appends
    failed = sum(r["failed"] for r in runs)
    retries = sum(r["retries"] for r in runs)
    # every retry follows a rejected swap, and so does the end of a failed append
    lost = (retries + failed) / (total + retries)
    windows = sorted(x for r in runs for x in r["windows"])
    window_p50, window_p90 = (windows[int(len(windows) * q)] * 1000 for q in (0.5, 0.9))
    return f"""{writers} threads each append {appends} batches of {ROWS} rows to one unpartitioned table,
released together; pyiceberg ({peers.PEER}: one SqlCatalog and table handle per thread,
`table.append`) first, then icefloe (one `Table` handle per thread over one shared
LocalStore and SqlCatalog), both on the same SQLite catalog file and warehouse. First with
the default `commit.retry.*` properties (4 retries, 100 ms to 60 s backoff), then with
retries off (`commit.retry.num-retries` = 0), where appends fail for certain and show what
a definite failure leaves behind. Retries are attempts beyond the first (pyiceberg:
`commit_table` calls counted by a catalog subclass). After each run the final table was
checked: rows = committed appends x {ROWS} and one snapshot per committed append, so no
commit was lost. "Left behind" is every file under the table's directory that no retained
snapshot reaches and that is not a metadata JSON of the current chain (`bench/peers.py`).

| writer | commit.retry | committed | failed appends | seconds | commits/s | retries | manifests written (per append) | left behind |
|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Ratio of commits/s with the default properties (icefloe / pyiceberg):
{peers.ratio(ours['rate'], theirs['rate'])} (target: at least 2x). Data files and manifests icefloe left behind after
{ours_nr['failed']} definite failures: {_left(failed_left)}. The manifest lists and metadata JSON files
icefloe leaves in the default run are those of attempts whose swap was rejected and that
a later attempt of the same append replaced: spec/PROTOCOL.md 9.5 lets a writer delete
only after the whole operation failed definitely, so they are left to orphan removal (12).
icefloe writes its local objects with fsync; pyiceberg's local FileIO does not.

Failed appends are rare events, so icefloe's default-properties run was repeated
{REPEATS} more times: {failed} of {total} appends failed over {len(runs)} runs
({100 * failed / total:.1f}%; per run: {", ".join(str(r["failed"]) for r in runs)}), with
{retries} retries; {100 * lost:.0f}% of all swap attempts were rejected. An append fails
only when all {1 + 4} attempts the default `commit.retry.num-retries` allows lose their
swap, each to a commit that landed inside the attempt's window: from its pointer read to
its swap's answer, which holds the protocol's minimum (read the pointer, its metadata JSON and
the new head's manifest list; write a manifest list and a metadata JSON, each durably;
swap). In these runs that window took {window_p50:.0f} ms (median; 90th percentile
{window_p90:.0f} ms) over {len(windows)} attempts; on a busy shared machine most of it is waiting
for a core and for fsync, and the failure rate follows the machine's load.
"""
