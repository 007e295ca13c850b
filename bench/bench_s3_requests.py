"""Request economy on S3: the requests one small single-file append and one scan send to
an S3 server, counted by the server, icefloe (S3Store + S3Catalog) beside pyiceberg 0.12
(SqlCatalog on SQLite + its pyarrow S3 FileIO), on one atomic moto server."""
from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog as PeerSqlCatalog

from icefloe.impl.catalog.s3 import S3Catalog
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.outcomes import Committed
from icefloe.conformance.testing.moto_server import DEFAULT_REGION, MotoS3Server
from icefloe.impl.s3.store import S3Store
from icefloe.impl.table.table import Table, create_table

TITLE = "Request economy on S3: server-side requests per append and per scan"
PEER = "pyiceberg 0.12.0"
BUCKET = "bench-requests"
OURS, THEIRS = "icefloe", "pyiceberg"  # the access key ids: how the server tells them apart
SIZES = (1, 50, 200)
SIZES_QUICK = (1, 10, 20)
# The design's floor per append with a pointer object swapped by If-Match (issue 4, item 5):
# PUT data file, manifest, manifest list, metadata JSON; the If-Match PUT of the pointer;
# GET the pointer and the metadata JSON.
FLOOR_POINTER = 7
ARROW_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("cat", pa.string())])

KINDS = ("PUT", "conditional PUT", "GET", "HEAD", "LIST", "multipart", "DELETE", "other")
MULTIPART = {"CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "AbortMultipartUpload",
             "ListParts", "UploadPartCopy"}


def kind_of(operation: str) -> str:
    if operation == "PutObject":
        return "PUT"
    if operation == "ConditionalPutObject":
        return "conditional PUT"
    if operation == "GetObject":
        return "GET"
    if operation == "HeadObject":
        return "HEAD"
    if operation.startswith("ListObjects"):
        return "LIST"
    if operation in MULTIPART:
        return "multipart"
    if operation in ("DeleteObject", "DeleteObjects"):
        return "DELETE"
    return "other"


class ServerCounts:
    """Requests the server saw, by client and kind (the atomic middleware's counters)."""

    def __init__(self, server: MotoS3Server):
        assert server.middleware is not None, "an atomic server counts requests"
        self.middleware = server.middleware

    def by_client(self) -> dict[str, Counter]:
        out: dict[str, Counter] = {OURS: Counter(), THEIRS: Counter()}
        for (_, operation, client), n in self.middleware.counts().items():
            if client in out:
                out[client][kind_of(operation)] += n
        return out

    def delta(self, before: dict[str, Counter]) -> dict[str, Counter]:
        now = self.by_client()
        return {who: now[who] - before[who] for who in now}


def batch(i: int) -> pa.Table:
    ids = list(range(i * 10, i * 10 + 10))
    return pa.table({"id": ids, "cat": [f"c{k % 3}" for k in ids]}, schema=ARROW_SCHEMA)


def measure(sizes: tuple[int, ...]) -> dict:
    """Alternate one icefloe and one pyiceberg append up to max(sizes) snapshots; keep the
    server's counts of the appends that make the table `size` snapshots long, then of a scan
    (planning alone, then planning and reading) by a fresh handle on each side."""
    appends: dict[int, dict[str, Counter]] = {}
    with MotoS3Server(bucket=BUCKET) as server, tempfile.TemporaryDirectory() as tmp:
        counts = ServerCounts(server)
        store = S3Store.from_config(server.endpoint_url, OURS, "secret", DEFAULT_REGION)
        catalog = S3Catalog(store, f"s3://{BUCKET}/icefloe-catalog")
        create_table(catalog, "db.t", schema_from_arrow(ARROW_SCHEMA), location=f"s3://{BUCKET}/ours/db/t",
                     io=store)
        ours = Table(catalog, "db.t", store)
        peer_catalog = PeerSqlCatalog(
            "bench", uri=f"sqlite:///{Path(tmp) / 'peer.db'}", warehouse=f"s3://{BUCKET}/theirs",
            **{"s3.endpoint": server.endpoint_url, "s3.access-key-id": THEIRS,
               "s3.secret-access-key": "secret", "s3.region": DEFAULT_REGION})
        peer_catalog.create_namespace_if_not_exists("db")
        theirs = peer_catalog.create_table("db.t", schema=ARROW_SCHEMA, location=f"s3://{BUCKET}/theirs/db/t")
        for i in range(1, max(sizes) + 1):
            rows = batch(i)
            before = counts.by_client()
            outcome = ours.append(rows)
            assert isinstance(outcome, Committed), outcome
            theirs.append(rows)
            if i in sizes:
                appends[i] = counts.delta(before)
        # One more append on each side from a handle opened for it (a new process would).
        before = counts.by_client()
        fresh_catalog = S3Catalog(store, f"s3://{BUCKET}/icefloe-catalog")
        assert isinstance(Table(fresh_catalog, "db.t", store).append(batch(0)), Committed)
        peer_catalog.load_table("db.t").append(batch(0))
        fresh_append = counts.delta(before)
        scans = {}
        for label, read in (("plan", False), ("plan + read", True)):
            before = counts.by_client()
            fresh = Table(S3Catalog(store, f"s3://{BUCKET}/icefloe-catalog"), "db.t", store)
            ours_rows = fresh.scan().num_rows if read else len(list(fresh.plan_files()))
            peer_scan = peer_catalog.load_table("db.t").scan()
            theirs_rows = peer_scan.to_arrow().num_rows if read else len(list(peer_scan.plan_files()))
            scans[label] = counts.delta(before)
            assert ours_rows == theirs_rows, (label, ours_rows, theirs_rows)
        assert len(ours.refresh().metadata.snapshots) == max(sizes) + 1
        assert len(peer_catalog.load_table("db.t").metadata.snapshots) == max(sizes) + 1
    return {"appends": appends, "fresh": fresh_append, "scans": scans}


def row(label: str, counts: Counter) -> str:
    cells = " | ".join(str(counts.get(k, 0)) for k in KINDS)
    return f"| {label} | {cells} | {sum(counts.values())} |"


def ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}x" if b else "-"


def run(quick: bool) -> str:
    sizes = SIZES_QUICK if quick else SIZES
    data = measure(sizes)
    appends, scans, fresh = data["appends"], data["scans"], data["fresh"]
    final = max(sizes) + 1
    head = f"| who, table size | {' | '.join(KINDS)} | total |\n|---|{'---|' * (len(KINDS) + 1)}"
    append_rows = [row(f"{who}, append making {n} snapshot(s)", appends[n][who])
                   for n in sizes for who in (OURS, THEIRS)]
    append_rows += [row(f"{who}, append making {final}, from a newly opened handle", fresh[who])
                    for who in (OURS, THEIRS)]
    scan_rows = [row(f"{who}, {label} ({final} snapshots, {final} data files)", scans[label][who])
                 for label in scans for who in (OURS, THEIRS)]
    totals = {n: {who: sum(appends[n][who].values()) for who in (OURS, THEIRS)} for n in sizes}
    ours_totals = [totals[n][OURS] for n in sizes]
    grows = "no" if len(set(ours_totals)) == 1 else f"yes ({' -> '.join(map(str, ours_totals))})"
    peer_totals = [totals[n][THEIRS] for n in sizes]
    lists_ours = sum(appends[n][OURS]["LIST"] for n in sizes) + sum(scans[s][OURS]["LIST"] for s in scans)
    worst = max(ours_totals)
    meets = "meets it" if worst <= FLOOR_POINTER else f"exceeds it by {worst - FLOOR_POINTER}"
    ratio_rows = "\n".join(f"| append making {n} snapshot(s) | {totals[n][OURS]} | {totals[n][THEIRS]} | "
                           f"{ratio(totals[n][OURS], totals[n][THEIRS])} |" for n in sizes)
    fresh_ours, fresh_theirs = sum(fresh[OURS].values()), sum(fresh[THEIRS].values())
    ratio_rows += (f"\n| append from a newly opened handle | {fresh_ours} | {fresh_theirs} | "
                   f"{ratio(fresh_ours, fresh_theirs)} |")
    lists_ours += fresh[OURS]["LIST"]
    scan_ratio_rows = "\n".join(
        f"| {label} | {sum(scans[label][OURS].values())} | {sum(scans[label][THEIRS].values())} | "
        f"{ratio(sum(scans[label][OURS].values()), sum(scans[label][THEIRS].values()))} |" for label in scans)
    return f"""One atomic moto server (`MotoS3Server`, 127.0.0.1) serves both writers; every request is
counted by the server itself (the atomic middleware's counters), by the SigV4 access key
id that tells the two clients apart. icefloe: `S3Store` + `S3Catalog` (the pointer object,
swapped with `If-Match`). {PEER}: `SqlCatalog` on SQLite (its swap is a SQL `UPDATE`, not an
S3 request) with its pyarrow S3 FileIO on the same server. Each side appends 10 rows
(one data file) per commit to its own unpartitioned table, alternating, on a table handle
it keeps; the appends shown are the ones that make the table {sizes[0]}, {sizes[1]} and {sizes[2]}
snapshots long, then one more append from a handle opened just for it (icefloe: a new
`S3Catalog` and `Table`; pyiceberg: `load_table`). "multipart" is CreateMultipartUpload +
UploadPart + CompleteMultipartUpload.

**Per append** (requests seen by the server):

{head}
{chr(10).join(append_rows)}

| append | icefloe | pyiceberg | icefloe / pyiceberg |
|---|---|---|---|
{ratio_rows}

**Per scan** by a fresh handle on the final table (icefloe: a new `S3Catalog` and `Table`;
pyiceberg: `load_table` then `scan()`; its catalog load is SQL, not counted as S3):

{head}
{chr(10).join(scan_rows)}

| scan | icefloe | pyiceberg | icefloe / pyiceberg |
|---|---|---|---|
{scan_ratio_rows}

**The design's floor.** With a pointer object swapped by `If-Match` an append needs at most
{FLOOR_POINTER} requests: one PUT each for the data file, the manifest, the manifest list and the
metadata JSON, the conditional PUT of the pointer, and two reads (the pointer and the
metadata JSON it names). icefloe's most expensive append on a kept handle is {worst}
request(s): it {meets}. A kept handle whose metadata the pointer still names skips the
metadata read, and the manifest list it carries forward is the one it wrote (cached from its
own bytes), so its append is 1 GET (the pointer), 4 PUTs and the swap. A newly opened handle
pays {fresh_ours}: opening reads the pointer and the metadata, the commit reads the pointer again
(every attempt starts from the pointer as it is then, spec 5) and the base's manifest list (a
fast append carries its manifests forward), then the same 4 PUTs and the swap. The floor's
"two reads" assume a writer that already knows the base's manifests; a cold writer needs 8,
and the second pointer read is the one request above that. Does icefloe's count grow with
the table? {grows}. pyiceberg's: {' -> '.join(map(str, peer_totals))}. LIST requests from icefloe
on the append and scan paths: {lists_ours}. (pyiceberg LISTs once per append: pyarrow follows a
HEAD that finds no object with a LIST, to see whether the key is a directory.)
"""


if __name__ == "__main__":
    print(run(quick=True))
