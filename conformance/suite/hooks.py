"""The suite's fault switchboard for stepping engines (conformance.adapter's `FaultHooks`,
as the adapter sees it; spec/PROTOCOL.md 13 "Faults"): the harness arms at most one fault per
writer before stepping it, and the adapter's storage and catalog wrappers take it at the
matching request. Delayed swaps wait in `parked` (the run's one ParkedSwaps)."""
from __future__ import annotations

import threading
from typing import Callable

from icefloe.conformance.adapter import ACK_LOST, SWAP_DELAYED, SWAP_FAIL, WRITE_FAIL
from icefloe.conformance.testing.faulty_catalog import ParkedSwaps


class FaultSwitchboard:
    """The harness's fault switchboard for stepping adapters (conformance.adapter.FaultHooks).
    At most one fault is armed per writer; arming is the harness's, taking the adapter's.
    Delayed swaps wait in `parked` (the one ParkedSwaps of the run), named by the request
    the harness gave when it armed the delay."""

    HOOKED = (WRITE_FAIL, SWAP_FAIL, ACK_LOST, SWAP_DELAYED)   # crash needs no hook

    def __init__(self):
        self._armed: dict[int, str] = {}
        self._commits: dict[int, str] = {}
        self._lock = threading.Lock()
        self.parked = ParkedSwaps()

    # harness side
    def arm(self, writer: int, kind: str, request=None) -> None:
        """Arm `kind` for `writer`'s next matching request; a delayed swap it parks is
        named `request` in `parked`."""
        if kind not in self.HOOKED:
            raise ValueError(f"not a hooked fault kind: {kind!r} (one of {self.HOOKED})")
        with self._lock:
            if writer in self._armed:
                raise RuntimeError(f"writer {writer} already has {self._armed[writer]} armed")
            self._armed[writer] = kind
        if kind == SWAP_DELAYED and request is not None:
            self.parked.name_next(writer, request)

    def armed(self, writer: int) -> str | None:
        """The fault armed for `writer` and not taken yet, if any."""
        with self._lock:
            return self._armed.get(writer)

    def disarm(self, writer: int) -> str | None:
        """Disarm; returns the fault if the adapter never took it."""
        with self._lock:
            kind = self._armed.pop(writer, None)
        self.parked.forget_name(writer)
        return kind

    # adapter side
    def on_write(self, writer: int, location: str) -> bool:
        with self._lock:
            if self._armed.get(writer) == WRITE_FAIL:
                del self._armed[writer]
                return True
        return False

    def on_swap(self, writer: int) -> str | None:
        with self._lock:
            kind = self._armed.get(writer)
            if kind in (SWAP_FAIL, ACK_LOST, SWAP_DELAYED):
                del self._armed[writer]
                return kind
        return None

    def arm_commit(self, writer: int, when: str) -> None:
        """Writer `writer`'s next SQL COMMIT fails "before" or "after" it reached the
        database (a transport fault, conformance.testing.faulty_sql)."""
        if when not in ("before", "after"):
            raise ValueError(f"a COMMIT fails 'before' or 'after', not {when!r}")
        with self._lock:
            self._commits[writer] = when

    def disarm_commit(self, writer: int) -> str | None:
        with self._lock:
            return self._commits.pop(writer, None)

    def on_commit(self, writer: int) -> str | None:
        with self._lock:
            return self._commits.pop(writer, None)

    def park(self, writer: int, deliver: Callable[[], object]) -> None:
        """The swap `on_swap` told to delay: `deliver()` applies the same compare-and-swap
        when (if) the harness lets it arrive."""
        self.parked.park(deliver, writer)
