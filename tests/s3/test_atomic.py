"""The atomic middleware: proof that moto alone is not atomic and that the middleware is.

moto's put_object checks If-None-Match / If-Match (responses.py) and later stores the
key (S3Backend.put_object in models.py), with no lock in between. We widen that window
by wrapping S3Backend.put_object: the first racer to pass the check is held there
until every other racer has had its chance to check. Events decide when it goes on,
never sleeps:
- without the middleware, nothing serializes the racers, so the held writer waits
  until a second writer has also passed the check (a latch of 2);
- with it, the held writer holds the key's lock, so it waits until the other N-1
  racers are provably queued on that lock (`KeyLocks.wait_for_waiters`).
"""
from __future__ import annotations

import inspect
import threading
from typing import Callable

import pytest
from botocore.exceptions import ClientError
from moto.s3.models import S3Backend

from icefloe.conformance.testing.moto_server import MotoS3Server, make_client

BUCKET = "icefloe"
RACERS = 8
WINDOW_HOLD_S_MAX = 30  # a safety net against a hang, never what decides the order


class Latch:
    """Opens once `count` parties have arrived; later parties pass at once."""

    def __init__(self, count: int):
        self.count = count
        self.arrived = 0
        self._cond = threading.Condition()

    def arrive_and_wait(self, timeout_s: float) -> bool:
        with self._cond:
            self.arrived += 1
            self._cond.notify_all()
            return self._cond.wait_for(lambda: self.arrived >= self.count, timeout_s)


def widen_window(monkeypatch, key: str, wait: Callable[[], bool]) -> list[bytes]:
    """Hold moto's write of a racer's body to `key` until `wait()` returns; return the list
    of bodies that reached the write, i.e. passed moto's condition check."""
    original = S3Backend.put_object
    reached: list[bytes] = []

    def put_object(self, bucket_name, key_name, value, *args, **kwargs):
        if key_name == key and bytes(value).startswith(b"racer-"):
            reached.append(bytes(value))
            assert wait(), "the widened window never closed"
        return original(self, bucket_name, key_name, value, *args, **kwargs)

    monkeypatch.setattr(S3Backend, "put_object", put_object)
    return reached


def race_puts(endpoint_url: str, key: str, condition: dict) -> list[int]:
    """RACERS threads PUT different bodies to `key` under `condition`; their HTTP statuses."""
    client = make_client(endpoint_url, max_pool_connections=RACERS)  # thread-safe, shared
    start = threading.Barrier(RACERS)
    statuses: list[int] = [0] * RACERS

    def run(i: int) -> None:
        start.wait(timeout=30)
        try:
            response = client.put_object(Bucket=BUCKET, Key=key,
                                             Body=f"racer-{i}".encode(), **condition)
            statuses[i] = response["ResponseMetadata"]["HTTPStatusCode"]
        except ClientError as exc:
            statuses[i] = exc.response["ResponseMetadata"]["HTTPStatusCode"]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(RACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive()
    return statuses


@pytest.fixture
def bare_moto():
    """moto as it comes (no middleware), sharing the process-global state."""
    with MotoS3Server(atomic=False, bucket=BUCKET) as server:
        yield server


CONDITIONS = ["if-none-match", "if-match"]


def prepare(endpoint_url: str, key: str, condition: str) -> dict:
    if condition == "if-none-match":
        return {"IfNoneMatch": "*"}
    etag = make_client(endpoint_url).put_object(Bucket=BUCKET, Key=key, Body=b"base")["ETag"]
    return {"IfMatch": etag}


@pytest.mark.parametrize("condition", CONDITIONS)
def test_bare_moto_lets_two_conditional_puts_win(bare_moto, monkeypatch, prefix, condition):
    """Goal: show moto's conditional PUT is check-then-write, not atomic. Method: 8 racers,
    widened window (latch of 2 between check and write); expect two or more racers past the
    check, each of which wrote, and the rest refused with 412."""
    key = f"{prefix}/k"
    condition_args = prepare(bare_moto.endpoint_url, key, condition)
    latch = Latch(2)
    reached = widen_window(monkeypatch, key, lambda: latch.arrive_and_wait(WINDOW_HOLD_S_MAX))
    statuses = race_puts(bare_moto.endpoint_url, key, condition_args)
    # Every racer that passed the check wrote (`reached`): two or more, the race itself. A
    # writer whose key was replaced while moto still built its answer can get a 500 (moto
    # closes the replaced key's buffer, then reads its etag): it wrote all the same.
    assert len(reached) >= 2, (reached, statuses)
    assert statuses.count(412) == RACERS - len(reached), statuses
    assert statuses.count(200) >= 1 and statuses.count(200) + statuses.count(500) == len(reached), statuses


@pytest.mark.parametrize("condition", CONDITIONS)
def test_middleware_makes_conditional_puts_atomic(moto_s3, monkeypatch, prefix, condition):
    """Goal: with the middleware exactly one conditional PUT wins. Method: 8 racers, same widened
    window, held until the 7 others are queued on the key's lock; expect one 200 and seven 412s."""
    key = f"{prefix}/k"
    condition_args = prepare(moto_s3.endpoint_url, key, condition)
    locks = moto_s3.middleware.locks
    reached = widen_window(monkeypatch, key, lambda: locks.wait_for_waiters(
        (BUCKET, key), RACERS - 1, WINDOW_HOLD_S_MAX))
    statuses = race_puts(moto_s3.endpoint_url, key, condition_args)
    assert statuses.count(200) == 1, statuses
    assert statuses.count(412) == RACERS - 1, statuses
    winner = statuses.index(200)
    assert reached == [f"racer-{winner}".encode()]
    body = make_client(moto_s3.endpoint_url).get_object(Bucket=BUCKET, Key=key)["Body"].read()
    assert body == f"racer-{winner}".encode()


def test_every_key_mutation_runs_under_its_lock(moto_s3, monkeypatch, prefix):
    """Goal: PUT, CopyObject, DeleteObject, DeleteObjects and CompleteMultipartUpload reach moto's
    write with the key's lock held. Method: wrap moto's backend writes and record is_held()."""
    locks = moto_s3.middleware.locks
    observed: list[tuple[str, str, bool]] = []

    def spy(name: str, key_of: Callable):
        original = getattr(S3Backend, name)
        signature = inspect.signature(original)

        def wrapper(self, *args, **kwargs):
            arguments = signature.bind(self, *args, **kwargs).arguments
            for key in key_of(arguments):
                if key.startswith(prefix):
                    observed.append((name, key, locks.is_held((BUCKET, key))))
            return original(self, *args, **kwargs)

        monkeypatch.setattr(S3Backend, name, wrapper)

    spy("put_object", lambda a: [a["key_name"]])
    spy("copy_object", lambda a: [a["dest_key_name"]])
    spy("delete_object", lambda a: [a["key_name"]])
    spy("delete_objects", lambda a: [o["Key"] for o in a["objects"]])

    client = moto_s3.client()
    client.put_object(Bucket=BUCKET, Key=f"{prefix}/a", Body=b"a")
    client.put_object(Bucket=BUCKET, Key=f"{prefix}/sp ace/ü+%.json", Body=b"a")  # encoded
    client.copy_object(Bucket=BUCKET, Key=f"{prefix}/b", CopySource={"Bucket": BUCKET,
                                                                     "Key": f"{prefix}/a"})
    client.delete_object(Bucket=BUCKET, Key=f"{prefix}/b")
    upload = client.create_multipart_upload(Bucket=BUCKET, Key=f"{prefix}/m")
    part = client.upload_part(Bucket=BUCKET, Key=f"{prefix}/m", PartNumber=1,
                              UploadId=upload["UploadId"], Body=b"m" * 10)
    client.complete_multipart_upload(
        Bucket=BUCKET, Key=f"{prefix}/m", UploadId=upload["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    client.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": f"{prefix}/a"},
                                                             {"Key": f"{prefix}/m"}]})
    names = {name for name, _, _ in observed}
    assert {"put_object", "copy_object", "delete_object", "delete_objects"} <= names, observed
    assert ("put_object", f"{prefix}/m", True) in observed  # written by the multipart completion
    assert ("put_object", f"{prefix}/sp ace/ü+%.json", True) in observed
    assert all(held for _, _, held in observed), observed
    assert not any(locks.is_held((BUCKET, key)) for _, key, _ in observed)


def test_a_writer_stuck_on_a_key_gets_slow_down(moto_s3, monkeypatch, prefix):
    """Goal: waiting for a key's lock is bounded: past the bound the request is refused with
    503 SlowDown (not applied). Method: hold the key's lock from the test, lower the bound,
    PUT; then release and PUT again."""
    key = f"{prefix}/k"
    middleware = moto_s3.middleware
    monkeypatch.setattr(middleware, "lock_wait_s_max", 0.01)
    client = moto_s3.client()
    middleware.locks.acquire((BUCKET, key))
    try:
        with pytest.raises(ClientError) as refused:
            client.put_object(Bucket=BUCKET, Key=key, Body=b"x", IfNoneMatch="*")
    finally:
        middleware.locks.release((BUCKET, key))
    assert refused.value.response["Error"]["Code"] == "SlowDown"
    with pytest.raises(ClientError):
        client.head_object(Bucket=BUCKET, Key=key)  # nothing was written
    client.put_object(Bucket=BUCKET, Key=key, Body=b"x", IfNoneMatch="*")
