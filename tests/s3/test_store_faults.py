"""S3Store under injected faults, through the proxy: retries, read-back, honest outcomes.

apache/iceberg #7151 (REGRESSIONS.md row 1): a swap succeeded, its response was lost, a
retry of the same request was refused, and the refusal was taken as failure. Here the
store must report success when the object holds our bytes, and StoreOutcomeUnknown
exactly where the observations cannot decide.
"""
from __future__ import annotations

import threading

import pytest
from botocore.exceptions import ClientError

from icefloe.impl.io.base import AlreadyExists, StoreOutcomeUnknown, StoreUnavailable
from icefloe.conformance.testing.moto_server import make_client
from icefloe.conformance.testing.proxy import Delay, LoseResponse, Match, Reject, Reset, Rule

BUCKET = "icefloe"
COND_PUT = "ConditionalPutObject"
HOLD_S_MAX = 30  # safety net for waits on gates; events decide the order


def loc(prefix: str, name: str) -> str:
    return f"s3://{BUCKET}/{prefix}/{name}"


def trace(proxy, client: str) -> list[tuple]:
    """What `client` saw: (operation, returned), in order."""
    return [(e.operation, e.returned) for e in proxy.history() if e.client == client]


def truth(proxy, client: str) -> list[tuple]:
    """What upstream did for `client`'s requests: (operation, upstream_status)."""
    return [(e.operation, e.upstream_status) for e in proxy.history() if e.client == client]


@pytest.mark.parametrize("then", ["reset", "500"])
def test_7151_lost_put_if_absent_ack_then_412_is_success(proxy, store_for, prefix, then):
    """Goal: #7151 for put_if_absent: a landed write whose ack was lost is reported as success.
    Method: lose the first response (after upstream applied), let the retry get 412, read back."""
    a = store_for(proxy.endpoint_url, "a")
    proxy.add_rule(Rule(LoseResponse(then), Match(operation=COND_PUT, client="a"), nth=1))
    info = a.put_if_absent(loc(prefix, "m.json"), b"ours")
    assert info.size == 4 and a.get(loc(prefix, "m.json")) == b"ours"
    lost = "reset" if then == "reset" else 500
    assert trace(proxy, "a")[:3] == [(COND_PUT, lost), (COND_PUT, 412), ("GetObject", 200)]
    assert truth(proxy, "a")[:2] == [(COND_PUT, 200), (COND_PUT, 412)]
    assert dict(a.counts) == {"put_if_absent": 2, "get": 2}  # a read-back, then our own get


def test_7151_lost_swap_ack_then_412_is_success(proxy, store_for, prefix):
    """Goal: #7151 for compare_and_swap: the swap landed, the ack was lost, the retry's 412 is not
    failure. Method: lose the CAS response with a 500, check the reported etag is current."""
    a = store_for(proxy.endpoint_url, "a")
    base = a.put_if_absent(loc(prefix, "ptr"), b"v1")
    proxy.add_rule(Rule(LoseResponse("500"), Match(operation=COND_PUT, client="a"), nth=1))
    info = a.compare_and_swap(loc(prefix, "ptr"), b"v2", base.etag)
    assert info.etag == a.stat(loc(prefix, "ptr")).etag
    assert a.get(loc(prefix, "ptr")) == b"v2"
    assert trace(proxy, "a")[1:4] == [(COND_PUT, 500), (COND_PUT, 412), ("GetObject", 200)]


def test_7151_sdk_retries_turn_a_landed_swap_into_a_conflict(proxy, moto_s3, prefix):
    """Goal: show why SDK retries are off: boto3's own retry reports 412 for a swap that landed.
    Method: boto3 with 3 SDK attempts, lose the first ack; the call fails, yet our bytes are there."""
    key = f"{prefix}/ptr"
    etag = moto_s3.client().put_object(Bucket=BUCKET, Key=key, Body=b"v1")["ETag"]
    naive = make_client(proxy.endpoint_url, access_key="naive",
                        retries={"mode": "standard", "total_max_attempts": 3})
    proxy.add_rule(Rule(LoseResponse("500"), Match(operation=COND_PUT, client="naive"), nth=1))
    with pytest.raises(ClientError) as refused:
        naive.put_object(Bucket=BUCKET, Key=key, Body=b"v2", IfMatch=etag)
    assert refused.value.response["Error"]["Code"] == "PreconditionFailed"
    assert moto_s3.client().get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"v2"
    assert truth(proxy, "naive") == [(COND_PUT, 200), (COND_PUT, 412)]


def _swap_in_background(store, location, data, etag):
    result: dict = {}

    def run() -> None:
        try:
            result["info"] = store.compare_and_swap(location, data, etag)
        except Exception as exc:  # noqa: BLE001 - the outcome is the result
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


@pytest.mark.parametrize("landed", [True, False])
def test_replaced_after_ambiguous_swap_is_unknown(proxy, store_for, prefix, landed):
    """Goal: StoreOutcomeUnknown when A's swap may have landed and the key now holds B's bytes;
    A sees the same thing whether its swap landed (then was replaced) or never landed.
    Method: gate A's first swap (after upstream if landed, before with a reset if not), let B
    swap meanwhile, release; compare what A observed in both worlds."""
    a, b = store_for(proxy.endpoint_url, "a"), store_for(proxy.endpoint_url, "b")
    location = loc(prefix, "ptr")
    base = a.put_if_absent(location, b"v1")
    match = Match(operation=COND_PUT, client="a")
    gate = proxy.add_gate(match, stage="response" if landed else "request")
    proxy.add_rule(Rule(LoseResponse("reset") if landed else Reset(), match, nth=1))
    thread, result = _swap_in_background(a, location, b"from-a", base.etag)
    assert gate.wait_arrived(HOLD_S_MAX)
    current = b.stat(location).etag  # A's etag if A landed, else the base's
    b.compare_and_swap(location, b"from-b", current)
    gate.release()
    thread.join(HOLD_S_MAX)
    assert isinstance(result.get("error"), StoreOutcomeUnknown), result
    assert trace(proxy, "a")[1:] == [(COND_PUT, "reset"), (COND_PUT, 412), ("GetObject", 200)]
    assert truth(proxy, "a")[1][1] == (200 if landed else None)


def test_deleted_after_ambiguous_swap_is_unknown(proxy, store_for, prefix):
    """Goal: StoreOutcomeUnknown when the retry finds no object (404) after an ambiguous swap.
    Method: lose A's swap ack behind a response gate, let B delete the key, release."""
    a, b = store_for(proxy.endpoint_url, "a"), store_for(proxy.endpoint_url, "b")
    location = loc(prefix, "ptr")
    base = a.put_if_absent(location, b"v1")
    match = Match(operation=COND_PUT, client="a")
    gate = proxy.add_gate(match, stage="response")
    proxy.add_rule(Rule(LoseResponse("reset"), match, nth=1))
    thread, result = _swap_in_background(a, location, b"from-a", base.etag)
    assert gate.wait_arrived(HOLD_S_MAX)
    b.delete(location)
    gate.release()
    thread.join(HOLD_S_MAX)
    assert isinstance(result.get("error"), StoreOutcomeUnknown), result
    assert trace(proxy, "a")[1:] == [(COND_PUT, "reset"), (COND_PUT, 404), ("GetObject", 404)]


def test_every_attempt_cut_off_is_unknown(proxy, store_for, prefix):
    """Goal: when every attempt is reset after sending and nothing is there, the outcome is
    Unknown, not Conflict (a cut-off request may still land). Method: reset every conditional PUT."""
    a = store_for(proxy.endpoint_url, "a", attempts_max=3)
    proxy.add_rule(Rule(Reset(), Match(operation=COND_PUT, client="a")))
    with pytest.raises(StoreOutcomeUnknown):
        a.put_if_absent(loc(prefix, "m.json"), b"ours")
    assert trace(proxy, "a") == [(COND_PUT, "reset")] * 3 + [("GetObject", 404)]
    assert dict(a.counts) == {"put_if_absent": 3, "get": 1}


def test_first_refusal_without_ambiguity_is_definite(proxy, store_for, prefix):
    """Goal: a 412 on the first attempt is AlreadyExists with no read-back. Method: B creates the
    key first; A's put_if_absent through the proxy; check A sent one request."""
    a, b = store_for(proxy.endpoint_url, "a"), store_for(proxy.endpoint_url, "b")
    b.put_if_absent(loc(prefix, "m.json"), b"theirs")
    with pytest.raises(AlreadyExists):
        a.put_if_absent(loc(prefix, "m.json"), b"ours")
    assert trace(proxy, "a") == [(COND_PUT, 412)]


def test_rejected_then_accepted_put_succeeds(proxy, store_for, prefix):
    """Goal: a 503 before forwarding is retried and the retry's 200 is success. Method: reject the
    first conditional PUT; count requests on both sides (no hidden SDK retry)."""
    a = store_for(proxy.endpoint_url, "a")
    proxy.add_rule(Rule(Reject(503), Match(operation=COND_PUT, client="a"), nth=1))
    a.put_if_absent(loc(prefix, "m.json"), b"ours")
    assert trace(proxy, "a") == [(COND_PUT, 503), (COND_PUT, 200)]
    assert a.counts["put_if_absent"] == 2


def test_reads_retry_and_then_give_up_as_unavailable(proxy, store_for, prefix):
    """Goal: reads retry transient faults, and exhausting them is StoreUnavailable. Method: one
    500 on get (recovers), resets on every stat (gives up); the store's count equals the proxy's."""
    a = store_for(proxy.endpoint_url, "a", attempts_max=3)
    a.put_if_absent(loc(prefix, "x"), b"data")
    proxy.add_rule(Rule(Reject(500), Match(operation="GetObject", client="a"), nth=1))
    proxy.add_rule(Rule(Reset(), Match(operation="HeadObject", client="a")))
    assert a.get(loc(prefix, "x")) == b"data"
    with pytest.raises(StoreUnavailable):
        a.stat(loc(prefix, "x"))
    assert trace(proxy, "a")[1:] == [("GetObject", 500), ("GetObject", 200)] + [
        ("HeadObject", "reset")] * 3
    assert a.counts["get"] == 2 and a.counts["stat"] == 3


def test_delete_retries_and_reports_unknown_when_cut_off(proxy, store_for, prefix):
    """Goal: delete is retried (idempotent); if every attempt is cut off it is Unknown. Method: lose
    one delete ack (then succeed), then reset every delete."""
    a = store_for(proxy.endpoint_url, "a", attempts_max=2)
    a.put_if_absent(loc(prefix, "x"), b"data")
    rule = proxy.add_rule(Rule(LoseResponse("reset"), Match(operation="DeleteObject"), nth=1))
    a.delete(loc(prefix, "x"))
    proxy.remove_rule(rule)
    proxy.add_rule(Rule(Reset(), Match(operation="DeleteObject")))
    with pytest.raises(StoreOutcomeUnknown):
        a.delete(loc(prefix, "x"))
    assert [r for op, r in trace(proxy, "a") if op == "DeleteObject"] == [
        "reset", 204, "reset", "reset"]


def test_delayed_request_still_succeeds(proxy, store_for, prefix):
    """Goal: a delay is not a failure. Method: delay a conditional PUT; it succeeds and the
    history names the fault."""
    a = store_for(proxy.endpoint_url, "a")
    proxy.add_rule(Rule(Delay(0.05), Match(operation=COND_PUT)))
    a.put_if_absent(loc(prefix, "x"), b"data")
    [entry] = proxy.history([COND_PUT])
    assert (entry.fault, entry.upstream_status, entry.returned) == ("delay:0.05", 200, 200)


RACERS = 8


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("verb", ["put_if_absent", "compare_and_swap"])
def test_racing_writers_under_faults_report_honestly(proxy, moto_s3, store_for, prefix, verb,
                                                     seed):
    """Goal: 8 writers race one conditional write through random faults; at most one succeeds,
    whatever landed is reported as success or Unknown, never as a conflict. Method: real
    threads, seeded probabilistic reject/reset/lost-response rules; judge against the key."""
    key = f"{prefix}/k"
    location = f"s3://{BUCKET}/{key}"
    base = None
    if verb == "compare_and_swap":
        base = moto_s3.client().put_object(Bucket=BUCKET, Key=key, Body=b"base")["ETag"]
    proxy.clear(seed=seed)
    for fault in (Reject(503), Reset(), LoseResponse("reset"), LoseResponse("500")):
        proxy.add_rule(Rule(fault, Match(operation=COND_PUT), probability=0.1))
    stores = [store_for(proxy.endpoint_url, f"racer-{i}", attempts_max=3) for i in range(RACERS)]
    start = threading.Barrier(RACERS)
    outcomes: list[object] = [None] * RACERS

    def race(i: int) -> None:
        start.wait(timeout=HOLD_S_MAX)
        body = f"racer-{i}".encode()
        try:
            if verb == "put_if_absent":
                outcomes[i] = stores[i].put_if_absent(location, body)
            else:
                outcomes[i] = stores[i].compare_and_swap(location, body, base)
        except Exception as exc:  # noqa: BLE001 - the outcome is the result
            outcomes[i] = exc

    threads = [threading.Thread(target=race, args=(i,)) for i in range(RACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HOLD_S_MAX)
        assert not t.is_alive()
    try:
        final = moto_s3.client().get_object(Bucket=BUCKET, Key=key)["Body"].read()
    except ClientError:
        final = b"base"  # put_if_absent: nobody's write landed
    winners = [i for i, o in enumerate(outcomes) if not isinstance(o, Exception)]
    unknown = [i for i, o in enumerate(outcomes) if isinstance(o, StoreOutcomeUnknown)]
    assert len(winners) <= 1, outcomes
    if winners:
        assert final == f"racer-{winners[0]}".encode(), (final, outcomes)
    if final != b"base":
        landed = int(final.decode().split("-")[1])
        assert landed in winners + unknown, (landed, outcomes)  # never reported as a conflict
    else:
        assert not winners, outcomes
