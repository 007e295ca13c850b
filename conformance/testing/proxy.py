"""A fault-injecting S3 proxy: survivable faults and forced interleavings for
black-box S3 clients (boto3, pyarrow's S3FileSystem, pyiceberg's S3 FileIO).

The proxy listens on 127.0.0.1 and forwards every request to one upstream S3
endpoint. Rules (matched by operation, bucket, key glob, client and occurrence)
inject a fault per request; gates hold matching requests until the test releases
them. Every request is recorded as an `Exchange` in `history()`.

Faults (spec/PROTOCOL.md section 13, each survivable; TLA+ action in brackets):
- `Reject(503 | 500)`: answer with an S3 XML error before forwarding (not applied)
  [`SwapFails`, `WriteFails`];
- `Reset()`: read the whole request, then reset the connection (TCP RST) without
  forwarding (not applied, but the client cannot know that) [`SwapFails`];
- `LoseResponse("500" | "reset")`: forward, let upstream apply, then answer 500 or
  reset the connection (applied, and the client does not know) [`AckLost`];
- `Delay(seconds)`: wait, then forward;
- gates (`add_gate`): hold a request before forwarding (`stage="request"`) or after
  upstream answered (`stage="response"`) until `Gate.release()` [`SwapDelayed`
  then `Deliver`; with the gate's timeout, `Drop`].

SigV4 signatures stay valid because nothing that is signed changes. SigV4 signs
the method, the path and query exactly as sent, the `Host` header, every
`x-amz-*` header and the payload hash. The proxy forwards the request target
byte-for-byte, every end-to-end header unchanged (Host included) and the body's
bytes. Two ways to point a client at it:
- reverse proxy (the usual one): the client's endpoint is the proxy, so it signs
  `Host: 127.0.0.1:<proxy port>`; the proxy forwards that Host unchanged and the
  upstream verifies the signature against the Host it receives. This suits any
  S3-compatible server addressed path-style that does not route by Host (moto,
  MinIO). Rewriting Host to the upstream's would break the signature.
- forward proxy: the client's endpoint is the upstream and its HTTP proxy is this
  proxy (boto3 `Config(proxies={"http": url})`); the request line then carries an
  absolute URL, the client signs the upstream's Host, and the proxy forwards the
  path. This is the way for a server that routes by Host. Plain HTTP only (no
  CONNECT tunnel, hence no TLS).
Only hop-by-hop headers are dropped (Connection, Keep-Alive, Transfer-Encoding,
Expect, ...), none of which SigV4 signs; a chunked request body is re-framed with
Content-Length, which is not signed either.
"""
from __future__ import annotations

import fnmatch
import http.client
import random
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterable
from urllib.parse import urlsplit

from icefloe.conformance.testing.s3_requests import S3Request, describe

HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-connection", "proxy-authorization",
    "proxy-authenticate", "te", "trailer", "trailers", "transfer-encoding", "upgrade",
    "expect",
})
REQUEST_BODY_BYTES_MAX = 1 << 30
CHUNKS_MAX = 1 << 20
TRAILERS_MAX = 64
GATE_HOLD_S_MAX = 60.0
UPSTREAM_TIMEOUT_S = 60.0
# How often serve_forever looks for a shutdown request: stop() waits up to this long.
SERVE_POLL_S = 0.05

ERROR_CODES = {500: ("InternalError", "We encountered an internal error. Please try again."),
               503: ("SlowDown", "Please reduce your request rate."),
               403: ("AccessDenied", "Access Denied")}


# -- faults ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Reject:
    """Answer `status` (503 SlowDown, 500 InternalError, or 403 AccessDenied: a permission
    the client lacks) without forwarding."""
    status: int = 503

    def __post_init__(self) -> None:
        assert self.status in ERROR_CODES, f"reject status must be one of {set(ERROR_CODES)}"

    def label(self) -> str:
        return f"reject:{self.status}"


@dataclass(frozen=True)
class Reset:
    """Reset the connection without forwarding."""

    def label(self) -> str:
        return "reset"


@dataclass(frozen=True)
class LoseResponse:
    """Forward (upstream applies), then answer 500 or reset: the ack is lost. With
    `statuses`, only an upstream answer of one of those statuses is lost (e.g. {200}: a
    write that was applied); any other passes through as if no fault had been drawn, and
    the schedule that drew it is told (`withdraw`)."""
    then: str = "reset"
    statuses: frozenset | None = None

    def __post_init__(self) -> None:
        assert self.then in ("500", "reset"), "then must be '500' or 'reset'"

    def label(self) -> str:
        return f"lose_response:{self.then}"


@dataclass(frozen=True)
class Delay:
    """Wait `seconds` before forwarding."""
    seconds: float

    def __post_init__(self) -> None:
        assert 0 <= self.seconds <= GATE_HOLD_S_MAX

    def label(self) -> str:
        return f"delay:{self.seconds:g}"


Fault = Reject | Reset | LoseResponse | Delay


# -- matching -------------------------------------------------------------------------

@dataclass(frozen=True)
class Match:
    """Which requests a rule or gate applies to; None matches anything.
    `operation` is one name or several (see icefloe.conformance.testing.s3_requests); `key` and
    `bucket` are globs (fnmatch, case-sensitive)."""
    operation: str | frozenset[str] | None = None
    key: str | None = None
    bucket: str | None = None
    client: str | None = None

    def __post_init__(self) -> None:
        if self.operation is not None and not isinstance(self.operation, str):
            object.__setattr__(self, "operation", frozenset(self.operation))

    def __call__(self, request: S3Request) -> bool:
        if self.operation is not None:
            names = {self.operation} if isinstance(self.operation, str) else self.operation
            if request.operation not in names:
                return False
        if self.key is not None and (request.key is None
                                     or not fnmatch.fnmatchcase(request.key, self.key)):
            return False
        if self.bucket is not None and (request.bucket is None
                                        or not fnmatch.fnmatchcase(request.bucket, self.bucket)):
            return False
        if self.client is not None and request.client != self.client:
            return False
        return True


@dataclass(eq=False)  # rules are compared by identity (remove_rule)
class Rule:
    """Apply `fault` to matching requests: only the `nth` match (1-based) if set,
    at most `times` times if set, each with `probability` (seeded draw)."""
    fault: Fault
    match: Match = field(default_factory=Match)
    nth: int | None = None
    times: int | None = None
    probability: float = 1.0
    matched: int = field(default=0, init=False)
    fired: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        assert self.nth is None or self.nth >= 1
        assert self.times is None or self.times >= 0
        assert 0.0 <= self.probability <= 1.0

    def _count(self, request: S3Request) -> bool:
        """Count a match (caller holds the proxy lock)."""
        if not self.match(request):
            return False
        self.matched += 1
        return True

    def _fire(self, rng: random.Random) -> bool:
        """Decide whether to fire on the match just counted (caller holds the lock)."""
        if self.nth is not None and self.matched != self.nth:
            return False
        if self.times is not None and self.fired >= self.times:
            return False
        if self.probability < 1.0 and rng.random() >= self.probability:
            return False
        self.fired += 1
        return True


class Gate:
    """Holds `count` matching requests, from the `nth` match on, until `release()`;
    then it is spent and every later request passes. Held requests give up after
    `hold_s_max` (reset, recorded as fault 'gate-timeout') so a broken test cannot hang."""

    def __init__(self, match: Match, count: int, stage: str, hold_s_max: float, nth: int = 1):
        assert count >= 1 and nth >= 1 and stage in ("request", "response")
        self.match = match
        self.count = count
        self.nth = nth
        self.matched = 0
        self.stage = stage
        self.hold_s_max = hold_s_max
        self.arrived: list[S3Request] = []  # admitted (the gate's slots are taken)
        self.held = 0  # waiting at the gate now or earlier
        self._cond = threading.Condition()
        self._released = False

    def _admit(self, request: S3Request) -> bool:
        """Caller holds the proxy lock."""
        with self._cond:
            if self._released or len(self.arrived) >= self.count or not self.match(request):
                return False
            self.matched += 1
            if self.matched < self.nth:
                return False
            self.arrived.append(request)
            self._cond.notify_all()
            return True

    def _hold(self, stopping: threading.Event) -> bool:
        with self._cond:
            self.held += 1
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._released or stopping.is_set(), self.hold_s_max)
            return self._released

    def wait_arrived(self, timeout: float) -> bool:
        """True once `count` requests are being held at the gate's stage (for a response
        gate: upstream has answered them); False if `timeout` passes first."""
        with self._cond:
            return self._cond.wait_for(lambda: self.held >= self.count, timeout)

    def release(self) -> None:
        with self._cond:
            self._released = True
            self._cond.notify_all()


# -- history --------------------------------------------------------------------------

@dataclass(frozen=True)
class Exchange:
    """One request as the proxy saw it. `upstream_status` is None if it was not
    forwarded (or upstream failed); `returned` is the status sent or 'reset'."""
    index: int
    start_s: float
    end_s: float
    client: str | None
    method: str
    operation: str
    bucket: str | None
    key: str | None
    if_match: str | None
    if_none_match: str | None
    upstream_status: int | None
    returned: int | str
    fault: str | None


# -- the proxy ------------------------------------------------------------------------

class FaultProxy:
    """The proxy: `start()` (or `with`), point clients at `endpoint_url` / `endpoint`,
    inject with `add_rule` and `add_gate`, read `history()`, `stop()`."""

    def __init__(self, upstream_url: str, *, seed: int = 0, host: str = "127.0.0.1",
                 port: int = 0, clock: Callable[[], float] = time.monotonic,
                 gate_hold_s_max: float = GATE_HOLD_S_MAX,
                 upstream_timeout_s: float = UPSTREAM_TIMEOUT_S):
        upstream = urlsplit(upstream_url)
        assert upstream.scheme == "http" and upstream.hostname, "plain http upstream only"
        self.upstream_host = upstream.hostname
        self.upstream_port = upstream.port or 80
        self.host = host
        self.port = port
        self.seed = seed
        self.clock = clock
        self.gate_hold_s_max = gate_hold_s_max
        self.upstream_timeout_s = upstream_timeout_s
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._rules: list[Rule] = []
        self._gates: list[Gate] = []
        self._schedules: list = []   # stateful fault schedules, asked before the rules
        self._in_flight = 0
        self._idle = threading.Condition(self._lock)
        self._history: list[Exchange] = []
        self._next_index = 0
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> "FaultProxy":
        assert self._server is None, "already started"
        handler = type("BoundHandler", (_Handler,), {"proxy": self})
        self._server = _Server((self.host, self.port), handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(SERVE_POLL_S,),
                                        name=f"fault-proxy-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes held gates and delays
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server.close_connections()
            assert self._thread is not None
            self._thread.join()
            self._server = None

    def __enter__(self) -> "FaultProxy":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def endpoint(self) -> str:
        """host:port, as pyarrow's `endpoint_override` wants it."""
        return f"{self.host}:{self.port}"

    # -- control ---------------------------------------------------------------------

    def add_rule(self, rule: Rule) -> Rule:
        with self._lock:
            self._rules.append(rule)
        return rule

    def remove_rule(self, rule: Rule) -> None:
        with self._lock:
            self._rules.remove(rule)

    def add_schedule(self, schedule):
        """A stateful fault schedule: any object with `decide(request, rng) -> Fault | None`,
        asked (under the proxy's lock, with the proxy's seeded draws) before the rules; a
        fault it returns wins. Schedules remember across requests what the rules cannot,
        e.g. a writer whose swap answer was lost and whose read-backs must now fail too
        (icefloe.conformance.testing.unresolved)."""
        assert callable(getattr(schedule, "decide", None)), "a schedule has decide(request, rng)"
        with self._lock:
            self._schedules.append(schedule)
        return schedule

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no request is inside the proxy (a delayed or held one has been
        forwarded and answered); False if `timeout_s` passes first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout_s)

    def add_gate(self, match: Match | None = None, *, count: int = 1, nth: int = 1,
                 stage: str = "request") -> Gate:
        """Hold `count` requests matching `match`, from its `nth` match on, before
        forwarding (`stage="request"`) or after upstream answered (`"response"`)."""
        assert match is None or isinstance(match, Match), "a gate takes a Match, not a Rule"
        gate = Gate(match or Match(), count, stage, self.gate_hold_s_max, nth)
        with self._lock:
            self._gates.append(gate)
        return gate

    def clear(self, seed: int | None = None, *, forget: bool = True) -> None:
        """Drop every rule and schedule, release and drop every gate, forget the history
        (unless `forget=False`: healing, with the record kept); with a `seed`, restart the
        random draws from it (a fresh run on the same proxy)."""
        with self._lock:
            gates, self._gates = self._gates, []
            self._rules = []
            self._schedules = []
            if forget:
                self._history = []
            if seed is not None:
                self.seed = seed
                self._rng = random.Random(seed)
        for gate in gates:
            gate.release()

    def history(self, operations: Iterable[str] | None = None) -> list[Exchange]:
        with self._lock:
            entries = sorted(self._history, key=lambda e: e.index)
        if operations is not None:
            wanted = set(operations)
            entries = [e for e in entries if e.operation in wanted]
        return entries

    # -- per request (called from handler threads) -----------------------------------

    def _plan(self, request: S3Request) -> tuple[int, Gate | None, Fault | None]:
        with self._lock:
            index = self._next_index
            self._next_index += 1
            self._in_flight += 1
            gate = next((g for g in self._gates if g._admit(request)), None)
            fault = None
            for schedule in self._schedules:
                fault = schedule.decide(request, self._rng)
                if fault is not None:
                    break
            for rule in self._rules:
                # Every matching rule counts the request (`nth` is per rule); the first
                # that fires decides, and later rules neither fire nor draw.
                if rule._count(request) and fault is None and rule._fire(self._rng):
                    fault = rule.fault
            return index, gate, fault

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self._history.append(exchange)

    def _withdraw(self, request: S3Request, fault: Fault) -> None:
        """A fault drawn for `request` did not apply after all (LoseResponse.statuses)."""
        with self._lock:
            for schedule in self._schedules:
                withdraw = getattr(schedule, "withdraw", None)
                if withdraw is not None:
                    withdraw(request, fault)

    def _leave(self) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()


def _error_body(status: int, request_id: str) -> bytes:
    code, message = ERROR_CODES[status]
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>{message}</Message>"
            f"<RequestId>{request_id}</RequestId></Error>").encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a connection left open by a client must not block stop()

    def __init__(self, *args: object, **kwargs: object):
        super().__init__(*args, **kwargs)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request, client_address):  # type: ignore[override]
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):  # type: ignore[override]
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End every kept-alive client connection, so no handler thread outlives stop()."""
        with self._open_lock:
            open_now = list(self._open)
        for sock in open_now:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # the client went away (often after a fault we injected)
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as SDK connection pools expect
    proxy: FaultProxy

    def log_message(self, format: str, *args: object) -> None:
        pass  # the history is the log

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without TCP_NODELAY the body waits
        # for the client's delayed ACK (~40 ms per response on Linux loopback).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass  # the connection was reset on purpose

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            for _ in range(CHUNKS_MAX):
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    for _ in range(TRAILERS_MAX + 1):  # trailers, then the blank line
                        if self.rfile.readline() in (b"\r\n", b"\n", b""):
                            return b"".join(parts)
                    raise ValueError("too many trailers")
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            raise ValueError("too many chunks")
        length = int(self.headers.get("Content-Length") or 0)
        assert 0 <= length <= REQUEST_BODY_BYTES_MAX
        return self.rfile.read(length) if length else b""

    def _target(self) -> str:
        if self.path.startswith(("http://", "https://")):  # forward-proxy form
            parts = urlsplit(self.path)
            return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return self.path

    def _handle(self) -> None:
        proxy = self.proxy
        start_s = proxy.clock()
        body = self._read_body()
        target = self._target()
        path, _, query = target.partition("?")
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = describe(self.command, path, query, headers)
        index, gate, fault = proxy._plan(request)
        try:
            self._exchange(request, index, gate, fault, start_s, target, body)
        finally:
            proxy._leave()

    def _exchange(self, request: S3Request, index: int, gate: Gate | None, fault: Fault | None,
                  start_s: float, target: str, body: bytes) -> None:
        proxy = self.proxy
        labels: list[str] = []
        upstream_status: int | None = None

        # Recorded before the client is answered, so a client that has its answer can
        # rely on finding the exchange in the history.
        def record(returned: int | str) -> None:
            proxy._record(Exchange(
                index=index, start_s=start_s, end_s=proxy.clock(), client=request.client,
                method=request.method, operation=request.operation, bucket=request.bucket,
                key=request.key, if_match=request.if_match,
                if_none_match=request.if_none_match, upstream_status=upstream_status,
                returned=returned, fault="+".join(labels) or None))

        if gate is not None and gate.stage == "request":
            labels.append("gate")
            if not gate._hold(proxy._stopping):
                labels.append("gate-timeout")
                record("reset")
                return self._reset()
        if fault is not None:
            labels.append(fault.label())
        if isinstance(fault, Reject):
            record(fault.status)
            return self._reply(fault.status, HTTPStatus(fault.status).phrase,
                               [("Content-Type", "application/xml")],
                               _error_body(fault.status, f"icefloe-proxy-{index}"))
        if isinstance(fault, Reset):
            record("reset")
            return self._reset()
        if isinstance(fault, Delay):
            proxy._stopping.wait(fault.seconds)
        try:
            status, reason, response_headers, payload = self._forward(target, body)
        except (OSError, http.client.HTTPException):
            record(502)
            return self._reply(502, "Bad Gateway", [("Content-Type", "text/plain")],
                               b"upstream unreachable")
        upstream_status = status
        if gate is not None and gate.stage == "response":
            labels.append("gate")
            if not gate._hold(proxy._stopping):
                labels.append("gate-timeout")
                record("reset")
                return self._reset()
        if isinstance(fault, LoseResponse) and fault.statuses is not None \
                and upstream_status not in fault.statuses:
            labels.remove(fault.label())
            proxy._withdraw(request, fault)
            fault = None
        if isinstance(fault, LoseResponse):
            if fault.then == "reset":
                record("reset")
                return self._reset()
            record(500)
            return self._reply(500, "Internal Server Error", [("Content-Type", "application/xml")],
                               _error_body(500, f"icefloe-proxy-{index}"))
        record(status)
        return self._reply(status, reason, response_headers, payload)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _handle

    def _forward(self, target: str, body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        proxy = self.proxy
        conn = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port,
                                          timeout=proxy.upstream_timeout_s)
        try:
            conn.putrequest(self.command, target, skip_host=True, skip_accept_encoding=True)
            has_length = False
            for name, value in self.headers.items():
                lower = name.lower()
                if lower in HOP_BY_HOP:
                    continue
                has_length |= lower == "content-length"
                conn.putheader(name, value)
            if body and not has_length:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body if body else None)
            response = conn.getresponse()
            payload = response.read()
            return response.status, response.reason, response.getheaders(), payload
        finally:
            conn.close()

    def _reply(self, status: int, reason: str, headers: list[tuple[str, str]],
               payload: bytes) -> None:
        self.send_response_only(status, reason)
        bodiless = self.command == "HEAD" or status in (204, 304) or status < 200
        for name, value in headers:
            lower = name.lower()
            if lower in HOP_BY_HOP or (lower == "content-length" and not bodiless):
                continue
            self.send_header(name, value)
        if not bodiless:
            self.send_header("Content-Length", str(len(payload)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if not bodiless and payload:
            self.wfile.write(payload)

    def _reset(self) -> None:
        # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()
