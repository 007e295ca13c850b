"""Commit faults at a REST catalog, per writer (issue 13 item 2; spec/PROTOCOL.md 13; the
model's SwapFails, AckLost, SwapDelayed then Deliver or Drop): test infrastructure, an ASGI
layer the harness puts in front of a REST catalog. impl never imports it.

Two placements, one fault engine: `RestFaults(app)` wraps `icefloe serve`'s own Starlette
application in the server the harness starts (conformance.testing.rest_server, `wrap=`),
and `RestFaults(Upstream(url))` is a fault-injecting HTTP proxy in front of somebody else's
catalog (`icefloe conform --rest-uri`). Writers are told apart by the `X-Icefloe-Writer`
header or by their bearer token (`tokens`: token -> writer).

Fault kinds, taken by the writer's next matching request (a commit: POST to a table or to
/v1/transactions/commit, unless the Match says otherwise):
  reject       409 CommitFailedException, not forwarded (not applied; the client may retry);
  fail_before  500 / 502 / 503 / 504, not forwarded (not applied; the client cannot know);
  fail_after   forwarded and applied, then 500 / 502 / 504 instead of the answer;
  lost         forwarded and applied, then the connection is dropped mid-answer;
  delay        the client gets 503 (or, with `hold_s`, waits past its own timeout) at
               once; the request is parked and applied later, when the harness calls
               `deliver(request_id)` (or never: `drop(request_id)`);
  duplicate    forwarded twice (a retransmission); the client gets the first answer;
  gate         (`add_gate`) held before forwarding until `Gate.release()`; the harness may
               decide the held request's fault only then, `Gate.release(fault)` (a
               lockstep holds a writer's commit, then chooses what happens to it).
Every request is recorded in `history()` as an Exchange: who, what, which fault, what the
client got and whether the upstream saw it.
"""
from __future__ import annotations

import asyncio
import fnmatch
import itertools
import json
import threading
from dataclasses import dataclass, field

REJECT, FAIL_BEFORE, FAIL_AFTER, LOST, DELAY, DUPLICATE = (
    "reject", "fail_before", "fail_after", "lost", "delay", "duplicate")
KINDS = (REJECT, FAIL_BEFORE, FAIL_AFTER, LOST, DELAY, DUPLICATE)
UNKNOWN_STATUSES = (500, 502, 504)
WRITER_HEADER = "x-icefloe-writer"
GATE_HOLD_S_MAX = 120.0
PARKED_MAX = 1024


@dataclass(frozen=True)
class Fault:
    kind: str
    status: int = 500           # fail_before / fail_after / delay: what the client gets
    hold_s: float = 0.0         # delay: hold the client this long before its 503 (past its timeout)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"fault kind {self.kind!r}: one of {KINDS}")
        if self.kind == FAIL_AFTER and self.status not in UNKNOWN_STATUSES:
            raise ValueError(f"an applied commit is answered 500, 502 or 504, not {self.status}")


@dataclass(frozen=True)
class Match:
    """Which requests a rule or gate takes: a writer (None: any), a method and a path glob
    (default: the commit endpoints)."""
    writer: int | None = None
    method: str = "POST"
    path: str | None = None

    def __call__(self, writer, method: str, path: str) -> bool:
        if self.writer is not None and writer != self.writer:
            return False
        if method != self.method:
            return False
        if self.path is not None:
            return fnmatch.fnmatchcase(path, self.path)
        return is_commit(method, path)


def is_commit(method: str, path: str) -> bool:
    parts = path.rstrip("/").split("/")
    return method == "POST" and (path.endswith("/transactions/commit")
                                 or (len(parts) >= 2 and parts[-2] == "tables" and parts[-1] != "rename"))


@dataclass
class Rule:
    fault: Fault
    match: Match = field(default_factory=Match)
    nth: int = 1          # the nth matching request is the first faulted
    times: int = 1        # then this many in a row (0: every one after)
    seen: int = 0
    fired: int = 0

    def take(self, writer, method, path) -> bool:
        if not self.match(writer, method, path):
            return False
        self.seen += 1
        if self.seen < self.nth or (self.times and self.fired >= self.times):
            return False
        self.fired += 1
        return True


class Gate:
    def __init__(self, match: Match):
        self.match = match
        self.arrived = threading.Event()
        self.released = threading.Event()
        self.fault: Fault | None = None          # chosen at release, taken over any rule's
        self.exchange: Exchange | None = None    # the request it holds, once arrived
        self.body: bytes | None = None           # and that request's body

    def wait_arrived(self, timeout: float | None = None) -> bool:
        return self.arrived.wait(timeout)

    def release(self, fault: Fault | None = None) -> None:
        """Let the held request go on; with `fault`, it meets that fault."""
        if fault is not None:
            self.fault = fault
        self.released.set()


@dataclass
class Exchange:
    id: int
    writer: int | None
    method: str
    path: str
    fault: str | None
    client_status: int | None = None       # None: the connection was dropped, or parked
    upstream_statuses: list = field(default_factory=list)   # one per delivery upstream
    key: str | None = None                 # its Idempotency-Key

    @property
    def applied(self) -> bool:
        """Whether the upstream took it with a 2xx (a commit that landed)."""
        return any(200 <= s < 300 for s in self.upstream_statuses)


class Dropped(Exception):
    """Raised after the answer started: the server drops the connection (a lost response)."""


def _error_body(status: int, kind: str, message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": status}}).encode()


class RestFaults:
    def __init__(self, app, tokens: dict | None = None):
        self.app, self.tokens = app, dict(tokens or {})
        self._lock = threading.Lock()
        self._rules: list[Rule] = []
        self._gates: list[Gate] = []
        self._history: list[Exchange] = []
        self._parked: dict[int, tuple] = {}
        self._ids = itertools.count(1)

    # -- the harness's side -------------------------------------------------------------

    def add_rule(self, rule: Rule) -> Rule:
        with self._lock:
            self._rules.append(rule)
        return rule

    def remove_rule(self, rule: Rule) -> None:
        with self._lock:
            if rule in self._rules:
                self._rules.remove(rule)

    def add_gate(self, match: Match) -> Gate:
        gate = Gate(match)
        with self._lock:
            self._gates.append(gate)
        return gate

    def remove_gate(self, gate: Gate) -> None:
        """Take a gate away (a request already held by it stays held until released)."""
        with self._lock:
            if gate in self._gates:
                self._gates.remove(gate)

    def history(self) -> list[Exchange]:
        with self._lock:
            return list(self._history)

    def parked(self) -> list[int]:
        with self._lock:
            return sorted(self._parked)

    def deliver(self, request_id: int, timeout_s: float = 60.0) -> int | None:
        """Apply a delayed request now; returns the upstream's status."""
        with self._lock:
            event, done, box = self._parked.pop(request_id)
        event.set()
        done.wait(timeout_s)
        return box.get("status")

    def drop(self, request_id: int) -> None:
        """A delayed request that never arrives."""
        with self._lock:
            event, done, box = self._parked.pop(request_id)
        box["dropped"] = True
        event.set()

    def close(self) -> None:
        for request_id in self.parked():
            self.drop(request_id)
        with self._lock:
            gates, self._gates = self._gates, []
        for gate in gates:
            gate.release()

    # -- the request's side ---------------------------------------------------------------

    def writer_of(self, headers: dict):
        raw = headers.get(WRITER_HEADER)
        if raw is not None:
            try:
                return int(raw)
            except ValueError:
                return raw
        auth = headers.get("authorization", "")
        return self.tokens.get(auth[7:].strip()) if auth.startswith("Bearer ") else None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        body = await _read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        method, path = scope["method"], scope["path"]
        writer = self.writer_of(headers)
        with self._lock:
            rule = next((r for r in self._rules if r.take(writer, method, path)), None)
            gate = next((g for g in self._gates if g.match(writer, method, path) and not g.arrived.is_set()), None)
            x = Exchange(next(self._ids), writer, method, path, rule.fault.kind if rule else None,
                         key=headers.get("idempotency-key"))
            self._history.append(x)
        if gate is not None:
            gate.exchange, gate.body = x, body
            gate.arrived.set()
            await asyncio.to_thread(gate.released.wait, GATE_HOLD_S_MAX)
            if gate.fault is not None:
                rule, x.fault = Rule(gate.fault), gate.fault.kind
        fault = rule.fault if rule else None
        kind = fault.kind if fault else None
        if kind == REJECT:
            return await self._answer(send, x, 409, _error_body(409, "CommitFailedException", "injected: rejected"))
        if kind == FAIL_BEFORE:
            return await self._answer(send, x, fault.status, _error_body(
                fault.status, "ServiceUnavailableException" if fault.status == 503 else "CommitStateUnknownException",
                "injected: failed before reaching the catalog"))
        if kind == DELAY:
            return await self._delay(scope, body, send, x, fault)
        status, response_headers, chunks = await self._forward(scope, body, x)
        if kind == DUPLICATE:
            await self._forward(scope, body, x)
        if kind == FAIL_AFTER:
            return await self._answer(send, x, fault.status, _error_body(
                fault.status, "CommitStateUnknownException", "injected: applied, then the answer failed"))
        if kind == LOST:
            whole = b"".join(chunks)
            if not whole:
                # An answer without a body (a transaction's 204) is whole once its status line
                # is out: the client would see it and keep the connection for its next request,
                # which the drop then resets. Claim a body and cut it, so the answer is lost.
                status = 200 if status in (204, 304) else status
                response_headers = [(k, v) for k, v in response_headers if k.lower() != b"content-length"]
                response_headers.append((b"content-length", b"2"))
                whole = b"{}"
            await send({"type": "http.response.start", "status": status, "headers": response_headers})
            await send({"type": "http.response.body", "body": whole[:1], "more_body": True})
            raise Dropped(f"injected: request {x.id} applied, its answer dropped")
        x.client_status = status
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        await send({"type": "http.response.body", "body": b"".join(chunks)})

    async def _answer(self, send, x: Exchange, status: int, body: bytes) -> None:
        x.client_status = status
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def _forward(self, scope, body: bytes, x: Exchange):
        captured = {"status": None, "headers": [], "chunks": []}
        sent = False

        async def receive():
            nonlocal sent
            if sent:
                await asyncio.sleep(3600)   # the app does not read past the body
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def capture(message):
            if message["type"] == "http.response.start":
                captured["status"], captured["headers"] = message["status"], message.get("headers", [])
            elif message["type"] == "http.response.body":
                captured["chunks"].append(message.get("body", b""))
        await self.app(scope, receive, capture)
        x.upstream_statuses.append(captured["status"])
        return captured["status"], captured["headers"], captured["chunks"]

    async def _delay(self, scope, body, send, x: Exchange, fault: Fault) -> None:
        event, done, box = threading.Event(), threading.Event(), {}
        with self._lock:
            if len(self._parked) >= PARKED_MAX:
                raise RuntimeError("too many delayed requests parked")
            self._parked[x.id] = (event, done, box)

        async def later():
            await asyncio.to_thread(event.wait)
            try:
                if not box.get("dropped"):
                    box["status"] = (await self._forward(scope, body, x))[0]
            finally:
                done.set()
        asyncio.get_running_loop().create_task(later())
        if fault.hold_s:
            await asyncio.sleep(fault.hold_s)
        await self._answer(send, x, 503, _error_body(503, "ServiceUnavailableException",
                                                     "injected: timed out; the request is still in flight"))


async def _read_body(receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


class Upstream:
    """An ASGI app that forwards every request to a REST catalog at `url` (the proxy
    placement of RestFaults, for `icefloe conform --rest-uri`)."""

    def __init__(self, url: str, timeout_s: float = 60.0):
        from urllib.parse import urlsplit
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"--rest-uri {url!r}: an http://host:port URI (the proxy speaks plain HTTP)")
        self.host, self.port, self.base = parts.hostname, parts.port or 80, parts.path.rstrip("/")
        self.timeout_s = timeout_s

    async def __call__(self, scope, receive, send):
        body = await _read_body(receive)
        status, headers, data = await asyncio.to_thread(self._request, scope, body)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    def _request(self, scope, body: bytes):
        import http.client
        target = self.base + scope["path"] + (("?" + scope["query_string"].decode()) if scope["query_string"] else "")
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        try:
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]
                       if k.lower() not in (b"host", b"connection", b"content-length", b"transfer-encoding")}
            conn.request(scope["method"], target, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            out = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in r.getheaders()
                   if k.lower() not in ("connection", "transfer-encoding", "content-length", "keep-alive")]
            out.append((b"content-length", str(len(data)).encode()))
            return r.status, out, data
        finally:
            conn.close()
