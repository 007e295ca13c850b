"""S3Catalog on the moto server and through the fault proxy: the swap contract (spec 3.2),
the outcome of every fault (4.2.4, impl/catalog/s3.py), and the request counts (4.2.5).

The catalog contract itself (create, load, list, drop, racing swaps) runs against
S3Catalog as a parameter of tests/impl/catalog/test_catalog_contract.py.
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter

import pytest

from icefloe.impl.catalog.base import TableIdentifier
from icefloe.impl.catalog.s3 import S3Catalog
from icefloe.impl.outcomes import SwapRejected, Swapped, SwapUnknown
from icefloe.conformance.testing.proxy import LoseResponse, Match, Reject, Reset, Rule

from conftest import BUCKET

T = TableIdentifier(("db",), "events")
RACERS = 8
WAIT_S_MAX = 30.0  # bound on waiting for the proxy to report a request (never asserted on)
LIST_OPERATIONS = {"ListObjectsV2", "ListObjects"}


def warehouse_of(prefix: str) -> str:
    return f"s3://{BUCKET}/{prefix}"


def write_metadata(catalog: S3Catalog, version: int, writer: str = "w") -> str:
    """A metadata JSON at a fresh location (spec 1.4), as a writer would put it."""
    location = (f"{catalog.table_location(T)}/metadata/"
                f"{version:05d}-{writer}-{uuid.uuid4()}.metadata.json")
    catalog.store.put_if_absent(location, json.dumps({"format-version": 2, "by": writer}).encode())
    return location


def server_counts(moto_s3, client: str) -> Counter:
    """Requests the server saw from `client`, by operation."""
    return Counter({op: n for (_, op, c), n in moto_s3.middleware.counts().items() if c == client})


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S_MAX
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def swap_puts(proxy) -> list:
    """A's If-Match PUTs of the pointer, as the proxy recorded them."""
    return [e for e in proxy.history(["ConditionalPutObject"])
            if e.client == "a" and e.if_match is not None and e.key.endswith("pointer.json")]


def pointer_json(catalog: S3Catalog) -> dict:
    return json.loads(catalog.store.get(catalog.pointer_location(T)))


def test_create_load_swap_and_pointer_content(moto_s3, store_for, prefix):
    """Goal: the pointer object holds the current and previous metadata location. Method: create,
    swap twice, read the pointer JSON and load from a second catalog object."""
    catalog = S3Catalog(store_for(moto_s3.endpoint_url), warehouse_of(prefix))
    v0, v1, v2 = (write_metadata(catalog, n) for n in range(3))
    catalog.create(T, v0)
    assert catalog.swap(T, v0, v1) == Swapped(v1)
    assert catalog.swap(T, v1, v2) == Swapped(v2)
    content = pointer_json(catalog)
    assert content["metadata-location"] == v2 and content["previous-metadata-location"] == v1
    assert content["format"] == 1 and content["entry-uuid"]
    other = S3Catalog(store_for(moto_s3.endpoint_url), warehouse_of(prefix))
    assert other.load(T) == v2
    stale = other.swap(T, v1, write_metadata(catalog, 3))
    assert isinstance(stale, SwapRejected) and stale.actual_location == v2


@pytest.mark.parametrize("round_", range(2))
def test_racing_swaps_from_one_base_have_one_winner(moto_s3, store_for, prefix, round_):
    """Goal: at most one of 8 racing swaps from one base wins (3.2). Method: 8 catalog objects,
    each with its own client, load the base, then swap at once behind a barrier."""
    setup = S3Catalog(store_for(moto_s3.endpoint_url), warehouse_of(prefix))
    base = write_metadata(setup, 1)
    setup.create(T, base)
    racers = [S3Catalog(store_for(moto_s3.endpoint_url, client=f"racer-{i}"), warehouse_of(prefix))
              for i in range(RACERS)]
    news = [write_metadata(setup, 2, f"racer-{i}") for i in range(RACERS)]
    for racer in racers:
        assert racer.load(T) == base
    barrier = threading.Barrier(RACERS)
    results: list = [None] * RACERS

    def run(i):
        barrier.wait()
        results[i] = racers[i].swap(T, base, news[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(RACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, r in enumerate(results) if isinstance(r, Swapped)]
    assert len(winners) == 1, results
    winner = news[winners[0]]
    assert all(isinstance(r, SwapRejected) and r.actual_location == winner
               for i, r in enumerate(results) if i != winners[0]), results
    assert setup.load(T) == winner and pointer_json(setup)["previous-metadata-location"] == base


def test_request_counts_load_two_gets_swap_one_put_never_a_list(moto_s3, store_for, prefix):
    """Goal: reads are O(1) and a swap is one conditional PUT, with no LIST anywhere (4.2.5, 2.4).
    Method: count the requests the server saw from this client, per load and per swap."""
    client = f"count-{uuid.uuid4().hex[:8]}"
    catalog = S3Catalog(store_for(moto_s3.endpoint_url, client=client), warehouse_of(prefix))
    locations = [write_metadata(catalog, n) for n in range(6)]
    catalog.create(T, locations[0])
    for n in range(1, 6):
        before = server_counts(moto_s3, client)
        expected = catalog.load(T)
        catalog.store.get(expected)  # a reader's second GET: the metadata JSON
        after_load = server_counts(moto_s3, client)
        assert after_load - before == Counter({"GetObject": 2}), after_load - before
        assert catalog.swap(T, expected, locations[n]) == Swapped(locations[n])
        assert server_counts(moto_s3, client) - after_load == Counter({"ConditionalPutObject": 1})
    # A catalog object that never saw the expected location reads the pointer first.
    fresh = S3Catalog(store_for(moto_s3.endpoint_url, client=client), warehouse_of(prefix))
    v6 = write_metadata(catalog, 6)
    before = server_counts(moto_s3, client)
    assert fresh.swap(T, locations[5], v6) == Swapped(v6)
    delta = server_counts(moto_s3, client) - before
    assert delta == Counter({"ConditionalPutObject": 1, "GetObject": 1}), delta
    assert not LIST_OPERATIONS & set(server_counts(moto_s3, client))


@pytest.mark.parametrize("attempts_max, puts", [(1, 1), (4, 2)])
def test_lost_response_after_the_swap_landed_is_swapped(moto_s3, proxy, store_for, prefix, attempts_max, puts):
    """Goal: a swap whose answer is lost after upstream applied it ends Swapped, not Rejected
    (REGRESSIONS 1, apache/iceberg #7151). Method: the proxy forwards the PUT and resets the
    connection; with one attempt, one PUT and one GET (the read-back) reach the server; with
    the store's default four, the re-sent PUT is refused (412) before the read-back."""
    client = f"lost-{uuid.uuid4().hex[:8]}"
    catalog = S3Catalog(store_for(proxy.endpoint_url, client=client, attempts_max=attempts_max),
                        warehouse_of(prefix))
    v0, v1 = write_metadata(catalog, 0), write_metadata(catalog, 1)
    catalog.create(T, v0)
    assert catalog.load(T) == v0
    rule = proxy.add_rule(Rule(LoseResponse("reset"), Match(operation="ConditionalPutObject",
                                                            key="*pointer.json", client=client), nth=1))
    before = server_counts(moto_s3, client)
    assert catalog.swap(T, v0, v1) == Swapped(v1)
    assert rule.fired == 1
    assert server_counts(moto_s3, client) - before == Counter({"ConditionalPutObject": puts, "GetObject": 1})
    assert catalog.load(T) == v1


@pytest.mark.parametrize("attempts_max, puts", [(1, 1), (4, 2)])
def test_lost_response_and_failed_read_back_then_own_pointer_is_swapped(moto_s3, proxy, store_for, prefix,
                                                                         attempts_max, puts):
    """Goal: after a lost answer whose read-back failed too, a catalog that then reads its own
    pointer (`new`, previous `expected`) reports Swapped: "built on my base" also describes our
    own landed swap, so "is it mine?" must be asked first (apache/iceberg #3717 class). Method:
    the proxy applies A's PUT and resets its answer, resets A's first read of the pointer after
    it (the store's read-back: StoreOutcomeUnknown), and lets the catalog's reconcile read through."""
    client = f"flicker-{uuid.uuid4().hex[:8]}"
    catalog = S3Catalog(store_for(proxy.endpoint_url, client=client, attempts_max=attempts_max),
                        warehouse_of(prefix))
    v0, v1 = write_metadata(catalog, 0), write_metadata(catalog, 1)
    catalog.create(T, v0)
    assert catalog.load(T) == v0
    lost = proxy.add_rule(Rule(LoseResponse("reset"), Match(operation="ConditionalPutObject",
                                                            key="*pointer.json", client=client), nth=1))
    read_back = proxy.add_rule(Rule(Reset(), Match(operation="GetObject", key="*pointer.json", client=client),
                                    nth=1))
    before = server_counts(moto_s3, client)
    assert catalog.swap(T, v0, v1) == Swapped(v1)
    assert lost.fired == 1 and read_back.fired == 1
    # the reset read never reached the server: one GET there is the catalog's own
    assert server_counts(moto_s3, client) - before == Counter({"ConditionalPutObject": puts, "GetObject": 1})
    assert pointer_json(catalog)["previous-metadata-location"] == v0
    assert catalog.load(T) == v1


@pytest.mark.parametrize("swaps_on_top", [1, 2])
def test_lost_response_then_swaps_built_on_it(moto_s3, proxy, store_for, prefix, swaps_on_top):
    """Goal: a landed swap is never reported rejected because others built on it, where a
    pointer status check would say "failed" (REGRESSIONS 2, apache/iceberg #3717): one swap on
    top is recognised as ours landed (Swapped), two are beyond one read (SwapUnknown). Method:
    hold A's answer at the proxy after upstream applied it, let B swap on top, then lose it."""
    catalog_a = S3Catalog(store_for(proxy.endpoint_url, client="a", attempts_max=1), warehouse_of(prefix))
    catalog_b = S3Catalog(store_for(moto_s3.endpoint_url, client="b"), warehouse_of(prefix))
    v0, v1a = write_metadata(catalog_a, 0), write_metadata(catalog_a, 1, "a")
    on_top = [write_metadata(catalog_b, 2 + n, "b") for n in range(swaps_on_top)]
    catalog_a.create(T, v0)
    match = Match(operation="ConditionalPutObject", key="*pointer.json", client="a")
    gate = proxy.add_gate(match, stage="response")
    proxy.add_rule(Rule(LoseResponse("reset"), match, nth=1))
    results: list = []
    writer = threading.Thread(target=lambda: results.append(catalog_a.swap(T, v0, v1a)))
    writer.start()
    assert gate.wait_arrived(WAIT_S_MAX)  # upstream applied A's swap
    assert catalog_b.load(T) == v1a
    for expected, new in zip([v1a] + on_top, on_top):
        assert catalog_b.swap(T, expected, new) == Swapped(new)
    gate.release()
    writer.join()
    [result] = results
    if swaps_on_top == 1:
        assert result == Swapped(v1a)
    else:
        assert isinstance(result, SwapUnknown) and "may have landed" in result.reason, result
    assert catalog_a.load(T) == on_top[-1]


def test_gated_swap_rejected_after_another_writer_commits(moto_s3, proxy, store_for, prefix):
    """Goal: a request delayed past another writer's commit is refused by S3 (412) and reported
    SwapRejected with the actual location. Method: gate A's PUT at the proxy, B commits from the
    same base, release A."""
    catalog_a = S3Catalog(store_for(proxy.endpoint_url, client="a"), warehouse_of(prefix))
    catalog_b = S3Catalog(store_for(moto_s3.endpoint_url, client="b"), warehouse_of(prefix))
    v0, v1a, v1b = write_metadata(catalog_a, 0), write_metadata(catalog_a, 1, "a"), write_metadata(catalog_b, 1, "b")
    catalog_a.create(T, v0)
    assert catalog_b.load(T) == v0
    gate = proxy.add_gate(Match(operation="ConditionalPutObject", key="*pointer.json", client="a"))
    results: list = []
    writer = threading.Thread(target=lambda: results.append(catalog_a.swap(T, v0, v1a)))
    writer.start()
    assert gate.wait_arrived(WAIT_S_MAX)
    assert catalog_b.swap(T, v0, v1b) == Swapped(v1b)
    before = server_counts(moto_s3, "a")
    gate.release()
    writer.join()
    [result] = results
    assert isinstance(result, SwapRejected) and result.actual_location == v1b, result
    assert server_counts(moto_s3, "a") - before == Counter({"ConditionalPutObject": 1, "GetObject": 1})
    [put] = swap_puts(proxy)
    assert put.upstream_status == 412 and put.returned == 412
    assert catalog_a.load(T) == v1b


def _gated_timeout_setup(moto_s3, proxy, store_for, prefix):
    catalog_a = S3Catalog(store_for(proxy.endpoint_url, client="a", attempts_max=1, read_timeout_s=1),
                          warehouse_of(prefix))
    catalog_b = S3Catalog(store_for(moto_s3.endpoint_url, client="b"), warehouse_of(prefix))
    v0 = write_metadata(catalog_a, 0)
    catalog_a.create(T, v0)
    assert catalog_a.load(T) == v0 and catalog_b.load(T) == v0
    put_gate = proxy.add_gate(Match(operation="ConditionalPutObject", key="*pointer.json", client="a"))
    # A's first read of the pointer after its PUT timed out (the store's read-back) is held too,
    # so the test, not the scheduler, decides what that read sees.
    read_gate = proxy.add_gate(Match(operation="GetObject", key="*pointer.json", client="a"))
    return catalog_a, catalog_b, v0, put_gate, read_gate


def _late_put(proxy) -> object:
    exchanges: list = []

    def landed():
        exchanges[:] = swap_puts(proxy)
        return exchanges and exchanges[0].upstream_status is not None

    wait_for(landed, "the held PUT to reach the server")
    return exchanges[0]


def test_timed_out_swap_with_pointer_unmoved_is_unknown_and_may_land_later(moto_s3, proxy, store_for, prefix):
    """Goal: a swap that timed out while the pointer still names its base is SwapUnknown, and
    rightly so: the request lands afterwards (spec 3.5). Method: gate A's PUT until A's client
    gives up (1 s read timeout), then release it."""
    catalog_a, _, v0, put_gate, read_gate = _gated_timeout_setup(moto_s3, proxy, store_for, prefix)
    v1a = write_metadata(catalog_a, 1, "a")
    results: list = []
    writer = threading.Thread(target=lambda: results.append(catalog_a.swap(T, v0, v1a)))
    writer.start()
    assert put_gate.wait_arrived(WAIT_S_MAX) and read_gate.wait_arrived(WAIT_S_MAX)
    read_gate.release()
    writer.join()
    [result] = results
    assert isinstance(result, SwapUnknown) and "may land later" in result.reason, result
    assert catalog_a.load(T) == v0
    put_gate.release()
    assert _late_put(proxy).upstream_status == 200
    assert catalog_a.load(T) == v1a  # the Unknown was honest: it landed after the client gave up


def test_timed_out_swap_overtaken_by_another_writer_is_rejected_and_refused_late(
        moto_s3, proxy, store_for, prefix):
    """Goal: once another swap from the same base has landed, a timed-out swap is SwapRejected,
    and its late request is refused by S3 (412): If-Match on the old etag can never match again
    (3.4 a). Method: gate A's PUT, let A time out, B commits while A's read-back is held,
    then release A's PUT."""
    catalog_a, catalog_b, v0, put_gate, read_gate = _gated_timeout_setup(moto_s3, proxy, store_for, prefix)
    v1a, v1b = write_metadata(catalog_a, 1, "a"), write_metadata(catalog_b, 1, "b")
    results: list = []
    writer = threading.Thread(target=lambda: results.append(catalog_a.swap(T, v0, v1a)))
    writer.start()
    assert put_gate.wait_arrived(WAIT_S_MAX) and read_gate.wait_arrived(WAIT_S_MAX)
    assert catalog_b.swap(T, v0, v1b) == Swapped(v1b)
    read_gate.release()
    writer.join()
    [result] = results
    assert isinstance(result, SwapRejected) and result.actual_location == v1b, result
    put_gate.release()
    assert _late_put(proxy).upstream_status == 412
    assert catalog_a.load(T) == v1b


def test_stale_remembered_etag_after_recreate_costs_one_more_put(moto_s3, store_for, prefix):
    """Goal: a table dropped and created again at the same metadata location gets a new pointer
    etag (entry-uuid), so an old remembered etag cannot match; the swap still succeeds. Method:
    A loads, B drops and re-creates, A swaps."""
    catalog_a = S3Catalog(store_for(moto_s3.endpoint_url, client="a"), warehouse_of(prefix))
    catalog_b = S3Catalog(store_for(moto_s3.endpoint_url, client="b"), warehouse_of(prefix))
    v0, v1 = write_metadata(catalog_a, 0), write_metadata(catalog_a, 1)
    catalog_a.create(T, v0)
    assert catalog_a.load(T) == v0
    old_uuid = pointer_json(catalog_a)["entry-uuid"]
    catalog_b.drop(T)
    catalog_b.create(T, v0)
    assert pointer_json(catalog_a)["entry-uuid"] != old_uuid
    puts_before = catalog_a.store.counts["compare_and_swap"]
    assert catalog_a.swap(T, v0, v1) == Swapped(v1)
    assert catalog_a.store.counts["compare_and_swap"] - puts_before == 2
    assert catalog_b.load(T) == v1


# -- a stress campaign: writers with refresh, retry and resolve under seeded faults ---------

CAMPAIGN_WRITERS = 3
CAMPAIGN_COMMITS = 5
CAMPAIGN_ATTEMPTS_MAX = 40  # per commit; faults and contention never need this many
CHAIN_STEPS_MAX = 1000


def write_version(catalog: S3Catalog, previous: str, commit: str) -> str:
    """A metadata JSON naming the version it was built on (spec 1.7) and its commit."""
    location = f"{catalog.table_location(T)}/metadata/{commit}-{uuid.uuid4()}.metadata.json"
    catalog.store.put_if_absent(location, json.dumps({"previous": previous, "commit": commit}).encode())
    return location


def chain_of(catalog: S3Catalog) -> list[tuple[str, str | None]]:
    """(location, commit) from the current pointer back to the first version, newest first."""
    chain, location = [], catalog.load(T)
    for _ in range(CHAIN_STEPS_MAX):
        version = json.loads(catalog.store.get(location))
        chain.append((location, version["commit"]))
        if version["previous"] is None:
            return chain
        location = version["previous"]
    raise AssertionError(f"chain longer than {CHAIN_STEPS_MAX}")


def commit_with_retry(catalog: S3Catalog, commit: str) -> tuple[str, int]:
    """Refresh, write, swap; on Rejected retry; on Unknown look for every attempt of this commit
    in the chain first (spec 9.3), then retry. Returns how the commit ended and the unknowns."""
    attempted: set[str] = set()
    unknowns = 0
    for _ in range(CAMPAIGN_ATTEMPTS_MAX):
        base = catalog.load(T)
        new = write_version(catalog, base, commit)
        attempted.add(new)
        result = catalog.swap(T, base, new)
        if isinstance(result, Swapped):
            return "swapped", unknowns
        if isinstance(result, SwapUnknown):
            unknowns += 1
            if attempted & {location for location, _ in chain_of(catalog)}:
                return "resolved", unknowns
    raise AssertionError(f"{commit}: no attempt landed in {CAMPAIGN_ATTEMPTS_MAX}")


def test_writers_under_seeded_faults_build_one_chain_with_every_commit_once(moto_s3, proxy, store_for, prefix):
    """Goal: under lost answers, resets and 503s on the pointer, racing writers lose no commit and
    apply none twice (P1-P3). Method: 3 threads x 5 commits through the proxy with seeded faults on
    half of the pointer PUTs, each commit retried and resolved through the chain; then the
    chain from the pointer must hold every commit exactly once."""
    proxy.clear(seed=20261122)
    pointer_puts = Match(operation="ConditionalPutObject", key="*pointer.json")
    proxy.add_rule(Rule(LoseResponse("reset"), pointer_puts, probability=0.2))
    proxy.add_rule(Rule(Reset(), pointer_puts, probability=0.15))
    proxy.add_rule(Rule(Reject(503), pointer_puts, probability=0.15))
    setup = S3Catalog(store_for(moto_s3.endpoint_url), warehouse_of(prefix))
    setup.create(T, write_version(setup, None, "create"))
    endings: dict[str, str] = {}
    unknowns: list[int] = []
    errors: list[BaseException] = []

    def writer(i):
        # One attempt per request: every ambiguous answer reaches the catalog's reconcile.
        catalog = S3Catalog(store_for(proxy.endpoint_url, client=f"w{i}", attempts_max=1), warehouse_of(prefix))
        try:
            for k in range(CAMPAIGN_COMMITS):
                endings[f"w{i}-{k}"], n = commit_with_retry(catalog, f"w{i}-{k}")
                unknowns.append(n)
        except BaseException as e:  # noqa: BLE001 - re-raised in the test thread below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(CAMPAIGN_WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    commits = [commit for _, commit in chain_of(setup)]
    assert commits[-1] == "create"
    wanted = {f"w{i}-{k}" for i in range(CAMPAIGN_WRITERS) for k in range(CAMPAIGN_COMMITS)}
    assert sorted(commits[:-1]) == sorted(wanted), commits  # each commit once: none lost, none twice
    assert set(endings) == wanted
    for i in range(CAMPAIGN_WRITERS):  # each writer's commits in its own order
        own = [c for c in reversed(commits) if c.startswith(f"w{i}-")]
        assert own == [f"w{i}-{k}" for k in range(CAMPAIGN_COMMITS)]
    fired = [e for e in proxy.history(["ConditionalPutObject"]) if e.fault]
    assert fired, "the campaign injected no fault"
