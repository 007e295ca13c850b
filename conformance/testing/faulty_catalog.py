"""A fault-injecting wrapper around any catalog (spec/PROTOCOL.md 13 "Faults"; model and
TLA+ actions `AckLost`, `SwapDelayed`, `Deliver`, `Drop`).

The wrapped catalog keeps doing the atomic compare-and-swap; this wrapper only changes
what the client is told, or when the request reaches the catalog:
- a lost acknowledgement: the swap is applied (or rejected) by the catalog, but the
  client gets SwapUnknown;
- a delayed swap: the request is parked and the client gets SwapUnknown now; the test
  later delivers it (it is then compared against the pointer *as it is then*) or drops it
  (`drop_pending`: the model's `Drop`).
This is how a request that reaches the catalog after the client gave up is modelled.
Every request and every delivery is appended to `history` for the checkers. Any method
the wrapper does not define (namespaces, list, drop, ...) is the inner catalog's.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from icefloe.impl.catalog.base import TableIdentifier
from icefloe.impl.outcomes import SwapResult, SwapUnknown

PENDING_SWAPS_MAX = 1024  # a test that parks more than this has lost track of its requests
LOSE_ACK, DELAY = "lose_ack", "delay"


@dataclass(frozen=True)
class PendingSwap:
    ticket: int
    identifier: TableIdentifier
    expected_location: str
    new_location: str


@dataclass(frozen=True)
class SwapRecord:
    """One event at the catalog: a request ("request") or a parked one arriving ("deliver").
    `applied` is what the catalog did; `returned` is what the caller was told."""
    seq: int
    event: str
    identifier: TableIdentifier
    expected_location: str
    new_location: str
    applied: SwapResult | None
    returned: SwapResult | None


@dataclass
class _Hook:
    kind: str  # LOSE_ACK | DELAY
    identifier: TableIdentifier | None
    remaining: int


class FaultInjectingCatalog:
    def __init__(self, inner):
        self.inner = inner
        self.name = getattr(inner, "name", "catalog")
        self._lock = threading.Lock()
        self._hooks: list[_Hook] = []
        self._pending: dict[int, PendingSwap] = {}
        self._next_ticket = 0
        self.history: list[SwapRecord] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def swap(self, identifier: TableIdentifier, expected_location: str, new_location: str) -> SwapResult:
        with self._lock:
            hook = self._take_hook(identifier)
            if hook == DELAY:
                if len(self._pending) >= PENDING_SWAPS_MAX:
                    raise RuntimeError(f"more than {PENDING_SWAPS_MAX} parked swaps: the test lost track")
                pending = PendingSwap(self._next_ticket, identifier, expected_location, new_location)
                self._next_ticket += 1
                self._pending[pending.ticket] = pending
                returned: SwapResult = SwapUnknown(expected_location, new_location,
                                                   f"injected: request delayed (ticket {pending.ticket})")
                self._record("request", identifier, expected_location, new_location, None, returned)
                return returned
        # The inner catalog decides (outside our lock: it has its own atomicity).
        applied = self.inner.swap(identifier, expected_location, new_location)
        returned = applied
        if hook == LOSE_ACK:
            returned = SwapUnknown(expected_location, new_location, "injected: acknowledgement lost")
        with self._lock:
            self._record("request", identifier, expected_location, new_location, applied, returned)
        return returned

    # -- the test's side -------------------------------------------------------------

    def lose_acknowledgements(self, count: int = 1, identifier: TableIdentifier | None = None) -> None:
        """The next `count` swaps (of `identifier`, or of any table) are applied as usual
        but answer SwapUnknown."""
        self._add_hook(LOSE_ACK, count, identifier)

    def delay_swaps(self, count: int = 1, identifier: TableIdentifier | None = None) -> None:
        """The next `count` swaps are parked (see `pending`) and answer SwapUnknown."""
        self._add_hook(DELAY, count, identifier)

    @property
    def pending(self) -> list[PendingSwap]:
        with self._lock:
            return [self._pending[t] for t in sorted(self._pending)]

    def deliver(self, pending: PendingSwap) -> SwapResult:
        """The parked request reaches the catalog now and is applied against the current
        pointer. Returns what the catalog did (the client never learns it)."""
        self._take_pending(pending)
        applied = self.inner.swap(pending.identifier, pending.expected_location, pending.new_location)
        with self._lock:
            self._record("deliver", pending.identifier, pending.expected_location, pending.new_location,
                         applied, None)
        return applied

    def drop_pending(self, pending: PendingSwap) -> None:
        """The parked request never reaches the catalog."""
        self._take_pending(pending)

    # -- internals ---------------------------------------------------------------------

    def _add_hook(self, kind: str, count: int, identifier: TableIdentifier | None) -> None:
        if count < 1:
            raise ValueError(f"count must be at least 1, not {count}")
        with self._lock:
            self._hooks.append(_Hook(kind, identifier, count))

    def _take_pending(self, pending: PendingSwap) -> None:
        with self._lock:
            if self._pending.pop(pending.ticket, None) != pending:
                raise KeyError(f"not pending: {pending!r}")

    def _take_hook(self, identifier: TableIdentifier) -> str | None:
        for hook in self._hooks:
            if hook.identifier is None or hook.identifier == identifier:
                hook.remaining -= 1
                if hook.remaining == 0:
                    self._hooks.remove(hook)
                return hook.kind
        return None

    def _record(self, event, identifier, expected_location, new_location, applied, returned) -> None:
        self.history.append(SwapRecord(len(self.history), event, identifier, expected_location,
                                       new_location, applied, returned))
