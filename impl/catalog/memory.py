"""An in-memory catalog (spec/PROTOCOL.md, "The catalog's swap"; model and TLA+ actions
`Swap`, `AckLost`, `SwapDelayed`, `Deliver`, `Drop`).

One lock makes each swap an atomic compare-and-set of the table's pointer. Two test hooks
model the ways a client can be left not knowing:
- a lost acknowledgement: the swap is applied (or rejected) but the client gets SwapUnknown;
- a delayed swap: the request is parked and the client gets SwapUnknown now; the test
  later delivers it (it is then compared against the pointer *as it is then*) or drops it
  (`drop_pending`: the model's `Drop`; `drop` is taken by dropping a table).
  This is how a request that reaches the catalog after the client gave up is modelled.
Every request and every delivery is appended to `history` for the checkers.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from icefloe.impl.catalog.base import NoSuchTable, TableAlreadyExists, TableIdentifier
from icefloe.impl.outcomes import SwapRejected, SwapResult, Swapped, SwapUnknown

PENDING_SWAPS_MAX = 1024  # a test that parks more than this has lost track of its requests


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
    kind: str  # "lose_ack" | "delay"
    identifier: TableIdentifier | None
    remaining: int


class MemoryCatalog:
    def __init__(self, name: str = "memory"):
        self.name = name
        self._lock = threading.Lock()
        self._tables: dict[TableIdentifier, str] = {}
        self._namespaces: set[tuple[str, ...]] = set()
        self._hooks: list[_Hook] = []
        self._pending: dict[int, PendingSwap] = {}
        self._next_ticket = 0
        self.history: list[SwapRecord] = []

    # -- namespaces -------------------------------------------------------------------

    def create_namespace(self, namespace: tuple[str, ...]) -> None:
        assert namespace and all(namespace), namespace
        with self._lock:
            self._namespaces.add(tuple(namespace))

    def list_namespaces(self) -> list[tuple[str, ...]]:
        with self._lock:
            return sorted(self._namespaces | {i.namespace for i in self._tables})

    # -- tables -----------------------------------------------------------------------

    def load(self, identifier: TableIdentifier) -> str:
        with self._lock:
            location = self._tables.get(identifier)
        if location is None:
            raise NoSuchTable(str(identifier))
        return location

    def create(self, identifier: TableIdentifier, metadata_location: str) -> None:
        with self._lock:
            if identifier in self._tables:
                raise TableAlreadyExists(str(identifier))
            self._tables[identifier] = metadata_location
            self._namespaces.add(identifier.namespace)

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]:
        with self._lock:
            return sorted(i for i in self._tables if i.namespace == tuple(namespace))

    def drop(self, identifier: TableIdentifier) -> None:
        with self._lock:
            if self._tables.pop(identifier, None) is None:
                raise NoSuchTable(str(identifier))

    def swap(self, identifier: TableIdentifier, expected_location: str, new_location: str) -> SwapResult:
        assert expected_location != new_location, "a swap must move the pointer"
        with self._lock:
            hook = self._take_hook(identifier)
            if hook == "delay":
                assert len(self._pending) < PENDING_SWAPS_MAX, "too many parked swaps"
                pending = PendingSwap(self._next_ticket, identifier, expected_location, new_location)
                self._next_ticket += 1
                self._pending[pending.ticket] = pending
                returned: SwapResult = SwapUnknown(expected_location, new_location,
                                                   f"injected: request delayed (ticket {pending.ticket})")
                self._record("request", identifier, expected_location, new_location, None, returned)
                return returned
            applied = self._apply(identifier, expected_location, new_location)
            returned = applied
            if hook == "lose_ack":
                returned = SwapUnknown(expected_location, new_location, "injected: acknowledgement lost")
            self._record("request", identifier, expected_location, new_location, applied, returned)
            return returned

    # -- test hooks -------------------------------------------------------------------

    def lose_acknowledgements(self, count: int = 1, identifier: TableIdentifier | None = None) -> None:
        """The next `count` swaps (of `identifier`, or of any table) are applied as usual
        but answer SwapUnknown."""
        assert count >= 1
        with self._lock:
            self._hooks.append(_Hook("lose_ack", identifier, count))

    def delay_swaps(self, count: int = 1, identifier: TableIdentifier | None = None) -> None:
        """The next `count` swaps are parked (see `pending`) and answer SwapUnknown."""
        assert count >= 1
        with self._lock:
            self._hooks.append(_Hook("delay", identifier, count))

    @property
    def pending(self) -> list[PendingSwap]:
        with self._lock:
            return [self._pending[t] for t in sorted(self._pending)]

    def deliver(self, pending: PendingSwap) -> SwapResult:
        """The parked request reaches the catalog now and is applied against the current
        pointer. Returns what the catalog did (the client never learns it)."""
        with self._lock:
            assert self._pending.pop(pending.ticket, None) == pending, f"not pending: {pending!r}"
            applied = self._apply(pending.identifier, pending.expected_location, pending.new_location)
            self._record("deliver", pending.identifier, pending.expected_location, pending.new_location, applied, None)
            return applied

    def drop_pending(self, pending: PendingSwap) -> None:
        """The parked request never reaches the catalog."""
        with self._lock:
            assert self._pending.pop(pending.ticket, None) == pending, f"not pending: {pending!r}"

    # -- internals (caller holds the lock) --------------------------------------------

    def _take_hook(self, identifier: TableIdentifier) -> str | None:
        for hook in self._hooks:
            if hook.identifier is None or hook.identifier == identifier:
                hook.remaining -= 1
                if hook.remaining == 0:
                    self._hooks.remove(hook)
                return hook.kind
        return None

    def _apply(self, identifier: TableIdentifier, expected_location: str, new_location: str) -> SwapResult:
        actual = self._tables.get(identifier)
        if actual is None:
            return SwapRejected(expected_location, None, "no such table")
        if actual != expected_location:
            return SwapRejected(expected_location, actual, "metadata location changed")
        self._tables[identifier] = new_location
        return Swapped(new_location)

    def _record(self, event, identifier, expected_location, new_location, applied, returned) -> None:
        self.history.append(SwapRecord(len(self.history), event, identifier, expected_location,
                                       new_location, applied, returned))
