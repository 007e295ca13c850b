"""The fault-injecting proxy with black-box S3 clients: boto3, pyarrow's S3FileSystem, and
pyiceberg's S3 FileIO (PyArrowFileIO, configured by properties as a pyiceberg catalog is).

Every fault kind (reject 503/500, reset, lost response, delay, gate) is exercised with each
client; gates force interleavings between
clients; the history records what each client sent, what upstream answered and what
the client got back.
"""
from __future__ import annotations

import http.client
import io
import itertools
import threading

import pytest
from botocore.exceptions import BotoCoreError, ClientError

from icefloe.impl.io.base import AlreadyExists
from icefloe.conformance.testing.peer_clients import pyiceberg_s3_properties
from icefloe.conformance.testing.moto_server import make_client
from icefloe.conformance.testing.proxy import (
    Delay, Exchange, FaultProxy, LoseResponse, Match, Reject, Reset, Rule)

BUCKET = "icefloe"
HOLD_S_MAX = 30  # safety net for waits on gates and threads; events decide the order


class BotoClient:
    """boto3, SDK retries off; a write is one PutObject."""
    write_operation = "PutObject"
    errors = (ClientError, BotoCoreError)

    def __init__(self, proxy: FaultProxy, client: str, arrow_fs_for=None):
        self.s3 = make_client(proxy.endpoint_url, access_key=client)

    def put(self, key: str, data: bytes) -> None:
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=data)

    def get(self, key: str) -> bytes:
        return self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()


class ArrowClient:
    """pyarrow's S3FileSystem (AWS SDK for C++), one attempt per request; a write is a
    multipart upload that becomes visible at CompleteMultipartUpload."""
    write_operation = "CompleteMultipartUpload"
    errors = (OSError,)

    def __init__(self, proxy: FaultProxy, client: str, arrow_fs_for=None):
        self.fs = arrow_fs_for(proxy, client)

    def put(self, key: str, data: bytes) -> None:
        with self.fs.open_output_stream(f"{BUCKET}/{key}") as out:
            out.write(data)

    def get(self, key: str) -> bytes:
        with self.fs.open_input_stream(f"{BUCKET}/{key}") as stream:
            return stream.read()


class PyIcebergClient:
    """pyiceberg's S3 FileIO (PyArrowFileIO), one attempt per request
    (`icefloe.conformance.testing.peer_clients`); a write is `OutputFile.create`, a multipart upload."""
    write_operation = "CompleteMultipartUpload"
    errors = (OSError,)

    def __init__(self, proxy: FaultProxy, client: str, arrow_fs_for=None):
        from pyiceberg.io.pyarrow import PyArrowFileIO

        self.io = PyArrowFileIO(pyiceberg_s3_properties(proxy.endpoint_url, client))
        # Build its pyarrow filesystem now: constructing one waits for every S3 request in
        # flight in the process, so a lazy one would wait for a gated request.
        self.io.new_input(f"s3://{BUCKET}/warm-up").exists()
        proxy.clear()

    def put(self, key: str, data: bytes) -> None:
        with self.io.new_output(f"s3://{BUCKET}/{key}").create(overwrite=True) as out:
            out.write(data)

    def get(self, key: str) -> bytes:
        with self.io.new_input(f"s3://{BUCKET}/{key}").open() as stream:
            return stream.read()


CLIENTS = {"boto3": BotoClient, "pyarrow": ArrowClient, "pyiceberg": PyIcebergClient}


@pytest.fixture(params=sorted(CLIENTS))
def client(request, proxy, arrow_fs_for):
    return CLIENTS[request.param](proxy, "subject", arrow_fs_for)


def upstream_body(moto_s3, key: str) -> bytes | None:
    """The object as stored upstream, read around the proxy."""
    try:
        return moto_s3.client().get_object(Bucket=BUCKET, Key=key)["Body"].read()
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "NoSuchKey"
        return None


def entries(proxy: FaultProxy, operation: str) -> list[tuple]:
    return [(e.upstream_status, e.returned, e.fault) for e in proxy.history([operation])
            if e.client == "subject"]


# -- each fault kind, with boto3 and with pyarrow ------------------------------------------

@pytest.mark.parametrize("status", [503, 500])
def test_reject_answers_an_s3_error_without_forwarding(proxy, moto_s3, client, prefix, status):
    """Goal: reject returns an S3 XML error the client surfaces, and upstream never sees the
    request. Method: reject the subject's GetObject; check the error and the history."""
    key = f"{prefix}/x"
    moto_s3.client().put_object(Bucket=BUCKET, Key=key, Body=b"data")
    proxy.add_rule(Rule(Reject(status), Match(operation="GetObject", client="subject")))
    with pytest.raises(client.errors):
        client.get(key)
    assert entries(proxy, "GetObject") == [(None, status, f"reject:{status}")]


@pytest.mark.parametrize("status,code", [(503, "SlowDown"), (500, "InternalError")])
def test_reject_error_body_is_s3_xml(proxy, prefix, status, code):
    """Goal: a rejection parses as S3's own error. Method: boto3 reads the code from the body."""
    proxy.add_rule(Rule(Reject(status), Match(operation="ListObjectsV2")))
    with pytest.raises(ClientError) as rejected:
        make_client(proxy.endpoint_url).list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    assert rejected.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert rejected.value.response["Error"]["Code"] == code


def test_reset_before_forwarding_does_not_apply(proxy, moto_s3, client, prefix):
    """Goal: a reset write fails at the client and never reaches upstream. Method: reset the
    subject's write request; the object is absent upstream."""
    key = f"{prefix}/x"
    proxy.add_rule(Rule(Reset(), Match(operation=client.write_operation, client="subject")))
    with pytest.raises(client.errors):
        client.put(key, b"ours")
    assert upstream_body(moto_s3, key) is None
    seen = entries(proxy, client.write_operation)
    # pyarrow re-sends once a request reset on a reused connection (see the test below).
    assert seen == [(None, "reset", "reset")] * len(seen) and 1 <= len(seen) <= 2


@pytest.mark.parametrize("then", ["500", "reset"])
def test_lose_response_applies_but_the_client_fails(proxy, moto_s3, client, prefix, then):
    """Goal: lose_response lets the write land and the client still sees a failure. Method: lose
    the subject's write response; the object is there upstream."""
    key = f"{prefix}/x"
    proxy.add_rule(Rule(LoseResponse(then), Match(operation=client.write_operation,
                                                  client="subject")))
    with pytest.raises(client.errors):
        client.put(key, b"ours")
    assert upstream_body(moto_s3, key) == b"ours"
    returned = 500 if then == "500" else "reset"
    seen = entries(proxy, client.write_operation)
    assert seen == [(200, returned, f"lose_response:{then}")] * len(seen) and 1 <= len(seen) <= 2


def test_delay_forwards_after_waiting(proxy, moto_s3, client, prefix):
    """Goal: a delayed request still succeeds and is recorded as delayed. Method: delay reads."""
    key = f"{prefix}/x"
    moto_s3.client().put_object(Bucket=BUCKET, Key=key, Body=b"data")
    proxy.add_rule(Rule(Delay(0.02), Match(operation="GetObject", client="subject")))
    assert client.get(key) == b"data"
    assert [f for _, _, f in entries(proxy, "GetObject")] == ["delay:0.02"]
    assert all(status in (200, 206) for status, _, _ in entries(proxy, "GetObject"))


def test_gate_holds_a_write_until_released(proxy, moto_s3, client, prefix):
    """Goal: a gated write is not applied until released, then completes. Method: gate the
    subject's write, check upstream while held, release, check again."""
    key = f"{prefix}/x"
    gate = proxy.add_gate(Match(operation=client.write_operation, client="subject"))
    writer = threading.Thread(target=client.put, args=(key, b"ours"))
    writer.start()
    assert gate.wait_arrived(HOLD_S_MAX)
    assert upstream_body(moto_s3, key) is None
    gate.release()
    writer.join(HOLD_S_MAX)
    assert not writer.is_alive()
    assert upstream_body(moto_s3, key) == b"ours"
    assert entries(proxy, client.write_operation) == [(200, 200, "gate")]


def test_pyarrow_sdk_retries_show_in_the_history(proxy, moto_s3, arrow_fs_for, prefix):
    """Goal: an SDK's own retries are visible to the proxy. Method: pyarrow with 3 attempts, one
    503 on GetObject; the read succeeds and the history holds both attempts."""
    key = f"{prefix}/x"
    # 4 KiB, not 4 bytes: pyarrow reads a range into a buffer of the object's size, and an S3
    # error body larger than that buffer fails the read ("Failed to flush response stream")
    # instead of being retried.
    data = b"d" * 4096
    moto_s3.client().put_object(Bucket=BUCKET, Key=key, Body=data)
    arrow = arrow_fs_for(proxy, "subject", attempts_max=3)
    proxy.add_rule(Rule(Reject(503), Match(operation="GetObject"), nth=1))
    with arrow.open_input_stream(f"{BUCKET}/{key}") as stream:
        assert stream.read() == data
    assert [r for _, r, _ in entries(proxy, "GetObject")] == [503, 206]


def test_pyarrow_resends_a_request_reset_on_a_reused_connection(proxy, moto_s3, arrow_fs_for,
                                                                 prefix):
    """Goal: show that pyarrow with max_attempts=1 still re-sends a request whose reused
    keep-alive connection was reset (the HTTP client's stale-connection retry), so a write
    can land twice. Method: reset the first CompleteMultipartUpload after two requests
    on a pooled connection; the write succeeds with no error and upstream saw it twice."""
    key = f"{prefix}/x"
    arrow = arrow_fs_for(proxy, "subject", attempts_max=1)
    proxy.add_rule(Rule(LoseResponse("reset"), Match(operation="CompleteMultipartUpload"),
                        nth=1))
    with arrow.open_output_stream(f"{BUCKET}/{key}") as out:
        out.write(b"ours")
    assert upstream_body(moto_s3, key) == b"ours"
    assert entries(proxy, "CompleteMultipartUpload") == [
        (200, "reset", "lose_response:reset"), (200, 200, None)]


# -- gates force interleavings between clients ----------------------------------------------

@pytest.mark.parametrize("held", ["a", "b"])
def test_gate_forces_who_wins_a_put_if_absent_race(proxy, store_for, prefix, held):
    """Goal: a gate decides the order of two clients' conditional PUTs, hence the winner.
    Method: hold one client's PUT at the proxy, let the other finish, release; the held one loses."""
    location = f"s3://{BUCKET}/{prefix}/m.json"
    stores = {name: store_for(proxy.endpoint_url, name) for name in ("a", "b")}
    free = "b" if held == "a" else "a"
    gate = proxy.add_gate(Match(operation="ConditionalPutObject", client=held))
    outcome: dict = {}

    def held_write() -> None:
        try:
            outcome["info"] = stores[held].put_if_absent(location, held.encode())
        except AlreadyExists as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=held_write)
    thread.start()
    assert gate.wait_arrived(HOLD_S_MAX)
    stores[free].put_if_absent(location, free.encode())
    gate.release()
    thread.join(HOLD_S_MAX)
    assert isinstance(outcome.get("error"), AlreadyExists), outcome
    assert stores[free].get(location) == free.encode()
    puts = proxy.history(["ConditionalPutObject"])
    assert [(e.client, e.returned) for e in puts] == [(held, 412), (free, 200)]
    assert puts[0].index < puts[1].index  # the held one arrived first, and still lost


def test_response_gate_shows_a_write_before_its_ack(proxy, moto_s3, store_for, arrow_fs_for,
                                                    prefix):
    """Goal: a write is visible to other clients before its writer hears back. Method: gate
    boto3's PUT after upstream applied it; pyarrow reads the object meanwhile; then release."""
    key = f"{prefix}/m.json"
    writer = store_for(proxy.endpoint_url, "writer")
    reader = arrow_fs_for(proxy, "reader")
    gate = proxy.add_gate(Match(operation="ConditionalPutObject", client="writer"),
                          stage="response")
    thread = threading.Thread(target=writer.put_if_absent,
                              args=(f"s3://{BUCKET}/{key}", b"visible"))
    thread.start()
    assert gate.wait_arrived(HOLD_S_MAX)
    with reader.open_input_stream(f"{BUCKET}/{key}") as stream:
        assert stream.read() == b"visible"
    gate.release()
    thread.join(HOLD_S_MAX)
    assert not thread.is_alive()
    done = sorted((e for e in proxy.history()
                   if e.operation in ("ConditionalPutObject", "GetObject")),
                  key=lambda e: e.end_s)
    assert [(e.client, e.operation) for e in done] == [("reader", "GetObject"),
                                                       ("writer", "ConditionalPutObject")]
    assert done[1].index < done[0].index  # the write arrived first, was answered last


def test_gate_can_hold_several_requests(proxy, store_for, prefix):
    """Goal: a gate with count=2 holds two requests, then passes later ones. Method: two held
    writers, a third passes, release."""
    stores = [store_for(proxy.endpoint_url, f"w{i}") for i in range(3)]
    gate = proxy.add_gate(Match(operation="ConditionalPutObject"), count=2)
    threads = [threading.Thread(target=stores[i].put_if_absent,
                                args=(f"s3://{BUCKET}/{prefix}/{i}", b"x")) for i in range(2)]
    for t in threads:
        t.start()
    assert gate.wait_arrived(HOLD_S_MAX)
    stores[2].put_if_absent(f"s3://{BUCKET}/{prefix}/2", b"x")  # not held: the gate is full
    gate.release()
    for t in threads:
        t.join(HOLD_S_MAX)
    faults = {e.client: e.fault for e in proxy.history(["ConditionalPutObject"])}
    assert faults == {"w0": "gate", "w1": "gate", "w2": None}


# -- the history --------------------------------------------------------------------------

def test_history_records_every_exchange(moto_s3, prefix):
    """Goal: each request is recorded with client, operation, key, conditions, upstream status,
    returned status and fault. Method: a scripted boto3 session through a proxy whose clock is a
    counter, so the times are exact."""
    ticks = itertools.count()
    with FaultProxy(moto_s3.endpoint_url, clock=lambda: float(next(ticks))) as proxy:
        s3 = make_client(proxy.endpoint_url, access_key="h")
        key = f"{prefix}/k"
        etag = s3.put_object(Bucket=BUCKET, Key=key, Body=b"1", IfNoneMatch="*")["ETag"]
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"2", IfMatch=etag)
        proxy.add_rule(Rule(Reject(503), Match(operation="HeadObject"), nth=1))
        with pytest.raises(ClientError):
            s3.head_object(Bucket=BUCKET, Key=key)
        with pytest.raises(ClientError):
            s3.get_object(Bucket=BUCKET, Key=f"{prefix}/missing")
        s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)
        s3.delete_object(Bucket=BUCKET, Key=key)
        history = proxy.history()
    assert history == [
        Exchange(0, 0.0, 1.0, "h", "PUT", "ConditionalPutObject", BUCKET, key, None, "*", 200, 200, None),
        Exchange(1, 2.0, 3.0, "h", "PUT", "ConditionalPutObject", BUCKET, key, etag, None, 200, 200, None),
        Exchange(2, 4.0, 5.0, "h", "HEAD", "HeadObject", BUCKET, key, None, None, None, 503, "reject:503"),
        Exchange(3, 6.0, 7.0, "h", "GET", "GetObject", BUCKET, f"{prefix}/missing", None, None, 404, 404, None),
        Exchange(4, 8.0, 9.0, "h", "GET", "ListObjectsV2", BUCKET, None, None, None, 200, 200, None),
        Exchange(5, 10.0, 11.0, "h", "DELETE", "DeleteObject", BUCKET, key, None, None, 204, 204, None),
    ]


# -- rule matching -----------------------------------------------------------------------------

def _heads(s3, key: str, count: int) -> list[bool]:
    results = []
    for _ in range(count):
        try:
            s3.head_object(Bucket=BUCKET, Key=key)
            results.append(True)
        except ClientError:
            results.append(False)
    return results


def test_rule_fires_on_the_nth_match_only(proxy, moto_s3, prefix):
    """Goal: nth selects one occurrence. Method: reject the 2nd HeadObject of three."""
    key = f"{prefix}/k"
    moto_s3.client().put_object(Bucket=BUCKET, Key=key, Body=b"1")
    rule = proxy.add_rule(Rule(Reject(503), Match(operation="HeadObject"), nth=2))
    assert _heads(make_client(proxy.endpoint_url), key, 3) == [True, False, True]
    assert (rule.matched, rule.fired) == (3, 1)


def test_rule_times_bounds_the_firings(proxy, moto_s3, prefix):
    """Goal: times limits how often a rule fires. Method: times=2 over four HeadObjects."""
    key = f"{prefix}/k"
    moto_s3.client().put_object(Bucket=BUCKET, Key=key, Body=b"1")
    proxy.add_rule(Rule(Reject(500), Match(operation="HeadObject"), times=2))
    assert _heads(make_client(proxy.endpoint_url), key, 4) == [False, False, True, True]


def test_rule_matches_client_key_glob_and_operation_set(proxy, moto_s3, prefix):
    """Goal: client, key glob and a set of operations all narrow a rule. Method: one rule, requests
    that differ in one attribute each."""
    meta, data = f"{prefix}/metadata/v1.json", f"{prefix}/data/f.parquet"
    for key in (meta, data):
        moto_s3.client().put_object(Bucket=BUCKET, Key=key, Body=b"1")
    proxy.add_rule(Rule(Reject(503), Match(operation=frozenset({"HeadObject", "GetObject"}),
                                           key="*/metadata/*.json", client="b")))
    a, b = make_client(proxy.endpoint_url, access_key="a"), make_client(proxy.endpoint_url,
                                                                         access_key="b")
    assert _heads(a, meta, 1) == [True]
    assert _heads(b, data, 1) == [True]
    assert _heads(b, meta, 1) == [False]
    with pytest.raises(ClientError):
        b.get_object(Bucket=BUCKET, Key=meta)
    b.list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/metadata/")  # not in the operation set
    assert [e.fault for e in proxy.history()] == [None, None, "reject:503", "reject:503", None]


def test_client_header_names_the_client(proxy, store_for, prefix):
    """Goal: the x-icefloe-client header takes precedence over the access key id. Method: a store
    with client_name through the proxy."""
    tagged = store_for(proxy.endpoint_url, "key-id", client_name="catalog-writer")
    tagged.put_if_absent(f"s3://{BUCKET}/{prefix}/x", b"1")
    assert [e.client for e in proxy.history()] == ["catalog-writer"]


def test_probabilistic_rules_replay_from_the_seed(moto_s3, prefix):
    """Goal: a probabilistic rule draws from the seed, so a sequential run replays exactly.
    Method: the same 24 HeadObjects through two proxies with seed 7."""
    key = f"{prefix}/k"
    moto_s3.client().put_object(Bucket=BUCKET, Key=key, Body=b"1")
    runs = []
    for _ in range(2):
        with FaultProxy(moto_s3.endpoint_url, seed=7) as proxy:
            proxy.add_rule(Rule(Reject(503), Match(operation="HeadObject"), probability=0.5))
            runs.append(_heads(make_client(proxy.endpoint_url), key, 24))
    assert runs[0] == runs[1]
    assert set(runs[0]) == {True, False}, runs[0]   # the rule fired on some requests, not all


def test_forward_proxy_mode(proxy, moto_s3, prefix):
    """Goal: clients may use the proxy as an HTTP proxy (signing the upstream's Host). Method:
    boto3 with endpoint = moto and proxies = the proxy; the request is recorded and applied."""
    key = f"{prefix}/x"
    s3 = make_client(moto_s3.endpoint_url, access_key="fwd", proxies={"http": proxy.endpoint_url})
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"via proxy")
    assert upstream_body(moto_s3, key) == b"via proxy"
    assert [(e.client, e.operation, e.key) for e in proxy.history()] == [
        ("fwd", "PutObject", key)]


# -- framing ---------------------------------------------------------------------------------

def test_chunked_request_body_is_forwarded(proxy, moto_s3, prefix):
    """Goal: a chunked request body reaches upstream intact. Method: a raw HTTP/1.1 PUT with
    Transfer-Encoding: chunked through the proxy; read the object around the proxy."""
    key = f"{prefix}/chunked"
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=HOLD_S_MAX)
    try:
        conn.putrequest("PUT", f"/{BUCKET}/{key}")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        for chunk in (b"hello, ", b"chunked ", b"world"):
            conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        conn.send(b"0\r\n\r\n")
        assert conn.getresponse().status == 200
    finally:
        conn.close()
    assert upstream_body(moto_s3, key) == b"hello, chunked world"
    assert [(e.operation, e.client) for e in proxy.history()] == [("PutObject", None)]


def test_expect_continue_body_is_forwarded(proxy, moto_s3, prefix):
    """Goal: a PUT sent with Expect: 100-continue (boto3 does so for file-like bodies) works.
    Method: boto3 put_object with a BytesIO body through the proxy."""
    key = f"{prefix}/expect"
    make_client(proxy.endpoint_url).put_object(Bucket=BUCKET, Key=key,
                                               Body=io.BytesIO(b"e" * 3000))
    assert upstream_body(moto_s3, key) == b"e" * 3000


def test_remove_rule_removes_that_rule_only(proxy, moto_s3, prefix):
    """Goal: rules are identified by identity, so removing one of two equal rules keeps the other.
    Method: add two identical reject rules, remove the first, the second still fires."""
    key = f"{prefix}/k"
    moto_s3.client().put_object(Bucket=BUCKET, Key=key, Body=b"1")
    first = proxy.add_rule(Rule(Reject(503), Match(operation=["HeadObject"]), times=1))
    second = proxy.add_rule(Rule(Reject(503), Match(operation=["HeadObject"]), times=1))
    proxy.remove_rule(first)
    assert _heads(make_client(proxy.endpoint_url), key, 2) == [False, True]
    assert (first.fired, second.fired) == (0, 1)


def test_gate_nth_skips_earlier_matches(proxy, store_for, prefix):
    """Goal: a gate with nth=2 lets the first match pass and holds the second. Method: two
    sequential conditional PUTs, the second in a thread, checked held, then released."""
    a = store_for(proxy.endpoint_url, "a")
    gate = proxy.add_gate(Match(operation="ConditionalPutObject", client="a"), nth=2)
    a.put_if_absent(f"s3://{BUCKET}/{prefix}/1", b"x")  # passes: first match
    thread = threading.Thread(target=a.put_if_absent, args=(f"s3://{BUCKET}/{prefix}/2", b"x"))
    thread.start()
    assert gate.wait_arrived(HOLD_S_MAX)
    assert [e.key for e in proxy.history()] == [f"{prefix}/1"]  # the second is still held
    gate.release()
    thread.join(HOLD_S_MAX)
    assert [(e.key, e.fault) for e in proxy.history()] == [(f"{prefix}/1", None),
                                                           (f"{prefix}/2", "gate")]


def test_first_rule_that_fires_decides_and_later_rules_keep_their_turn(proxy, moto_s3, prefix):
    """Goal: when two rules match, only the first that fires is applied and the other's `times`
    is not used up. Method: a reject rule then a reset rule, both times=1, on three HEADs."""
    key = f"{prefix}/k"
    moto_s3.client().put_object(Bucket=BUCKET, Key=key, Body=b"1")
    first = proxy.add_rule(Rule(Reject(503), Match(operation="HeadObject"), times=1))
    second = proxy.add_rule(Rule(Reset(), Match(operation="HeadObject"), times=1))
    s3 = make_client(proxy.endpoint_url)
    assert _heads(s3, key, 1) == [False]
    with pytest.raises(BotoCoreError):
        s3.head_object(Bucket=BUCKET, Key=key)
    assert _heads(s3, key, 1) == [True]
    assert [e.fault for e in proxy.history()] == ["reject:503", "reset", None]
    assert (first.matched, first.fired, second.matched, second.fired) == (3, 1, 3, 1)
