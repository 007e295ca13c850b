"""Fault schedules that leave a swap's outcome unresolved for its writer (issue 14 item 8;
spec/PROTOCOL.md 13: `AckLost`, `SwapDelayed` then `Deliver` or `Drop`, each with the
writer's read-backs failing too).

A lost answer alone rarely leaves a writer in doubt: the S3 store reads the pointer back
after an ambiguous conditional PUT, the S3 catalog reads it once more, and the commit loop
reads it again before it gives up (9.3). So a schedule that is to keep the outcome unknown
must also make those reads fail. `UnresolvedSwaps` is a stateful proxy schedule
(`FaultProxy.add_schedule`): it picks a swap (the pointer's conditional PUT) with a seeded
draw, injects one of three faults into it, and then fails the next `blackout_requests`
requests that writer (its client name) sends for the pointer, as 503 SlowDown:

- `lost_ack`: the request is forwarded, S3 decides it (applied, or refused with 412 when
  another writer moved the pointer first), and the answer is lost (connection reset).
  Resolves either way, as S3 decided;
- `lost_request`: the connection is reset before the request is forwarded: it never
  reaches S3, but the writer cannot know that. Resolves "not landed";
- `stall`: the request is held `stall_s` seconds (longer than the writer's read timeout)
  before it is forwarded: the writer gives up on it and ends its operation Unknown while
  the swap is still in flight; it lands afterwards if nobody moved the pointer meanwhile,
  and is refused otherwise.

The blackout counts the pointer requests the writer makes before it ends the operation:
the store's remaining attempts of the swap (`attempts_max - 1`), its read-back (`attempts_max`
GETs), the catalog's reconcile read (`attempts_max`) and the commit loop's pointer read
(`attempts_max`): `blackout_for(attempts_max)`. A shorter blackout lets a read-back
through and the writer settles the outcome itself (a resolved swap, not a wrong one); a
longer one fails the writer's next refresh (an operation that fails before writing).
"""
from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

from icefloe.conformance.testing.proxy import Delay, LoseResponse, Match, Reject, Reset

LOST_ACK, LOST_REQUEST, STALL = "lost_ack", "lost_request", "stall"
UNRESOLVED_KINDS = (LOST_ACK, LOST_REQUEST, STALL)
POINTER_KEY = "*/metadata/pointer.json"


@dataclass(frozen=True)
class Blackout(Reject):
    """503 SlowDown to a writer whose swap is being kept unresolved."""

    def label(self) -> str:
        return "blackout:503"


@dataclass(frozen=True)
class LostAck(LoseResponse):
    def label(self) -> str:
        return f"unresolved:{LOST_ACK}"


@dataclass(frozen=True)
class LostRequest(Reset):
    def label(self) -> str:
        return f"unresolved:{LOST_REQUEST}"


@dataclass(frozen=True)
class Stall(Delay):
    def label(self) -> str:
        return f"unresolved:{STALL}"


def blackout_for(attempts_max: int) -> int:
    """Pointer requests an S3 writer makes after an ambiguous swap attempt until its
    operation ends Unknown (module docstring)."""
    assert attempts_max >= 1
    return (attempts_max - 1) + 3 * attempts_max


@dataclass
class UnresolvedSwaps:
    """The schedule (module docstring). `rates`: kind -> the probability that a swap gets
    it (drawn in the order of UNRESOLVED_KINDS, at most one per swap; a lost ack is drawn
    for every swap but lost only when S3 applied it, so its rate is per landing swap);
    `stall_s`: (shortest, longest) hold of a stalled swap, drawn per stall."""
    rates: dict
    blackout_requests: int
    stall_s: tuple = (1.5, 3.0)
    swap: Match = field(default_factory=lambda: Match(operation="ConditionalPutObject", key=POINTER_KEY))
    pointer: Match = field(default_factory=lambda: Match(key=POINTER_KEY))
    injected: Counter = field(default_factory=Counter, init=False)
    _dark: dict = field(default_factory=dict, init=False)     # client -> pointer requests left to fail
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        assert set(self.rates) <= set(UNRESOLVED_KINDS) and self.blackout_requests >= 0
        assert all(0.0 <= p <= 1.0 for p in self.rates.values())
        assert 0 < self.stall_s[0] <= self.stall_s[1]

    def decide(self, request, rng):
        """Called by the proxy under its lock, with its seeded draws."""
        client = request.client
        with self._lock:
            left = self._dark.get(client, 0)
            if left > 0 and self.pointer(request):
                self._dark[client] = left - 1
                self.injected["blackout"] += 1
                return Blackout(503)
            if client is None or not self.swap(request):
                return None
            for kind in UNRESOLVED_KINDS:
                if rng.random() < self.rates.get(kind, 0.0):
                    break
            else:
                return None
            self._dark[client] = self.blackout_requests
            self.injected[kind] += 1
            if kind == LOST_ACK:
                return LostAck("reset", frozenset({200}))
            if kind == LOST_REQUEST:
                return LostRequest()
            return Stall(round(rng.uniform(*self.stall_s), 3))

    def withdraw(self, request, fault) -> None:
        """S3 refused a swap whose ack was to be lost: it was answered as usual."""
        with self._lock:
            if isinstance(fault, LostAck):
                self._dark.pop(request.client, None)
                self.injected[LOST_ACK] -= 1
