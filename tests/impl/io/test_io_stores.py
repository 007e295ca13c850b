"""Every object-store verb, run against each store that implements the protocol: local,
memory, the router over each, and S3Store on an atomic moto server (one per worker)."""
from __future__ import annotations

import hashlib
import re
import threading

import pytest

from icefloe.impl.io.base import AlreadyExists, NotFound, PreconditionFailed, content_etag
from icefloe.impl.io.local import LocalStore
from icefloe.impl.io.memory import MemoryStore
from icefloe.impl.io.router import StoreRouter
from icefloe.conformance.testing.moto_server import DEFAULT_REGION, MotoS3Server
from icefloe.impl.s3.store import S3Store

RACERS = 8


class Clock:
    def __init__(self, start_ms: int = 1_000):
        self.now = start_ms

    def __call__(self) -> int:
        self.now += 1
        return self.now


S3_BUCKET = "icefloe-stores"


@pytest.fixture(scope="session")
def stores_moto_s3():
    with MotoS3Server(bucket=S3_BUCKET) as server:
        yield server


@pytest.fixture(params=["local", "memory", "router-local", "router-memory", "s3"])
def store_and_root(request, tmp_path):
    if request.param == "s3":
        # moto's state is process-global: each test works under its own key prefix.
        server = request.getfixturevalue("stores_moto_s3")
        prefix = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.nodeid)
        return (S3Store.from_config(server.endpoint_url, "stores", "secret", DEFAULT_REGION),
                f"s3://{S3_BUCKET}/{prefix}")
    if request.param == "local":
        return LocalStore(), f"file://{tmp_path}"
    if request.param == "memory":
        return MemoryStore(now_ms=Clock()), "memory://bucket"
    if request.param == "router-local":
        return StoreRouter(), f"file:{tmp_path}"
    return StoreRouter(stores={"memory": MemoryStore(now_ms=Clock())}), "memory://bucket"


def etag_of(store, data: bytes) -> str:
    """The etag a store gives `data`: a hash of the content. S3's, for a single-part upload,
    is the MD5 of the bytes; icefloe's own stores use content_etag."""
    if isinstance(store, S3Store):
        return hashlib.md5(data).hexdigest()
    return content_etag(data)


def test_put_get_stat(store_and_root):
    """put_if_absent then get and stat return the content, its size and its content etag."""
    store, root = store_and_root
    loc = f"{root}/a/b/c.json"
    info = store.put_if_absent(loc, b"hello")
    assert info.location == loc and info.size == 5 and info.etag == etag_of(store, b"hello")
    assert store.get(loc) == b"hello"
    st = store.stat(loc)
    assert (st.size, st.etag, st.last_modified_ms) == (5, info.etag, info.last_modified_ms)
    assert st.last_modified_ms > 0


def test_missing_object(store_and_root):
    """get and stat of a missing object raise NotFound; delete of one is a no-op."""
    store, root = store_and_root
    with pytest.raises(NotFound):
        store.get(f"{root}/nope")
    with pytest.raises(NotFound):
        store.stat(f"{root}/nope")
    store.delete(f"{root}/nope")
    store.delete(f"{root}/no/such/dir/nope")


def test_put_if_absent_refuses_existing(store_and_root):
    """A second put_if_absent raises AlreadyExists and leaves the first content in place."""
    store, root = store_and_root
    loc = f"{root}/x"
    store.put_if_absent(loc, b"first")
    with pytest.raises(AlreadyExists):
        store.put_if_absent(loc, b"second")
    assert store.get(loc) == b"first"


def test_compare_and_swap(store_and_root):
    """CAS with the current etag replaces; with a stale etag raises PreconditionFailed; on a
    missing object raises NotFound."""
    store, root = store_and_root
    loc = f"{root}/ptr"
    first = store.put_if_absent(loc, b"v1")
    second = store.compare_and_swap(loc, b"v2", first.etag)
    assert store.get(loc) == b"v2" and second.etag == etag_of(store, b"v2") != first.etag
    with pytest.raises(PreconditionFailed):
        store.compare_and_swap(loc, b"v3", first.etag)
    assert store.get(loc) == b"v2"
    with pytest.raises(NotFound):
        store.compare_and_swap(f"{root}/missing", b"v", first.etag)
    with pytest.raises(NotFound):
        store.compare_and_swap(f"{root}/missing-dir/x", b"v", first.etag)


def test_delete_then_recreate(store_and_root):
    """delete removes the object; put_if_absent can then create it again."""
    store, root = store_and_root
    loc = f"{root}/d"
    store.put_if_absent(loc, b"1")
    store.delete(loc)
    with pytest.raises(NotFound):
        store.get(loc)
    store.put_if_absent(loc, b"2")
    assert store.get(loc) == b"2"


def test_list_prefix(store_and_root):
    """list(prefix) returns exactly the objects whose location starts with prefix, sorted."""
    store, root = store_and_root
    for name in ["t/data/1.parquet", "t/data/2.parquet", "t/metadata/v1.json", "t2/x", "u"]:
        store.put_if_absent(f"{root}/{name}", name.encode())
    listed = [i.location for i in store.list(f"{root}/t/")]
    assert listed == [f"{root}/t/data/1.parquet", f"{root}/t/data/2.parquet", f"{root}/t/metadata/v1.json"]
    partial = [i.location for i in store.list(f"{root}/t")]
    assert partial == listed + [f"{root}/t2/x"]
    assert [i.location for i in store.list(f"{root}/nothing/")] == []
    sizes = {i.location: i.size for i in store.list(f"{root}/t/data/")}
    assert sizes == {f"{root}/t/data/1.parquet": 16, f"{root}/t/data/2.parquet": 16}


def test_counts(store_and_root):
    """Every verb is counted once per call by kind, including failed calls."""
    store, root = store_and_root
    loc = f"{root}/c"
    info = store.put_if_absent(loc, b"1")
    with pytest.raises(AlreadyExists):
        store.put_if_absent(loc, b"1")
    store.get(loc)
    store.stat(loc)
    store.compare_and_swap(loc, b"2", info.etag)
    list(store.list(f"{root}/"))
    store.delete(loc)
    assert dict(store.counts) == {"put_if_absent": 2, "get": 1, "stat": 1,
                                  "compare_and_swap": 1, "list": 1, "delete": 1}


def _race(n: int, action):
    """Run action(i) in n threads released together; return each thread's result or error."""
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i):
        barrier.wait()
        try:
            results[i] = action(i)
        except Exception as e:  # noqa: BLE001 - the racers' errors are the data under test
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@pytest.mark.parametrize("round_", range(5))
def test_racing_put_if_absent_has_one_winner(store_and_root, round_):
    """8 threads put_if_absent the same new location: exactly one wins, the others get
    AlreadyExists, and the stored content is the winner's."""
    store, root = store_and_root
    loc = f"{root}/race/{round_}/v1.metadata.json"
    results = _race(RACERS, lambda i: store.put_if_absent(loc, f"writer-{i}".encode()))
    winners = [i for i, r in enumerate(results) if not isinstance(r, Exception)]
    assert len(winners) == 1, results
    assert all(isinstance(r, AlreadyExists) for i, r in enumerate(results) if i not in winners), results
    assert store.get(loc) == f"writer-{winners[0]}".encode()


@pytest.mark.parametrize("round_", range(5))
def test_racing_compare_and_swap_has_one_winner(store_and_root, round_):
    """8 threads CAS the same object from the same etag: exactly one wins, the others get
    PreconditionFailed, and the stored content is the winner's."""
    store, root = store_and_root
    loc = f"{root}/race/{round_}/pointer"
    base = store.put_if_absent(loc, b"base")
    results = _race(RACERS, lambda i: store.compare_and_swap(loc, f"writer-{i}".encode(), base.etag))
    winners = [i for i, r in enumerate(results) if not isinstance(r, Exception)]
    assert len(winners) == 1, results
    assert all(isinstance(r, PreconditionFailed) for i, r in enumerate(results) if i not in winners), results
    assert store.get(loc) == f"writer-{winners[0]}".encode()
