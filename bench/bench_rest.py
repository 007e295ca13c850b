"""Commits through `icefloe serve` vs icefloe's direct SQLite catalog (issue 13 item 6).

Both sides make the same metadata commit (set one table property) on their own table of
one SQLite catalog file in one local warehouse, in the same run: the direct side through
icefloe's Table (refresh, write the metadata JSON, swap the pointer in SQLite); the REST
side as a client's POST of a CommitTableRequest (assert-table-uuid, set-properties) to
`icefloe serve` on 127.0.0.1 (uvicorn in this process's thread; the server reads the base,
checks, writes the metadata JSON and swaps). Latency: one writer, commits one after another,
alternating sides. Throughput: four writer threads at once on each side's table (the direct
side retries with its commit.retry.* backoff, at least 100 ms; the server retries a lost
race at once, and a client's set-properties asserting only the table's uuid never conflicts).
"""
from __future__ import annotations

import statistics
import tempfile
import threading
import time

TITLE = "REST catalog: commits through icefloe serve vs the direct SQLite catalog"
COMMITS, WRITERS, COMMITS_PER_WRITER = 200, 4, 50


def _setup(root: str):
    import pyarrow as pa

    from icefloe.conformance.testing.rest_client import RestClient
    from icefloe.conformance.testing.rest_server import RestServer
    from icefloe.impl.catalog.sql import SqlCatalog
    from icefloe.impl.format.types import schema_from_arrow
    from icefloe.impl.io.router import StoreRouter
    from icefloe.impl.table.table import Table, create_table
    uri, warehouse = f"sqlite:///{root}/catalog.db", f"{root}/warehouse"
    schema = schema_from_arrow(pa.schema([pa.field("id", pa.int64())]))
    catalog = SqlCatalog(uri)
    create_table(catalog, "direct.t", schema, location=f"file://{warehouse}/direct/t", io=StoreRouter())
    server = RestServer(uri, warehouse).start()
    client = RestClient(server.url)
    client.create_namespace("rest")
    client.create_table("rest", "t", {"type": "struct", "schema-id": 0,
                                      "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]})
    uuid = client.load("rest", "t").body["metadata"]["table-uuid"]
    return server, uri, uuid, lambda: Table(SqlCatalog(uri), "direct.t", StoreRouter())


def _direct_commit(table, i):
    from icefloe.impl.outcomes import Committed
    out = table.set_properties({"k": str(i)})
    assert isinstance(out, Committed), out


def _rest_commit(client, uuid, i):
    answer = client.commit("rest", "t", [{"type": "assert-table-uuid", "uuid": uuid}],
                           [{"action": "set-properties", "updates": {"k": str(i)}}])
    assert answer.status == 200, answer


def _latency(commits, server, uuid, open_direct):
    from icefloe.conformance.testing.rest_client import RestClient
    direct, client = open_direct(), RestClient(server.url)
    times = {"direct": [], "rest": []}
    for i in range(commits):
        for side, fn in (("direct", lambda: _direct_commit(direct, i)), ("rest", lambda: _rest_commit(client, uuid, i))):
            t = time.perf_counter()
            fn()
            times[side].append(time.perf_counter() - t)
    return times


def _throughput(per_writer, server, uuid, open_direct):
    from icefloe.conformance.testing.rest_client import RestClient
    out = {}
    for side in ("direct", "rest"):
        def work(w):
            if side == "direct":
                table = open_direct()
                for i in range(per_writer):
                    _direct_commit(table, w * 10_000 + i)
            else:
                client = RestClient(server.url)
                for i in range(per_writer):
                    _rest_commit(client, uuid, w * 10_000 + i)
        threads = [threading.Thread(target=work, args=(w,)) for w in range(WRITERS)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        out[side] = WRITERS * per_writer / (time.perf_counter() - t)
    return out


def run(quick: bool) -> str:
    commits = 40 if quick else COMMITS
    per_writer = 10 if quick else COMMITS_PER_WRITER
    with tempfile.TemporaryDirectory() as root:
        server, _uri, uuid, open_direct = _setup(root)
        try:
            lat = _latency(commits, server, uuid, open_direct)
            thr = _throughput(per_writer, server, uuid, open_direct)
        finally:
            server.stop()

    def ms(xs, q):
        return statistics.quantiles(xs, n=20)[q] * 1000 if q != "median" else statistics.median(xs) * 1000
    rows = []
    for label, q in (("median", "median"), ("p95", 18)):
        d, r = ms(lat["direct"], q), ms(lat["rest"], q)
        rows.append(f"| {label} latency, ms | {d:.2f} | {r:.2f} | {r / d:.2f}x |")
    rows.append(f"| throughput, {WRITERS} writers, commits/s | {thr['direct']:.0f} | {thr['rest']:.0f} | "
                f"{thr['rest'] / thr['direct']:.2f}x |")
    return f"""{__doc__.split(chr(10), 2)[2].strip()}

{commits} commits per side for latency, {WRITERS} x {per_writer} for throughput.

| figure | direct SQLite | through icefloe serve | REST / direct |
|---|---|---|---|
{chr(10).join(rows)}

The REST side pays for HTTP on loopback, JSON both ways and the server reading the base
metadata per commit (the direct side's handle reuses the metadata it committed last); the
client and the server share this process's interpreter (one GIL), so its throughput is a
floor for a server in its own process.
"""
