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

import random
import threading
import time
from typing import Callable, Iterable
from urllib.parse import urlsplit

from icefloe.conformance.testing.proxy_http import _Handler, _Server
from icefloe.conformance.testing.proxy_rules import (  # noqa: F401 - the proxy's public vocabulary
    ERROR_CODES, GATE_HOLD_S_MAX, Delay, Exchange, Fault, Gate, LoseResponse, Match, Reject, Reset, Rule,
)
from icefloe.conformance.testing.s3_requests import S3Request

UPSTREAM_TIMEOUT_S = 60.0
# How often serve_forever looks for a shutdown request: stop() waits up to this long.
SERVE_POLL_S = 0.05


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
