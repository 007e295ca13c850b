"""Commit faults at the server, per writer (conformance/testing/rest_faults.py) and the
Idempotency-Key: goal, each fault does to the table exactly what its name says, and a
retry with the same key after an unknown outcome is answered as the first attempt was,
never applied twice; method, a real `icefloe serve` wrapped by RestFaults, raw commits that
add a snapshot, the table's main ancestry read after each."""
from __future__ import annotations

import threading

import pytest

from icefloe.conformance.testing import rest_faults as F
from icefloe.conformance.testing.rest_client import RestClient, new_key
from icefloe.conformance.testing.rest_server import faulty_rest_server

from rest_helpers import append, main_ancestry, make_table


@pytest.fixture
def faulty(catalog_uri, warehouse):
    with faulty_rest_server(catalog_uri, warehouse, tokens={"w3": 3}) as s:
        client = RestClient(s.url, writer=1)
        make_table(client)
        assert append(client, 1).status == 200
        yield s, s.faults, client
        s.faults.close()


def _rule(faults, kind, status=500, writer=1, **kw):
    return faults.add_rule(F.Rule(F.Fault(kind, status), F.Match(writer=writer), **kw))


def test_reject_and_fail_before_apply_nothing(faulty):
    """Goal: reject (409) and 5xx-before leave the table as it was; method: one of each on
    writer 1's next commit."""
    _, faults, client = faulty
    _rule(faults, F.REJECT)
    assert append(client, 2).status == 409
    _rule(faults, F.FAIL_BEFORE, 502)
    assert append(client, 3).status == 502
    assert main_ancestry(client) == [1]
    assert [(x.fault, x.applied) for x in faults.history() if x.fault] == [(F.REJECT, False), (F.FAIL_BEFORE, False)]


@pytest.mark.parametrize("kind, status", [(F.FAIL_AFTER, 500), (F.FAIL_AFTER, 502), (F.FAIL_AFTER, 504), (F.LOST, 0)])
def test_applied_then_unknown_and_the_key_replays(faulty, kind, status):
    """Goal: apply-then-5xx and a dropped answer land the commit while the client learns
    nothing; a retry with the same Idempotency-Key gets the original 200, applied once; a
    retry without a key gets 409 (the trap of apache/iceberg #12818); method: each fault
    on writer 1, then both retries."""
    _, faults, client = faulty
    key = new_key()
    _rule(faults, kind, status or 500)
    first = append(client, 2, key=key, expect_parent=1)
    assert first.status == (None if kind == F.LOST else status)
    assert main_ancestry(client) == [2, 1]
    replay = append(client, 2, key=key, expect_parent=1)
    assert replay.status == 200 and replay.body["metadata"]["refs"]["main"]["snapshot-id"] == 2
    assert main_ancestry(client) == [2, 1]
    unkeyed = append(client, 2, expect_parent=1)
    assert unkeyed.status == 409


def test_delay_applies_later_or_never(faulty):
    """Goal: a delayed commit answers 503 now and lands when delivered, or never when dropped;
    method: delay writer 1's commit, check, deliver; delay another, drop it."""
    _, faults, client = faulty
    _rule(faults, F.DELAY)
    assert append(client, 2, expect_parent=1).status == 503
    assert main_ancestry(client) == [1]
    (parked,) = faults.parked()
    assert faults.deliver(parked) == 200
    assert main_ancestry(client) == [2, 1]
    _rule(faults, F.DELAY)
    assert append(client, 3).status == 503
    faults.drop(faults.parked()[0])
    assert main_ancestry(client) == [2, 1]


def test_delayed_commit_landing_after_a_rival_is_refused(faulty):
    """Goal: a delayed commit delivered after another commit moved main fails its requirement
    at the server (never lands on top); method: delay writer 1, writer 2 commits, deliver."""
    s, faults, client = faulty
    _rule(faults, F.DELAY)
    assert append(client, 2, expect_parent=1).status == 503
    assert append(RestClient(s.url, writer=2), 3).status == 200
    assert faults.deliver(faults.parked()[0]) == 409
    assert main_ancestry(client) == [3, 1]


@pytest.mark.parametrize("keyed", [True, False])
def test_duplicate_delivery_applies_once(faulty, keyed):
    """Goal: a retransmitted commit applies once: its twin is replayed (with a key) or fails
    its requirement (without); method: duplicate writer 1's commit."""
    _, faults, client = faulty
    _rule(faults, F.DUPLICATE)
    assert append(client, 2, key=new_key() if keyed else None).status == 200
    (x,) = [x for x in faults.history() if x.fault == F.DUPLICATE]
    assert x.upstream_statuses == ([200, 200] if keyed else [200, 409])
    assert main_ancestry(client) == [2, 1]


def test_gate_holds_one_writer_while_another_commits(faulty):
    """Goal: the gate interleaves writers at the commit endpoint; method: hold writer 1's
    commit, writer 2 commits, release: writer 1's stale requirement is a 409."""
    s, faults, client = faulty
    gate = faults.add_gate(F.Match(writer=1))
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("a", append(client, 2, expect_parent=1)))
    t.start()
    assert gate.wait_arrived(10)
    assert append(RestClient(s.url, writer=2), 3).status == 200
    gate.release()
    t.join(10)
    assert box["a"].status == 409 and main_ancestry(client) == [3, 1]


def test_faults_are_per_writer(faulty):
    """Goal: a rule for writer 2 never touches writer 1, and a writer known by its token is
    told apart too; method: reject writers 2 and 3 (token w3), commit as 1, 2 and 3."""
    s, faults, client = faulty
    _rule(faults, F.REJECT, writer=2, times=0)
    _rule(faults, F.REJECT, writer=3, times=0)
    assert append(client, 2).status == 200
    assert append(RestClient(s.url, writer=2), 3).status == 409
    assert append(RestClient(s.url, token="w3"), 4).status == 409
    assert main_ancestry(client) == [2, 1]
