"""Uncontended append commits: storage requests and wall time per commit as a table grows,
icefloe vs pyiceberg on one local warehouse and one SQLite catalog file."""
from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow as pa  # noqa: E402

import peers  # noqa: E402
from icefloe.impl.format.types import schema_from_arrow  # noqa: E402
from icefloe.impl.outcomes import Committed  # noqa: E402
from icefloe.impl.table.table import Table, create_table  # noqa: E402

TITLE = "Append commits: requests and time per commit as the table grows"
COMMITS = 200
WINDOW = 20  # commits 1-20 vs the last 20
ARROW_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("cat", pa.string())])


def batch(i: int) -> pa.Table:
    ids = list(range(i * 10, i * 10 + 10))
    return pa.table({"id": ids, "cat": [f"c{k % 3}" for k in ids]}, schema=ARROW_SCHEMA)


def measure(commits: int) -> dict[str, list[tuple[float, Counter]]]:
    """Alternate one icefloe commit and one pyiceberg commit, so load affects both alike."""
    out = {"icefloe": [], "pyiceberg": []}
    with peers.warehouse() as w:
        create_table(w.catalog, "db.ours", schema_from_arrow(ARROW_SCHEMA), location=w.location("ours"),
                     io=w.store)
        ours = Table(w.catalog, "db.ours", w.store)
        peer_catalog = w.peer_catalog()
        peer_catalog.create_namespace_if_not_exists("db")
        theirs = peer_catalog.create_table("db.theirs", schema=ARROW_SCHEMA, location=w.location("theirs"))
        for i in range(commits):
            rows = batch(i)
            before = Counter(w.store.counts)
            t0 = time.perf_counter()
            outcome = ours.append(rows)
            took = time.perf_counter() - t0
            assert isinstance(outcome, Committed), outcome
            out["icefloe"].append((took, Counter(w.store.counts) - before))
            before, _ = peers.METER.snapshot()
            t0 = time.perf_counter()
            theirs.append(rows)
            took = time.perf_counter() - t0
            out["pyiceberg"].append((took, peers.METER.snapshot()[0] - before))
        assert len(ours.refresh().metadata.snapshots) == commits
        assert len(peer_catalog.load_table("db.theirs").metadata.snapshots) == commits
        assert ours.scan().num_rows == peer_catalog.load_table("db.theirs").scan().to_arrow().num_rows
    return out


def window(samples, first: bool, size: int):
    part = samples[:size] if first else samples[-size:]
    ms = peers.mean(t for t, _ in part) * 1000
    total = sum((c for _, c in part), Counter())
    return ms, total, sum(total.values()) / len(part)


def run(quick: bool) -> str:
    commits = 40 if quick else COMMITS
    size = min(WINDOW, commits // 2)
    data = measure(commits)
    late_label = f"{commits - size + 1}-{commits}"
    rows, figures = [], {}
    for who in ("icefloe", "pyiceberg"):
        e_ms, e_counts, e_req = window(data[who], True, size)
        l_ms, l_counts, l_req = window(data[who], False, size)
        figures[who] = (e_ms, l_ms, e_req, l_req)
        rows.append(f"| {who} | {e_ms:.1f} | {l_ms:.1f} | {peers.ratio(l_ms, e_ms)} | "
                    f"{peers.request_text(e_counts, size)} | {peers.request_text(l_counts, size)} |")
    o, p = figures["icefloe"], figures["pyiceberg"]
    return f"""{commits} append commits of 10 rows each to an unpartitioned table, alternating one
icefloe commit and one pyiceberg ({peers.PEER}) commit on two tables in the same local
warehouse and the same SQLite catalog file (each side's append API on a table handle it
keeps, with its default properties; fast append for both). Requests are storage requests
per commit (see `bench/peers.py` for how each side is counted: icefloe's instrumented
store; a counting PyArrowFileIO subclass for pyiceberg); catalog SQL calls are not counted.
Both sides write the data file, one manifest, the manifest list and the metadata JSON.
icefloe reads nothing from storage per commit: it reads the pointer (an SQL query), finds
that it still names the metadata its handle committed last, and reuses that metadata and
the manifest list it wrote (immutable objects, cached on the handle); a pointer that moved
would cost one metadata GET and one manifest-list GET. pyiceberg re-reads the metadata in
`commit_table` and stats files around its writes. icefloe fsyncs every object it writes
(and its directory); pyiceberg's local FileIO does not.

| writer | ms/commit, commits 1-{size} | ms/commit, commits {late_label} | growth | requests/commit, 1-{size} | requests/commit, {late_label} |
|---|---|---|---|---|---|
{chr(10).join(rows)}

| ratio (icefloe / pyiceberg) | commits 1-{size} | commits {late_label} |
|---|---|---|
| wall time per commit | {peers.ratio(o[0], p[0])} | {peers.ratio(o[1], p[1])} |
| storage requests per commit | {peers.ratio(o[2], p[2])} | {peers.ratio(o[3], p[3])} |

Targets (issue 3): icefloe's growth at most 1.3x and at most 0.3x pyiceberg's time by
commit {commits}. icefloe's growth here: {peers.ratio(o[1], o[0])}; pyiceberg's: {peers.ratio(p[1], p[0])};
icefloe / pyiceberg at the end: {peers.ratio(o[1], p[1])}.
"""
