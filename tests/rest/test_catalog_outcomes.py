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


def _snapshot_change(client, name: str, snapshot_id: int) -> dict:
    """A transaction's change adding snapshot `snapshot_id` on table `name`'s main."""
    parent, metadata = head(client, name=name)
    seq = metadata["last-sequence-number"] + 1
    snapshot = {"snapshot-id": snapshot_id, "sequence-number": seq, "timestamp-ms": 1_700_000_000_000 + seq,
                "manifest-list": f"{metadata['location']}/metadata/snap-{snapshot_id}-1-probe.avro",
                "summary": {"operation": "append"}, "schema-id": 0}
    if parent is not None:
        snapshot["parent-snapshot-id"] = parent
    return {"identifier": {"namespace": ["db"], "name": name},
            "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}],
            "updates": [{"action": "add-snapshot", "snapshot": snapshot},
                        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                         "snapshot-id": snapshot_id}]}


@pytest.mark.parametrize("when, landed", [("after", True), ("before", False)])
def test_transaction_under_a_commit_fault_is_all_or_nothing(commit_fault, when, landed):
    """Goal: a two-table transaction whose COMMIT fails before or after reaching the
    database is 500 CommitStateUnknownException, moves both tables or neither, and its keyed
    retry lands it exactly once (204). Method: the faulty SQLite connection on the
    transaction's COMMIT, both tables' main ancestry read after each step."""
    client, armed = commit_fault
    make_table(client, name="u")
    changes = [_snapshot_change(client, "t", 20), _snapshot_change(client, "u", 30)]
    key = new_key()
    armed.append(when)
    first = client.transaction(changes, key=key)
    assert first.status == 500 and first.type == "CommitStateUnknownException", first
    assert (main_ancestry(client), main_ancestry(client, name="u")) == (([20, 1], [30]) if landed else ([1], []))
    assert client.transaction(changes, key=key).status == 204
    assert (main_ancestry(client), main_ancestry(client, name="u")) == ([20, 1], [30])


@pytest.mark.parametrize("kind, status", [("fail_after", 502), ("lost", 0), ("duplicate", 0), ("fail_before", 503)])
def test_transaction_under_the_rest_fault_layer_is_all_or_nothing(catalog_uri, warehouse, kind, status):
    """Goal: the suite's REST commit faults on a two-table transaction: each table moved
    exactly as the other (both or neither), and the keyed retry leaves both moved once.
    Method: `icefloe serve` wrapped by RestFaults (conformance/testing/rest_faults.py)."""
    from icefloe.conformance.testing import rest_faults as F
    from icefloe.conformance.testing.rest_server import faulty_rest_server
    with faulty_rest_server(catalog_uri, warehouse) as s:
        client = RestClient(s.url, writer=1)
        make_table(client)
        make_table(client, name="u")
        s.faults.add_rule(F.Rule(F.Fault(kind, status or 500), F.Match(writer=1)))
        changes = [_snapshot_change(client, "t", 2), _snapshot_change(client, "u", 3)]
        key = new_key()
        first = client.transaction(changes, key=key)
        if kind == "lost":      # a 204 has no body: the fault layer must still cut the answer
            assert first.status is None, first
        t, u = main_ancestry(client), main_ancestry(client, name="u")
        assert (t, u) in (([2], [3]), ([], [])), (t, u)
        assert client.transaction(changes, key=key).status == 204
        assert (main_ancestry(client), main_ancestry(client, name="u")) == ([2], [3])
        s.faults.close()
