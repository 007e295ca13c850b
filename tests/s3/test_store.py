"""S3Store over real HTTP against moto: every verb, every error mapping, races."""
from __future__ import annotations

import inspect
import threading
from collections import Counter

import pytest

from icefloe.impl.io.base import (
    AlreadyExists, NotFound, ObjectStore, PreconditionFailed, StoreUnavailable)
from icefloe.impl.s3.store import S3Store, split_location

BUCKET = "icefloe"
RACERS = 8


def loc(prefix: str, name: str) -> str:
    return f"s3://{BUCKET}/{prefix}/{name}"


def test_satisfies_object_store_protocol(store):
    """Goal: S3Store has every ObjectStore verb with the protocol's parameters. Method: compare
    signatures with the ObjectStore protocol."""
    for verb in ("get", "stat", "put_if_absent", "compare_and_swap", "delete", "list"):
        ours = list(inspect.signature(getattr(store, verb)).parameters)
        theirs = list(inspect.signature(getattr(ObjectStore, verb)).parameters)[1:]
        assert ours == theirs, verb
    assert isinstance(store.counts, Counter)


def test_split_location_rejects_other_schemes():
    """Goal: only s3 locations are accepted. Method: split good and bad locations."""
    assert split_location("s3://b/k/x") == ("b", "k/x")
    assert split_location("s3a://b/k") == ("b", "k")
    with pytest.raises(ValueError):
        split_location("file:///tmp/x")
    with pytest.raises(ValueError):
        split_location("s3:///k")


def test_put_if_absent_then_get_and_stat(store, prefix):
    """Goal: a created object reads back with the etag the write returned. Method: put, get, stat."""
    location = loc(prefix, "a")
    info = store.put_if_absent(location, b"first")
    assert info.location == location and info.size == 5 and info.etag
    assert store.get(location) == b"first"
    stat = store.stat(location)
    assert (stat.size, stat.etag) == (5, info.etag)
    assert stat.last_modified_ms > 0
    data, read_info = store.get_with_info(location)
    assert (data, read_info.etag, read_info.size) == (b"first", info.etag, 5)


def test_put_if_absent_on_existing_key_is_already_exists(store, prefix):
    """Goal: 412 on If-None-Match maps to AlreadyExists and changes nothing. Method: put twice."""
    location = loc(prefix, "a")
    store.put_if_absent(location, b"first")
    with pytest.raises(AlreadyExists):
        store.put_if_absent(location, b"second")
    assert store.get(location) == b"first"
    assert store.counts["put_if_absent"] == 2  # a definite 412 is not retried


def test_compare_and_swap_succeeds_on_current_etag(store, prefix):
    """Goal: If-Match with the current etag swaps the content. Method: put, swap, read."""
    location = loc(prefix, "a")
    first = store.put_if_absent(location, b"v1")
    second = store.compare_and_swap(location, b"v2", first.etag)
    assert second.etag != first.etag
    assert store.get(location) == b"v2"
    assert store.stat(location).etag == second.etag


def test_compare_and_swap_on_stale_etag_is_precondition_failed(store, prefix):
    """Goal: 412 on If-Match maps to PreconditionFailed. Method: swap twice from the same etag."""
    location = loc(prefix, "a")
    first = store.put_if_absent(location, b"v1")
    store.compare_and_swap(location, b"v2", first.etag)
    with pytest.raises(PreconditionFailed):
        store.compare_and_swap(location, b"v3", first.etag)
    assert store.get(location) == b"v2"


def test_compare_and_swap_on_missing_key_is_not_found(store, prefix):
    """Goal: 404 on If-Match maps to NotFound and creates nothing. Method: swap a missing key."""
    location = loc(prefix, "missing")
    with pytest.raises(NotFound):
        store.compare_and_swap(location, b"v", "0123456789abcdef0123456789abcdef")
    with pytest.raises(NotFound):
        store.stat(location)


def test_missing_objects_are_not_found(store, prefix):
    """Goal: get and stat of a missing key raise NotFound. Method: read a key never written."""
    with pytest.raises(NotFound):
        store.get(loc(prefix, "nothing"))
    with pytest.raises(NotFound):
        store.stat(loc(prefix, "nothing"))


def test_missing_bucket_is_no_such_bucket_never_not_found(store):
    """Goal: a missing bucket is its own typed error naming the bucket, for every verb, never
    NotFound (which would read as an absent object, or an absent table). Method: every verb
    against an unknown bucket."""
    from icefloe.impl.s3.store import NoSuchBucket
    where = "s3://no-such-bucket-here/x"
    for call in (lambda: store.get(where), lambda: store.stat(where), lambda: list(store.list(where)),
                 lambda: store.put_if_absent(where, b"v"), lambda: store.compare_and_swap(where, b"v", "e"),
                 lambda: store.delete(where)):
        with pytest.raises(NoSuchBucket, match="'no-such-bucket-here' does not exist") as caught:
            call()
        assert not isinstance(caught.value, NotFound)


def test_delete_removes_and_is_idempotent(store, prefix):
    """Goal: delete removes an object; deleting again succeeds (S3 semantics). Method: delete twice."""
    location = loc(prefix, "a")
    store.put_if_absent(location, b"v")
    store.delete(location)
    store.delete(location)
    with pytest.raises(NotFound):
        store.get(location)
    store.put_if_absent(location, b"again")  # the key is free once more
    assert store.get(location) == b"again"


def test_list_pages_through_a_prefix(store, prefix, monkeypatch):
    """Goal: list returns every object under a prefix across pages. Method: 7 objects, pages of 3."""
    monkeypatch.setattr("icefloe.impl.s3.store.LIST_PAGE_KEYS_MAX", 3)
    names = [f"d/{i:02d}" for i in range(7)]
    for name in names:
        store.put_if_absent(loc(prefix, name), name.encode())
    store.put_if_absent(loc(prefix, "elsewhere"), b"x")
    listed = list(store.list(loc(prefix, "d/")))
    assert [i.location for i in listed] == [loc(prefix, n) for n in names]
    assert all(i.size == 4 for i in listed)
    assert store.counts["list"] == 3


def test_counts_every_request_by_kind(store, prefix, moto_s3):
    """Goal: the store counts each HTTP request by kind, as the server does. Method: compare with
    the atomic middleware's server-side counts for this client."""
    counting = S3Store.from_config(moto_s3.endpoint_url, "counted", "s", "us-east-1")
    before = moto_s3.middleware.counts()
    location = loc(prefix, "a")
    first = counting.put_if_absent(location, b"v1")
    counting.compare_and_swap(location, b"v2", first.etag)
    counting.get(location)
    counting.stat(location)
    list(counting.list(loc(prefix, "")))
    counting.delete(location)
    assert dict(counting.counts) == {"put_if_absent": 1, "compare_and_swap": 1, "get": 1,
                                     "stat": 1, "list": 1, "delete": 1}
    after = moto_s3.middleware.counts()
    seen = {k: after[k] - before.get(k, 0) for k in after if k[2] == "counted"}
    assert seen == {("PUT", "ConditionalPutObject", "counted"): 2,
                    ("GET", "GetObject", "counted"): 1, ("HEAD", "HeadObject", "counted"): 1,
                    ("GET", "ListObjectsV2", "counted"): 1,
                    ("DELETE", "DeleteObject", "counted"): 1}


def test_client_name_header_names_the_client(moto_s3, prefix):
    """Goal: from_config(client_name=...) tags requests for server-side counting. Method: count."""
    tagged = S3Store.from_config(moto_s3.endpoint_url, "key-id", "s", "us-east-1",
                                 client_name="tagged-writer")
    tagged.put_if_absent(loc(prefix, "a"), b"v")
    assert moto_s3.middleware.counts()[("PUT", "ConditionalPutObject", "tagged-writer")] >= 1


def test_connection_refused_is_store_unavailable(refused_endpoint, store_for, prefix):
    """Goal: requests that never left the client are StoreUnavailable after bounded retries.
    Method: point the store at a port that refuses connections."""
    refused = store_for(refused_endpoint, attempts_max=3)
    with pytest.raises(StoreUnavailable):
        refused.put_if_absent(loc(prefix, "a"), b"v")
    with pytest.raises(StoreUnavailable):
        refused.compare_and_swap(loc(prefix, "a"), b"v", "etag")
    with pytest.raises(StoreUnavailable):
        refused.get(loc(prefix, "a"))
    with pytest.raises(StoreUnavailable):
        refused.delete(loc(prefix, "a"))
    assert refused.counts == {"put_if_absent": 3, "compare_and_swap": 3, "get": 3, "delete": 3}


def _race(action, racers: int = RACERS):
    """Run `action(i)` in `racers` threads released together; return results or exceptions."""
    start = threading.Barrier(racers)
    results: list[object] = [None] * racers

    def run(i: int) -> None:
        start.wait(timeout=30)
        try:
            results[i] = action(i)
        except Exception as exc:  # noqa: BLE001 - the outcome is the result
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive()
    return results


def test_racing_put_if_absent_has_exactly_one_winner(moto_s3, store_for, prefix):
    """Goal: 8 concurrent put_if_absent on one key: one success, 7 AlreadyExists, winner's bytes
    stored. Method: real threads, one store each, released by a barrier."""
    location = loc(prefix, "race")
    stores = [store_for(moto_s3.endpoint_url, f"racer-{i}") for i in range(RACERS)]
    results = _race(lambda i: stores[i].put_if_absent(location, f"racer-{i}".encode()))
    winners = [i for i, r in enumerate(results) if not isinstance(r, Exception)]
    assert len(winners) == 1, results
    assert all(isinstance(r, AlreadyExists) for i, r in enumerate(results) if i not in winners)
    assert stores[0].get(location) == f"racer-{winners[0]}".encode()


def test_racing_compare_and_swap_has_exactly_one_winner(moto_s3, store_for, prefix):
    """Goal: 8 concurrent compare_and_swap from one etag: one success, 7 PreconditionFailed.
    Method: real threads, one store each, released by a barrier."""
    location = loc(prefix, "race")
    base = store_for(moto_s3.endpoint_url).put_if_absent(location, b"base")
    stores = [store_for(moto_s3.endpoint_url, f"racer-{i}") for i in range(RACERS)]
    results = _race(lambda i: stores[i].compare_and_swap(location, f"racer-{i}".encode(), base.etag))
    winners = [i for i, r in enumerate(results) if not isinstance(r, Exception)]
    assert len(winners) == 1, results
    assert all(isinstance(r, PreconditionFailed) for i, r in enumerate(results) if i not in winners)
    assert stores[0].get(location) == f"racer-{winners[0]}".encode()
