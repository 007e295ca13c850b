"""Table commits on S3Store + S3Catalog with the pointer swap faulted at the HTTP level by the
FaultProxy (spec/PROTOCOL.md 3.5, 9.3, 9.6; REGRESSIONS 1-3): a lost acknowledgement is never
reported as a failure, an undecidable swap is Unknown and cleans nothing up, and the table
stays correct (every row once, linear history, every referenced file present).

The table's files go straight to moto; only the catalog's requests pass the proxy, so the
rules below touch nothing but the pointer."""
from __future__ import annotations

import threading
from collections import Counter

import pyarrow as pa

from icefloe.impl.catalog.s3 import S3Catalog
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.outcomes import Committed, Conflict, Unknown
from icefloe.conformance.testing.proxy import LoseResponse, Match, Rule
from icefloe.impl.table.commit import resolve_unknown
from icefloe.impl.table.table import Table, create_table

from conftest import BUCKET

ARROW_SCHEMA = pa.schema([pa.field("id", pa.int64())])
WAIT_S_MAX = 30.0
TIMEOUT_S = 2  # the writer's read timeout: how long a held swap keeps its client waiting
POINTER_PUT = dict(operation="ConditionalPutObject", key="*pointer.json")


def rows(ids) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())}, schema=ARROW_SCHEMA)


def setup_table(moto_s3, store_for, prefix, catalog_store, **properties) -> tuple[Table, S3Catalog, object]:
    """A table whose catalog uses `catalog_store`; its files and a reader's catalog go direct."""
    files = store_for(moto_s3.endpoint_url, client="files")
    warehouse = f"s3://{BUCKET}/{prefix}/catalog"
    props = {"commit.retry.min-wait-ms": "0", "commit.retry.max-wait-ms": "0", **properties}
    create_table(S3Catalog(files, warehouse), "db.t", schema_from_arrow(ARROW_SCHEMA),
                 location=f"s3://{BUCKET}/{prefix}/t", properties=props, io=files)
    writer = Table(S3Catalog(catalog_store, warehouse), "db.t", files)
    reader_catalog = S3Catalog(store_for(moto_s3.endpoint_url, client="reader"), warehouse)
    return writer, reader_catalog, files


def assert_correct(reader_catalog: S3Catalog, files, expected_ids: list[int]) -> Table:
    """Every row once, a linear history, and every file the current snapshot reaches present."""
    table = Table(reader_catalog, "db.t", files)
    assert sorted(table.scan().column("id").to_pylist()) == sorted(expected_ids)
    history = table.history()
    assert history[0].parent_snapshot_id is None
    assert all(b.parent_snapshot_id == a.snapshot_id for a, b in zip(history, history[1:]))
    for location in table.tree.reach(table.current_snapshot()):
        files.stat(location)  # raises NotFound if a referenced file was cleaned up
    return table


def held_put_status(proxy, client: str) -> int:
    """The upstream status of `client`'s gated pointer PUT, once it has reached the server."""
    pause = threading.Event()
    for _ in range(int(WAIT_S_MAX / 0.01)):
        puts = [e for e in proxy.history(["ConditionalPutObject"]) if e.client == client and e.fault == "gate"]
        if puts and puts[0].upstream_status is not None:
            return puts[0].upstream_status
        pause.wait(0.01)
    raise AssertionError(f"{client}'s held PUT never reached the server")


def test_lost_acknowledgement_of_the_pointer_swap_commits_once(moto_s3, proxy, store_for, prefix):
    """Goal: a swap whose answer is lost after S3 applied it ends Committed on the first attempt,
    not Conflict, and nothing it wrote is deleted (REGRESSIONS 1, apache/iceberg #7151). Method:
    the proxy forwards the writer's pointer PUT and resets the connection; the store's own
    retry is refused (412) and its read-back finds our pointer."""
    writer, reader_catalog, files = setup_table(moto_s3, store_for, prefix,
                                                store_for(proxy.endpoint_url, client="w"))
    assert isinstance(writer.append(rows([1])), Committed)
    rule = proxy.add_rule(Rule(LoseResponse("reset"), Match(client="w", **POINTER_PUT), nth=1))
    outcome = writer.append(rows([2]))
    assert rule.fired == 1
    assert isinstance(outcome, Committed) and outcome.attempts == 1, outcome
    table = assert_correct(reader_catalog, files, [1, 2])
    assert table.metadata_location == outcome.metadata_location


def hold_swap_until_unknown(moto_s3, proxy, store_for, prefix):
    """A table with row 1, and writer "w" appending row 2 with its pointer PUT held at a gate
    until its client gives up (its read timeout, one attempt, no commit retries): returns
    (writer, reader_catalog, files, gate still holding the PUT, the append's Unknown)."""
    catalog_store = store_for(proxy.endpoint_url, client="w", attempts_max=1, read_timeout_s=TIMEOUT_S)
    writer, reader_catalog, files = setup_table(moto_s3, store_for, prefix, catalog_store,
                                                **{"commit.retry.num-retries": "0"})
    # The first row through a client without the short timeout: only the gated swap may time out.
    assert isinstance(Table(reader_catalog, "db.t", files).append(rows([1])), Committed)
    gate = proxy.add_gate(Match(client="w", **POINTER_PUT))
    results: list = []
    thread = threading.Thread(target=lambda: results.append(writer.append(rows([2]))))
    thread.start()
    assert gate.wait_arrived(WAIT_S_MAX)
    thread.join(WAIT_S_MAX)
    assert not thread.is_alive()
    [outcome] = results
    assert isinstance(outcome, Unknown), outcome
    return writer, reader_catalog, files, gate, outcome


def test_swap_held_past_the_timeout_is_unknown_cleans_nothing_and_lands_once(
        moto_s3, proxy, store_for, prefix):
    """Goal: a swap that may still land is Unknown, never Conflict, and deletes nothing; when it
    lands later the table holds the row once (REGRESSIONS 2-3, spec 3.5). Method: hold the
    writer's pointer PUT at a gate until its client gives up (its read timeout, one attempt,
    no commit retries): the read-back still shows the base. Then release the PUT, resolve the
    Unknown from a fresh pointer read (9.6), and let a second writer append on top."""
    writer, reader_catalog, files, gate, outcome = hold_swap_until_unknown(moto_s3, proxy, store_for, prefix)
    [attempt] = outcome.attempted_locations
    files.stat(attempt)  # nothing cleaned up while the outcome is unknown
    assert_correct(reader_catalog, files, [1])
    gate.release()
    assert held_put_status(proxy, "w") == 200  # the Unknown was honest: it landed after all
    resolved = resolve_unknown(reader_catalog, writer.identifier, files, outcome)
    assert resolved == Committed(outcome.snapshot_id, outcome.attempts, attempt)
    other = Table(reader_catalog, "db.t", files)
    assert isinstance(other.append(rows([3])), Committed)
    assert_correct(reader_catalog, files, [1, 2, 3])


def test_swap_overtaken_while_held_is_unknown_then_resolves_to_conflict(moto_s3, proxy, store_for, prefix):
    """Goal: the other side of the same fault: a held swap overtaken by another writer's commit
    can never land (If-Match on an etag that never returns, spec 3.4 a); resolving it later says
    Conflict and the rival's rows are intact. Method: as above, but a rival commits while the
    writer's PUT is held; then release it (S3 refuses it with 412) and resolve."""
    writer, reader_catalog, files, gate, outcome = hold_swap_until_unknown(moto_s3, proxy, store_for, prefix)
    rival = Table(reader_catalog, "db.t", files)
    assert isinstance(rival.append(rows([3])), Committed)
    gate.release()
    assert held_put_status(proxy, "w") == 412
    assert isinstance(resolve_unknown(reader_catalog, writer.identifier, files, outcome), Conflict)
    assert_correct(reader_catalog, files, [1, 3])


def test_append_requests_do_not_grow_and_never_list(moto_s3, store_for, prefix):
    """Goal: the request economy of spec 4.2.5 and docs/benchmarks.md, kept as a regression
    check: an append on a kept handle is 1 GET (the pointer) and 5 conditional PUTs (data file,
    manifest, manifest list, metadata JSON, the If-Match swap) at any table size, and no request
    of an append or a read is a LIST. Method: count every request the server sees from the
    writer (the atomic middleware's counters) at the 1st, 2nd and 20th append."""
    client = "economy"  # the server counts by access key id; counts are compared as deltas
    store = store_for(moto_s3.endpoint_url, client=client)
    warehouse = f"s3://{BUCKET}/{prefix}/catalog"
    create_table(S3Catalog(store, warehouse), "db.t", schema_from_arrow(ARROW_SCHEMA),
                 location=f"s3://{BUCKET}/{prefix}/t", io=store)
    table = Table(S3Catalog(store, warehouse), "db.t", store)

    def seen() -> Counter:
        return Counter({op: n for (_, op, c), n in moto_s3.middleware.counts().items() if c == client})

    per_append = {}
    for i in range(1, 21):
        before = seen()
        assert isinstance(table.append(rows([i])), Committed)
        per_append[i] = seen() - before
    wanted = Counter({"GetObject": 1, "ConditionalPutObject": 5})
    assert per_append[1] == per_append[2] == per_append[20] == wanted, per_append
    before = seen()
    assert sorted(Table(S3Catalog(store, warehouse), "db.t", store).scan().column("id").to_pylist()) == list(range(1, 21))
    read = seen() - before
    assert set(read) == {"GetObject"}, read  # pointer, metadata, list, manifests, data files
    assert not any(op.startswith("List") for op in seen()), seen()
