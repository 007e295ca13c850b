"""The fault proxy's vocabulary (icefloe.conformance.testing.proxy): the faults it injects,
which requests a rule or a gate applies to, and the record of each exchange. Each fault is
survivable (spec/PROTOCOL.md section 13; the TLA+ action is named in proxy.py's docstring).
"""
from __future__ import annotations

import fnmatch
import random
import threading
from dataclasses import dataclass, field

from icefloe.conformance.testing.s3_requests import S3Request

GATE_HOLD_S_MAX = 60.0
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
