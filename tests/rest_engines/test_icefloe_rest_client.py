"""icefloe's own REST catalog client (impl/catalog/rest.py) through `icefloe serve` under
every commit fault: outcomes as HOUSE_STYLE maps them (409 rejected and retried; 5xx and
lost answers unknown, decided by replaying the request with its Idempotency-Key), each
commit landing exactly once, Unknown outcomes resolved both ways; the request a swap sends
(rest_changes.py); and the server's answer to a keyed replay that races its twin."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from icefloe.conformance.testing import rest_faults as F
from icefloe.impl.catalog import rest_changes as RC
from icefloe.impl.catalog.base import NoSuchTable, TableIdentifier
from icefloe.impl.catalog.rest import RestCatalog, idempotency_key
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.outcomes import Committed, Conflict, Unknown
from icefloe.impl.table.commit import resolve_unknown
from icefloe.impl.table.env import Env
from icefloe.impl.table.table import Table, create_table

WRITER, OTHER = 31, 32


def rows(ids, cat="a"):
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": [cat] * len(ids), "v": [float(i) for i in ids]})


@pytest.fixture
def table(faulty_server, request):
    """A fresh partitioned table created through the client, and a second writer's handle."""
    io = StoreRouter()
    name = f"icefloe_{request.node.name.replace('[', '_').replace(']', '').replace('-', '_')}"[:60]
    catalog = RestCatalog(faulty_server.url, io, headers={F.WRITER_HEADER: str(WRITER)}, replays_max=2)
    try:
        catalog.create_namespace(("db",))
    except Exception:  # noqa: BLE001 - created by an earlier test of the module
        pass
    schema = schema_from_arrow(rows([0]).schema)
    t = create_table(catalog, f"db.{name}", schema, parse_partition_spec("cat", schema),
                     f"{faulty_server.warehouse}/db/{name}", {"commit.retry.min-wait-ms": "1"}, io=io,
                     env=Env.seeded(7))
    other = Table(RestCatalog(faulty_server.url, io, headers={F.WRITER_HEADER: str(OTHER)}), t.identifier, io)
    yield t, catalog, other
    faulty_server.faults.close()


def ids_of(t: Table) -> list:
    return sorted(t.refresh().scan().column("id").to_pylist())


def arm(faulty_server, fault: F.Fault, times: int = 1) -> F.Rule:
    return faulty_server.faults.add_rule(F.Rule(fault, F.Match(writer=WRITER), times=times))


CASES = [F.Fault(F.REJECT), F.Fault(F.FAIL_BEFORE, 500), F.Fault(F.FAIL_BEFORE, 503), F.Fault(F.FAIL_AFTER, 500),
         F.Fault(F.FAIL_AFTER, 502), F.Fault(F.FAIL_AFTER, 504), F.Fault(F.LOST), F.Fault(F.DUPLICATE),
         F.Fault(F.DELAY)]


@pytest.mark.parametrize("fault", CASES, ids=lambda f: f"{f.kind}-{f.status}")
def test_each_fault_commits_exactly_once(faulty_server, table, fault):
    """Goal: one commit fault on icefloe's REST commit is survived with the commit landing once.
    Method: arm the fault for the writer's next commit request, append, deliver what was
    parked, count the rows and read the exchange log (the replay carries the same key)."""
    t, catalog, _ = table
    t.append(rows([1]))
    before = len(faulty_server.faults.history())
    arm(faulty_server, fault)
    outcome = t.append(rows([2]))
    for rid in faulty_server.faults.parked():
        assert faulty_server.faults.deliver(rid) == 200        # the twin is answered from its key
    assert isinstance(outcome, Committed), outcome
    assert ids_of(t) == [1, 2]
    commits = [x for x in faulty_server.faults.history()[before:] if F.is_commit(x.method, x.path)]
    assert commits[0].fault == fault.kind
    if fault.kind == F.REJECT:
        assert outcome.attempts == 2 and len({x.key for x in commits}) == 2   # a new attempt, a new key
    else:
        assert outcome.attempts == 1 and len({x.key for x in commits}) == 1   # replays of one request
        assert len(commits) == (1 if fault.kind == F.DUPLICATE else 2)


def test_unknown_past_every_replay_resolves_committed(faulty_server, table):
    """Goal: an Unknown whose request landed resolves Committed. Method: answer 500 after
    applying to the first request, every replay and the loop's own check (4 requests), so the
    operation ends Unknown; then resolve_unknown replays it once more and finds it landed."""
    t, catalog, _ = table
    arm(faulty_server, F.Fault(F.FAIL_AFTER, 500), times=4)
    outcome = t.append(rows([5]))
    assert isinstance(outcome, Unknown) and len(outcome.attempted_locations) == 1
    resolved = resolve_unknown(catalog, t.identifier, t.io, outcome)
    assert isinstance(resolved, Committed) and resolved.metadata_location == t.refresh().metadata_location
    assert ids_of(t) == [5]


def test_unknown_never_applied_resolves_conflict_and_cannot_land_later(faulty_server, table):
    """Goal: an Unknown whose request never reached the catalog resolves Conflict once the table
    moved on, and the refusal is final. Method: 502 before applying to all 4 requests; another
    writer appends; resolve_unknown replays (409, recorded with the key); a replay after that
    is answered from the record."""
    t, catalog, other = table
    arm(faulty_server, F.Fault(F.FAIL_BEFORE, 502), times=4)
    outcome = t.append(rows([6]))
    assert isinstance(outcome, Unknown)
    assert isinstance(other.append(rows([7], "b")), Committed)
    assert isinstance(resolve_unknown(catalog, t.identifier, t.io, outcome), Conflict)
    assert catalog.landed(t.identifier, outcome.attempted_locations) is None
    assert ids_of(t) == [7]


def test_a_request_names_every_ref_and_the_changes_only():
    """Goal: the swap's request pins the base and sends only the attempt's changes. Method:
    diff hand-made metadata documents: an append, a rollback, an expiry, properties, and an
    unexpressible change."""
    base = {"format-version": 2, "table-uuid": "u", "location": "file:///w/t", "last-column-id": 3,
            "schemas": [{"schema-id": 0}], "current-schema-id": 0, "partition-specs": [{"spec-id": 0}],
            "default-spec-id": 0, "last-partition-id": 1000, "sort-orders": [{"order-id": 0}],
            "default-sort-order-id": 0, "properties": {"a": "1"},
            "snapshots": [{"snapshot-id": 1}, {"snapshot-id": 2, "parent-snapshot-id": 1}],
            "refs": {"main": {"snapshot-id": 2, "type": "branch"}, "t1": {"snapshot-id": 1, "type": "tag"}}}
    append = dict(base, snapshots=base["snapshots"] + [{"snapshot-id": 3, "parent-snapshot-id": 2}],
                  refs=dict(base["refs"], main={"snapshot-id": 3, "type": "branch"}))
    request = RC.commit_request(base, append, ("db",), "t")
    assert {"type": "assert-ref-snapshot-id", "ref": "t1", "snapshot-id": 1} in request["requirements"]
    assert {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 2} in request["requirements"]
    assert [u["action"] for u in request["updates"]] == ["add-snapshot", "set-snapshot-ref"]
    rollback = dict(base, refs=dict(base["refs"], main={"snapshot-id": 1, "type": "branch"}))
    assert RC.updates(base, rollback) == [{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                                           "snapshot-id": 1}]
    expire = dict(base, snapshots=base["snapshots"][1:], refs={"main": base["refs"]["main"]})
    assert RC.updates(base, expire) == [{"action": "remove-snapshot-ref", "ref-name": "t1"},
                                        {"action": "remove-snapshots", "snapshot-ids": [1]}]
    props = dict(base, properties={"b": "2"})
    assert RC.updates(base, props) == [{"action": "remove-properties", "removals": ["a"]},
                                       {"action": "set-properties", "updates": {"b": "2"}}]
    with pytest.raises(RC.UnsupportedChange):
        RC.updates(base, dict(base, statistics=[{"snapshot-id": 2}]))
    assert idempotency_key("file:///w/t/metadata/00001-x.metadata.json") == idempotency_key("/w/t/metadata/00001-x.metadata.json")


def test_a_keyed_replay_that_loses_to_its_twin_answers_as_the_twin(faulty_server, table):
    """Goal: a replay that looked its key up just before its twin landed is answered as the
    twin was, not 409 (else a client would commit the same change again). Method: the
    writer's first request is parked (503); its key is looked up by the replay, and right
    then the parked twin is delivered; the replay's requirement then fails against the
    twin's own version."""
    t, catalog, _ = table
    t.append(rows([1]))
    store = faulty_server.server.service.store
    original = store.lookup_key
    state = {"armed": True}

    def lookup(key):
        found = original(key)
        if state["armed"] and found is None and faulty_server.faults.parked():
            state["armed"] = False
            import threading
            rid = faulty_server.faults.parked()[0]
            threading.Thread(target=faulty_server.faults.deliver, args=(rid,)).start()
            import time
            deadline = time.monotonic() + 10
            while original(key) is None and time.monotonic() < deadline:
                time.sleep(0.01)
        return found
    store.lookup_key = lookup
    try:
        arm(faulty_server, F.Fault(F.DELAY))
        outcome = t.append(rows([2]))
    finally:
        store.lookup_key = original
    assert not state["armed"]
    assert isinstance(outcome, Committed) and outcome.attempts == 1
    assert ids_of(t) == [1, 2]


def test_load_and_register_errors_are_typed(faulty_server):
    """Goal: catalog calls other than the swap raise typed errors. Method: load a missing table."""
    catalog = RestCatalog(faulty_server.url, StoreRouter())
    with pytest.raises(NoSuchTable):
        catalog.load(TableIdentifier(("db",), "absent"))
    assert json.loads(json.dumps(catalog.counts))["commits"] == 0
