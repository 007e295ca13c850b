"""Two `icefloe serve` processes' worth of servers on one PostgreSQL catalog: goal, the
commit endpoint stays correct when the swap races another server (a linear main, every
acknowledged commit in it exactly once, every 409 absent from it) and an Idempotency-Key
recorded through one server is replayed by the other; method, two real servers on this
suite's PostgreSQL, four writer threads alternating between them, raw commits."""
from __future__ import annotations

import threading

import pytest

from foreign_tests import load_test_module

from icefloe.conformance.testing.rest_client import RestClient, new_key
from icefloe.conformance.testing.rest_server import RestServer
from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.serve.service import CatalogService
from icefloe.impl.serve.store import store_for

H = load_test_module("rest/rest_helpers.py", "rest_helpers_for_postgres")
WRITERS, COMMITS_PER_WRITER = 4, 8


@pytest.fixture
def servers(postgres, catalog_name, tmp_path):
    out = []
    for _ in range(2):
        catalog = SqlCatalog(postgres.dsn, name=catalog_name)
        service = CatalogService(catalog, store_for(catalog), StoreRouter(), str(tmp_path / "warehouse"))
        out.append(RestServer(postgres.dsn, str(tmp_path / "warehouse"), service=service).start())
    yield out
    for s in out:
        s.stop()


def test_two_servers_keep_main_linear(servers):
    """Goal: no lost and no duplicate commit across servers; method: 4 writers x 8 commits,
    each writer retrying on 409 with a fresh read, alternating servers."""
    H.make_table(RestClient(servers[0].url))
    acknowledged, refused, lock = [], [], threading.Lock()

    def writer(w):
        for i in range(COMMITS_PER_WRITER):
            client = RestClient(servers[(w + i) % 2].url, writer=w)
            sid = w * 1000 + i + 1
            for _ in range(50):
                answer = H.append(client, sid)
                if answer.status == 200:
                    with lock:
                        acknowledged.append(sid)
                    break
                assert answer.status == 409, answer
                with lock:
                    refused.append(sid)
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(1, WRITERS + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    chain = H.main_ancestry(RestClient(servers[1].url))
    assert sorted(chain) == sorted(acknowledged) and len(chain) == WRITERS * COMMITS_PER_WRITER
    assert refused, "the writers never raced (the test would show nothing)"


def test_key_recorded_by_one_server_replays_on_the_other(servers):
    """Goal: the key lives in the shared catalog database; method: commit with a key through
    server A, retry the same request through server B."""
    a, b = RestClient(servers[0].url), RestClient(servers[1].url)
    H.make_table(a)
    key = new_key()
    assert H.append(a, 1, key=key, expect_parent=None).status == 200
    replay = H.append(b, 1, key=key, expect_parent=None)
    assert replay.status == 200 and H.main_ancestry(b) == [1]
