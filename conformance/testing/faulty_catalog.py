"""A fault-injecting wrapper around any catalog (spec/PROTOCOL.md 13 "Faults"; model and
TLA+ actions `SwapFails`, `AckLost`, `SwapDelayed`, `Deliver`, `Drop`), and `ParkedSwaps`,
the one place delayed swap requests wait.

The wrapped catalog keeps doing the atomic compare-and-swap; this wrapper only changes
what the client is told, or when the request reaches the catalog:
- a rejected swap (`swap_fail`): the request fails before any effect, SwapRejected;
- a lost acknowledgement (`ack_lost`): the swap is applied (or rejected) by the catalog,
  but the client gets SwapUnknown;
- a delayed swap (`swap_delayed`): the request is parked and the client gets SwapUnknown
  now; the test later delivers it (it is then compared against the pointer *as it is
  then*) or drops it (the model's `Drop`).
This is how a request that reaches the catalog after the client gave up is modelled.
Faults are queued by the test (`reject_swaps`, `lose_acknowledgements`, `delay_swaps`)
or decided per request by a callable (`faults=`: the conformance suite's FaultHooks).
Every request and every delivery is appended to `history` for the checkers. Any method
the wrapper does not define (namespaces, list, drop, ...) is the inner catalog's.
"""
from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Callable, Hashable

from icefloe.impl.catalog.base import TableIdentifier
from icefloe.impl.outcomes import SwapRejected, SwapResult, SwapUnknown

PENDING_SWAPS_MAX = 1024  # a test that parks more than this has lost track of its requests
# Fault kinds (the model's names: icefloe.model.state.FAULT_KINDS).
SWAP_FAIL, ACK_LOST, SWAP_DELAYED = "swap_fail", "ack_lost", "swap_delayed"
SWAP_FAULTS = (SWAP_FAIL, ACK_LOST, SWAP_DELAYED)


@dataclass(frozen=True)
class PendingSwap:
    """A parked request. `ticket` names it in ParkedSwaps (the suite names a request by the
    model's (writer, operation, attempt); a plain test gets integers)."""
    ticket: Hashable
    identifier: TableIdentifier | None
    expected_location: str | None
    new_location: str | None


class ParkedSwaps:
    """Delayed swap requests, waiting to be delivered or dropped. One instance per run is
    shared by whoever parks (a FaultInjectingCatalog, a stepping adapter through
    FaultHooks.park) and whoever decides their fate (a test, the lockstep)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._waiting: dict[Hashable, tuple[PendingSwap, Callable[[], object]]] = {}
        self._named: dict[Hashable, Hashable] = {}   # writer -> name its next parked request takes
        self._tickets = itertools.count()

    def name_next(self, writer: Hashable, name: Hashable) -> None:
        """The next request `writer` parks is called `name`."""
        with self._lock:
            self._named[writer] = name

    def forget_name(self, writer: Hashable) -> None:
        with self._lock:
            self._named.pop(writer, None)

    def park(self, deliver: Callable[[], object], writer: Hashable = None, identifier=None,
             expected_location: str | None = None, new_location: str | None = None) -> PendingSwap:
        with self._lock:
            if len(self._waiting) >= PENDING_SWAPS_MAX:
                raise RuntimeError(f"more than {PENDING_SWAPS_MAX} parked swaps: the test lost track")
            name = self._named.pop(writer, None) if writer is not None else None
            if name is None:
                name = next(self._tickets)
            if name in self._waiting:
                raise RuntimeError(f"a parked swap named {name!r} is already waiting")
            pending = PendingSwap(name, identifier, expected_location, new_location)
            self._waiting[name] = (pending, deliver)
            return pending

    def waiting(self) -> list[PendingSwap]:
        with self._lock:
            return [p for p, _ in self._waiting.values()]

    def __contains__(self, name) -> bool:
        with self._lock:
            return name in self._waiting

    def take(self, name) -> Callable[[], object]:
        """Remove a parked request; its deliver callable (KeyError if none waits)."""
        with self._lock:
            if name not in self._waiting:
                raise KeyError(f"no parked swap {name!r}")
            return self._waiting.pop(name)[1]

    def deliver(self, name):
        """The request reaches its catalog now; returns what the catalog answered."""
        return self.take(name)()

    def drop(self, name) -> None:
        """The request never arrives."""
        self.take(name)


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
class _Queued:
    kind: str  # one of SWAP_FAULTS
    identifier: TableIdentifier | None
    remaining: int


class FaultInjectingCatalog:
    def __init__(self, inner, parked: ParkedSwaps | None = None,
                 faults: Callable[[TableIdentifier], str | None] | None = None, writer: Hashable = None):
        """`parked`: where delayed requests wait (default: a registry of its own); `faults`:
        consulted per swap when nothing is queued, returns a fault kind or None; `writer`:
        whose requests these are (names the parked ones through `parked.name_next`)."""
        self.inner = inner
        self.name = getattr(inner, "name", "catalog")
        self.parked = parked if parked is not None else ParkedSwaps()
        self.faults, self.writer = faults, writer
        self._lock = threading.Lock()
        self._queued: list[_Queued] = []
        self._mine: set = set()                 # tickets of the requests this wrapper parked
        self.history: list[SwapRecord] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def swap(self, identifier: TableIdentifier, expected_location: str, new_location: str) -> SwapResult:
        with self._lock:
            kind = self._take_queued(identifier)
        if kind is None and self.faults is not None:
            kind = self.faults(identifier)
        if kind is not None and kind not in SWAP_FAULTS:
            raise ValueError(f"not a swap fault: {kind!r} (one of {SWAP_FAULTS})")
        if kind == SWAP_FAIL:
            returned: SwapResult = SwapRejected(expected_location, None, "injected: rejected before any effect")
            self._record("request", identifier, expected_location, new_location, None, returned)
            return returned
        if kind == SWAP_DELAYED:
            pending = self.parked.park(lambda: self._arrive(identifier, expected_location, new_location),
                                       self.writer, identifier, expected_location, new_location)
            self._mine.add(pending.ticket)
            returned = SwapUnknown(expected_location, new_location,
                                   f"injected: request delayed (parked as {pending.ticket!r})")
            self._record("request", identifier, expected_location, new_location, None, returned)
            return returned
        # The inner catalog decides (outside our lock: it has its own atomicity).
        applied = self.inner.swap(identifier, expected_location, new_location)
        returned = applied
        if kind == ACK_LOST:
            returned = SwapUnknown(expected_location, new_location, "injected: acknowledgement lost")
        self._record("request", identifier, expected_location, new_location, applied, returned)
        return returned

    # -- the test's side -------------------------------------------------------------

    def reject_swaps(self, count: int = 1, identifier: TableIdentifier | None = None) -> None:
        """The next `count` swaps (of `identifier`, or of any table) fail before any effect."""
        self._queue(SWAP_FAIL, count, identifier)

    def lose_acknowledgements(self, count: int = 1, identifier: TableIdentifier | None = None) -> None:
        """The next `count` swaps are applied as usual but answer SwapUnknown."""
        self._queue(ACK_LOST, count, identifier)

    def delay_swaps(self, count: int = 1, identifier: TableIdentifier | None = None) -> None:
        """The next `count` swaps are parked (see `pending`) and answer SwapUnknown."""
        self._queue(SWAP_DELAYED, count, identifier)

    @property
    def pending(self) -> list[PendingSwap]:
        """This catalog's parked requests, oldest first."""
        return [p for p in self.parked.waiting() if p.ticket in self._mine]

    def deliver(self, pending: PendingSwap) -> SwapResult:
        """The parked request reaches the catalog now and is applied against the current
        pointer. Returns what the catalog did (the client never learns it)."""
        return self.parked.deliver(pending.ticket)

    def drop_pending(self, pending: PendingSwap) -> None:
        """The parked request never reaches the catalog."""
        self.parked.drop(pending.ticket)

    # -- internals ---------------------------------------------------------------------

    def _arrive(self, identifier, expected_location, new_location) -> SwapResult:
        applied = self.inner.swap(identifier, expected_location, new_location)
        self._record("deliver", identifier, expected_location, new_location, applied, None)
        return applied

    def _queue(self, kind: str, count: int, identifier: TableIdentifier | None) -> None:
        if count < 1:
            raise ValueError(f"count must be at least 1, not {count}")
        with self._lock:
            self._queued.append(_Queued(kind, identifier, count))

    def _take_queued(self, identifier: TableIdentifier) -> str | None:
        for q in self._queued:
            if q.identifier is None or q.identifier == identifier:
                q.remaining -= 1
                if q.remaining == 0:
                    self._queued.remove(q)
                return q.kind
        return None

    def _record(self, event, identifier, expected_location, new_location, applied, returned) -> None:
        with self._lock:
            self.history.append(SwapRecord(len(self.history), event, identifier, expected_location,
                                           new_location, applied, returned))
