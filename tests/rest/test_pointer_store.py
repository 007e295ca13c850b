"""`icefloe serve` over a catalog without a database (the PointerStore: the in-memory catalog
here, the S3 pointer catalog likewise): goal, commits, keys and unknown outcomes behave as on
the SQL catalog within one server, and a multi-table transaction is refused rather than made
non-atomically; method, the server over a MemoryCatalog whose swap loses its answer on demand
(conformance.testing.faulty_catalog) on a memory:// warehouse, raw commits."""
from __future__ import annotations

import pytest

from icefloe.conformance.testing.rest_client import RestClient, new_key
from icefloe.conformance.testing.rest_server import RestServer
from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.outcomes import SwapUnknown
from icefloe.impl.serve.service import CatalogService
from icefloe.impl.serve.store import store_for

from rest_helpers import append, main_ancestry, make_table


class LosingCatalog(MemoryCatalog):
    """Its swap applies (or not) and then reports an unknown outcome when told to."""

    def __init__(self):
        super().__init__()
        self.lose = []

    def swap(self, identifier, expected_location, new_location):
        if self.lose:
            apply = self.lose.pop()
            if apply:
                super().swap(identifier, expected_location, new_location)
            return SwapUnknown(expected_location, new_location, "injected: answer lost")
        return super().swap(identifier, expected_location, new_location)


@pytest.fixture
def served():
    catalog = LosingCatalog()
    service = CatalogService(catalog, store_for(catalog), StoreRouter(), "memory://wh")
    with RestServer("", "", service=service) as s:
        client = RestClient(s.url)
        make_table(client)
        assert append(client, 1).status == 200
        yield client, catalog


@pytest.mark.parametrize("applied", [True, False])
def test_pending_key_resolves_by_the_chain(served, applied):
    """Goal: after a 500 the keyed retry is the replayed 200 if the swap had landed, a fresh
    commit if not, applied once either way; method: the catalog loses one swap's answer."""
    client, catalog = served
    key = new_key()
    catalog.lose.append(applied)
    assert append(client, 2, key=key, expect_parent=1).status == 500
    assert main_ancestry(client) == ([2, 1] if applied else [1])
    assert append(client, 2, key=key, expect_parent=1).status == 200
    assert main_ancestry(client) == [2, 1]


def test_transaction_needs_a_sql_catalog(served):
    """Goal: no non-atomic multi-table commit; method: a two-table transaction is 406."""
    client, _ = served
    make_table(client, name="u")
    changes = [{"identifier": {"namespace": ["db"], "name": n}, "requirements": [],
                "updates": [{"action": "set-properties", "updates": {"k": "v"}}]} for n in ("t", "u")]
    assert client.transaction(changes).status == 406
