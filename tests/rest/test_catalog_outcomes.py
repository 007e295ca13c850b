"""The server's own unknown outcomes and its atomic transactions: goal, an error on the
catalog's COMMIT is a 500 CommitStateUnknownException whether or not it landed (never a
4xx), a keyed retry then answers as the outcome really was, and a multi-table transaction
lands whole or not at all; method, `icefloe serve` over a SQLite catalog whose connections
fail COMMIT on demand (conformance.testing.faulty_sql), raw commits."""
from __future__ import annotations

import pytest

from icefloe.conformance.testing.faulty_sql import wrap_connect
from icefloe.conformance.testing.rest_client import RestClient, new_key
from icefloe.conformance.testing.rest_server import RestServer
from icefloe.impl.catalog.sql import connection_factory, SqlCatalog
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.serve.service import CatalogService
from icefloe.impl.serve.store import store_for

from rest_helpers import append, head, main_ancestry, make_table


@pytest.fixture
def commit_fault(catalog_uri, warehouse):
    armed = []
    dialect, connect = connection_factory(catalog_uri)
    catalog = SqlCatalog(dialect=dialect, connect=wrap_connect(connect, lambda: armed.pop() if armed else None))
    service = CatalogService(catalog, store_for(catalog), StoreRouter(), warehouse)
    with RestServer(catalog_uri, warehouse, service=service) as s:
        client = RestClient(s.url)
        make_table(client)
        assert append(client, 1).status == 200
        yield client, armed


@pytest.mark.parametrize("when, landed", [("after", True), ("before", False)])
def test_commit_error_is_unknown_and_the_key_tells(commit_fault, when, landed):
    """Goal: COMMIT failing after (landed) or before (not landed) reaching the database is 500
    either way; the keyed retry is the replayed 200 or a fresh commit, applied once."""
    client, armed = commit_fault
    key = new_key()
    armed.append(when)
    first = append(client, 2, key=key, expect_parent=1)
    assert first.status == 500 and first.type == "CommitStateUnknownException", first
    assert main_ancestry(client) == ([2, 1] if landed else [1])
    retry = append(client, 2, key=key, expect_parent=1)
    assert retry.status == 200
    assert main_ancestry(client) == [2, 1]


def test_key_reused_for_another_operation_is_422(commit_fault):
    """Goal: a key is bound to its operation; method: the same key on a commit to another table."""
    client, _ = commit_fault
    key = new_key()
    assert append(client, 2, key=key).status == 200
    make_table(client, name="u")
    assert append(client, 3, name="u", key=key).status == 422


def test_transaction_lands_whole_or_not_at_all(server):
    """Goal: POST /v1/transactions/commit moves both tables or neither; method: one table's
    requirement stale, then both fresh."""
    client = RestClient(server.url)
    make_table(client, name="a")
    make_table(client, name="b")

    def change(name, value, uuid):
        return {"identifier": {"namespace": ["db"], "name": name},
                "requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
                "updates": [{"action": "set-properties", "updates": {"k": value}}]}
    ua, ub = head(client, name="a")[1]["table-uuid"], head(client, name="b")[1]["table-uuid"]
    bad = client.transaction([change("a", "1", ua), change("b", "1", ua)])
    assert bad.status == 409
    assert "k" not in head(client, name="a")[1]["properties"] and "k" not in head(client, name="b")[1]["properties"]
    key = new_key()
    assert client.transaction([change("a", "2", ua), change("b", "2", ub)], key=key).status == 204
    assert client.transaction([change("a", "2", ua), change("b", "2", ub)], key=key).status == 204
    assert head(client, name="a")[1]["properties"]["k"] == "2" == head(client, name="b")[1]["properties"]["k"]
    assert len(head(client, name="a")[1]["metadata-log"]) == 1
