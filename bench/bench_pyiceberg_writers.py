"""Four pyiceberg writers through `icefloe serve` vs through pyiceberg's SqlCatalog (issue 13
item 6, second half).

The same workload on both sides, in the same run, on one SQLite catalog file and one local
warehouse: four threads, each a pyiceberg catalog of its own, append one small Arrow table
(one row) to one shared table, APPENDS_PER_WRITER times. SqlCatalog side: pyiceberg writes
the metadata JSON and swaps with `UPDATE ... WHERE metadata_location = <expected>` in
SQLite. REST side: pyiceberg's RestCatalog POSTs the commit to `icefloe serve` (uvicorn in
a thread of this process, on 127.0.0.1), which checks the requirements, writes the metadata
JSON and swaps in the same SQLite file. pyiceberg retries a lost race (409 / failed
UPDATE) itself with commit.retry.* set alike on both (no wait between attempts, up to
RETRIES_MAX retries). Reported: wall time, commits per second, commit latency (median and
p90, per append call, retries included), retries; ratios REST / SQL. The sides alternate
(SQL, REST, SQL, REST) and each figure is the better of its two rounds.
"""
from __future__ import annotations

import logging
import statistics
import tempfile
import threading
import time

TITLE = "4 pyiceberg writers: through icefloe serve (REST) vs pyiceberg's SqlCatalog"
WRITERS = 4
APPENDS_PER_WRITER, APPENDS_QUICK = 25, 6
RETRIES_MAX = 50
ROUNDS = 2


def _table_properties() -> dict:
    return {"commit.retry.num-retries": str(RETRIES_MAX), "commit.retry.min-wait-ms": "0",
            "commit.retry.max-wait-ms": "0"}


def _catalogs(side: str, root: str, server_url: str | None):
    """One catalog per writer (and one to create the table)."""
    from icefloe.conformance.engines.pyiceberg_engine import counting
    if side == "sql":
        from pyiceberg.catalog.sql import SqlCatalog
        make = lambda w: counting(SqlCatalog)("bench", uri=f"sqlite:///{root}/catalog.db",  # noqa: E731
                                              warehouse=f"file://{root}/warehouse")
    else:
        from pyiceberg.catalog.rest import RestCatalog
        make = lambda w: counting(RestCatalog)("bench", uri=server_url,  # noqa: E731
                                               **{"header.X-Icefloe-Writer": str(w)})
    return [make(w) for w in range(WRITERS + 1)]


def _round(side: str, root: str, server_url: str | None, appends: int, name: str) -> dict:
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField
    catalogs = _catalogs(side, root, server_url)
    catalogs[0].create_namespace_if_not_exists("bench")
    ident = f"bench.{name}"
    catalogs[0].create_table(ident, Schema(NestedField(1, "id", LongType(), required=False)),
                             location=f"file://{root}/warehouse/bench/{name}", properties=_table_properties())
    latencies: list = []
    lock = threading.Lock()
    errors: list = []

    def writer(w: int):
        table = catalogs[w].load_table(ident)
        for i in range(appends):
            rows = pa.table({"id": pa.array([w * 1_000_000 + i], pa.int64())})
            start = time.perf_counter()
            try:
                table.append(rows)
            except Exception as e:  # noqa: BLE001 - counted; the figures say how many failed
                errors.append(f"{type(e).__name__}: {e}")
            took = time.perf_counter() - start
            with lock:
                latencies.append(took)
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(1, WRITERS + 1)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    snapshots = len(catalogs[0].load_table(ident).metadata.snapshots)
    calls = sum(c.commit_calls for c in catalogs[1:])
    for c in catalogs:
        engine = getattr(c, "engine", None)
        if engine is not None:
            engine.dispose()
    latencies.sort()
    return {"wall": wall, "commits": snapshots, "rate": snapshots / wall, "p50": statistics.median(latencies),
            "p90": latencies[int(0.9 * (len(latencies) - 1))], "retries": calls - snapshots, "errors": len(errors)}


def run(quick: bool) -> str:
    from icefloe.conformance.testing.rest_server import RestServer
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)      # one warning per retry otherwise
    appends = APPENDS_QUICK if quick else APPENDS_PER_WRITER
    best: dict = {}
    with tempfile.TemporaryDirectory(prefix="icefloe-bench-pyiceberg-") as root:
        with RestServer(f"sqlite:///{root}/catalog.db", f"{root}/warehouse") as server:
            for r in range(ROUNDS):
                for side in ("sql", "rest"):
                    got = _round(side, root, server.url, appends, f"{side}{r}")
                    if side not in best or got["wall"] < best[side]["wall"]:
                        best[side] = got
    s, q = best["sql"], best["rest"]
    rows = [("wall time (s)", "wall", "{:.2f}"), ("commits / s", "rate", "{:.1f}"),
            ("append latency p50 (ms)", "p50", "{:.0f}"), ("append latency p90 (ms)", "p90", "{:.0f}"),
            ("retries (lost races)", "retries", "{:d}"), ("failed appends", "errors", "{:d}")]
    out = [f"{WRITERS} writer threads x {appends} appends of one row to one table, each writer its own "
           f"pyiceberg 0.12 catalog; SQLite catalog file and local warehouse shared by both sides; "
           f"best of {ROUNDS} alternating rounds.", "",
           "| figure | SqlCatalog | REST (icefloe serve) | REST / SQL |", "|---|---:|---:|---:|"]
    for label, key, fmt in rows:
        scale = 1000 if key in ("p50", "p90") else 1
        a, b = s[key] * scale, q[key] * scale
        ratio = f"{b / a:.2f}" if isinstance(a, float) and a else "-"
        out.append(f"| {label} | {fmt.format(a)} | {fmt.format(b)} | {ratio} |")
    out += ["", f"Commits landed: SQL {s['commits']}, REST {q['commits']} (of {WRITERS * appends}).",
            "What differs: through REST the client sends only its updates and the server reads the base, "
            "checks the requirements, writes the metadata JSON and swaps (uvicorn runs in this process, so "
            "it shares the GIL with the four writers); with SqlCatalog each client writes its own metadata "
            "JSON and swaps with an UPDATE. pyiceberg's append asserts main's head on both paths, so a lost "
            "race is a retry (409 through REST, a failed UPDATE with SQL) and pyiceberg refreshes and "
            "writes its manifest list again."]
    return "\n".join(out)


if __name__ == "__main__":
    import sys
    print(run("--quick" in sys.argv))
