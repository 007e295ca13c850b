"""Atomic conditional writes in front of moto: a per-key lock around every mutation.

Real S3 decides a conditional PUT atomically (spec/PROTOCOL.md 2.2: put-if-absent and
compare-and-swap are linearizable per key). moto checks the
condition and then writes without a lock (moto/s3/responses.py `put_object`: a
`get_object` check, then `backend.put_object`), so two racing `If-None-Match: *`
PUTs can both succeed. This WSGI middleware wraps moto's application and holds a
lock per (bucket, key) across the whole request for every operation that changes a
key, so moto's check-then-write runs alone for that key. It also counts every request
server-side by (method, operation, client) for benchmarks.

The lock is held until the response body has been produced, because a WSGI app may
do its work lazily while its body is iterated.
"""
from __future__ import annotations

import io
import threading
import xml.etree.ElementTree as ET
from collections import Counter
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import quote

from icefloe.conformance.testing.s3_requests import KEY_MUTATIONS, S3Request, describe

LockKey = tuple[str, str]

# A DeleteObjects body names at most 1000 keys (S3's limit); refuse to buffer more.
DELETE_OBJECTS_BODY_BYTES_MAX = 4 * 1024 * 1024
# A request that waits this long for a key answers 503 SlowDown (not applied) rather
# than queueing without bound behind a stuck writer.
LOCK_WAIT_S_MAX = 60.0

SLOW_DOWN_BODY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
                  b"<Message>Waited too long for a lock on the key.</Message></Error>")


class LockTimeout(Exception):
    pass


class KeyLocks:
    """Mutual exclusion per key, with the number of waiters observable so that a
    test can tell "every other racer is blocked on this key" without sleeping.

    Entries exist only while a key is held or awaited, so the table is bounded by
    the number of in-flight requests."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._held: set[LockKey] = set()
        self._waiting: Counter = Counter()

    def acquire(self, key: LockKey, timeout_s: float = LOCK_WAIT_S_MAX) -> None:
        """Take `key`, or raise LockTimeout after `timeout_s`."""
        with self._cond:
            self._waiting[key] += 1
            self._cond.notify_all()
            free = self._cond.wait_for(lambda: key not in self._held, timeout_s)
            self._waiting[key] -= 1
            if not self._waiting[key]:
                del self._waiting[key]
            if not free:
                raise LockTimeout(f"{key} held for more than {timeout_s} s")
            self._held.add(key)
            self._cond.notify_all()

    def release(self, key: LockKey) -> None:
        with self._cond:
            assert key in self._held, f"release of a key not held: {key}"
            self._held.remove(key)
            self._cond.notify_all()

    @contextmanager
    def holding(self, keys: Iterable[LockKey],
                timeout_s: float = LOCK_WAIT_S_MAX) -> Iterator[None]:
        # One global order (sorted) over keys makes multi-key requests deadlock-free.
        ordered = sorted(set(keys))
        taken: list[LockKey] = []
        try:
            for key in ordered:
                self.acquire(key, timeout_s)
                taken.append(key)
            yield
        finally:
            for key in reversed(taken):
                self.release(key)

    def is_held(self, key: LockKey) -> bool:
        with self._cond:
            return key in self._held

    def waiting(self, key: LockKey) -> int:
        with self._cond:
            return self._waiting[key]

    def wait_for_waiters(self, key: LockKey, count: int, timeout_s: float) -> bool:
        """Block until at least `count` requests wait for `key`; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._waiting[key] >= count, timeout_s)


def _headers_of(environ: dict[str, Any]) -> dict[str, str]:
    headers = {k[5:].replace("_", "-").lower(): v
               for k, v in environ.items() if k.startswith("HTTP_")}
    for name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(name):
            headers[name.replace("_", "-").lower()] = environ[name]
    return headers


def request_of(environ: dict[str, Any]) -> S3Request:
    raw_uri = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw_uri:
        path = raw_uri.split("?", 1)[0]
    else:
        path = quote(environ.get("PATH_INFO", "").encode("latin-1"))
    return describe(environ.get("REQUEST_METHOD", "GET"), path,
                     environ.get("QUERY_STRING", ""), _headers_of(environ))


def _delete_objects_keys(environ: dict[str, Any]) -> list[str]:
    """Read the keys of a DeleteObjects body and put the body back for moto."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if length <= 0 or length > DELETE_OBJECTS_BODY_BYTES_MAX:
        return []
    body = environ["wsgi.input"].read(length)
    environ["wsgi.input"] = io.BytesIO(body)
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return []  # moto will reject the malformed body itself
    return [el.text or "" for el in root.iter() if el.tag.rsplit("}", 1)[-1] == "Key"]


class AtomicKeysMiddleware:
    """WSGI middleware: per-key serialization of mutations plus request counting."""

    def __init__(self, app: Callable[..., Iterable[bytes]],
                 lock_wait_s_max: float = LOCK_WAIT_S_MAX):
        self.app = app
        self.lock_wait_s_max = lock_wait_s_max
        self.locks = KeyLocks()
        self._counts: Counter = Counter()
        self._counts_lock = threading.Lock()

    # -- server-side request counting ------------------------------------------------

    def counts(self) -> Counter:
        """Requests seen so far, keyed by (method, operation, client)."""
        with self._counts_lock:
            return Counter(self._counts)

    # -- WSGI ------------------------------------------------------------------------

    def lock_keys(self, request: S3Request, environ: dict[str, Any]) -> list[LockKey]:
        if request.bucket is None:
            return []
        if request.operation in KEY_MUTATIONS and request.key is not None:
            return [(request.bucket, request.key)]
        if request.operation == "DeleteObjects":
            return [(request.bucket, key) for key in _delete_objects_keys(environ)]
        return []

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        request = request_of(environ)
        with self._counts_lock:
            self._counts[(request.method, request.operation, request.client)] += 1
        keys = self.lock_keys(request, environ)
        if not keys:
            return self.app(environ, start_response)
        try:
            with self.locks.holding(keys, self.lock_wait_s_max):
                result = self.app(environ, start_response)
                try:
                    body = b"".join(result)
                finally:
                    close = getattr(result, "close", None)
                    if close is not None:
                        close()
        except LockTimeout:
            start_response("503 Service Unavailable", [
                ("Content-Type", "application/xml"),
                ("Content-Length", str(len(SLOW_DOWN_BODY)))])
            return [SLOW_DOWN_BODY]
        return [body]
