"""A campaign's budget and progress (issue 14 item 8): while the writers race, the parent
prints a progress line now and then (operations ended, S3 requests and faults injected so
far) and, when a budget is set, tells the writers to stop *starting* operations once the
proxy has injected `faults` faults or `seconds` have passed. A writer finishes the
operation it is in, records it as usual, and reports; nothing is cut short, so the
history the judge gets is complete. Without a budget a campaign runs every writer's
operations to the end, as before.

On a shared 2-core machine the deep campaign's 16 x 100 operations per part take longer
than a working session (docs/campaigns.md); a fault budget sizes the run to the issue's
fault target instead of guessing a number of operations per writer.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

PROGRESS_S = 60.0
COUNT_EVERY_S = 10.0


def fault_counts(exchanges) -> Counter:
    """Faults by label, as the campaign reports them (a combined label counts each part;
    a gate is no fault)."""
    out = Counter()
    for e in exchanges:
        for label in (e.fault or "").split("+"):
            if label and label != "gate":
                out[label] += 1
    return out


@dataclass(frozen=True)
class Budget:
    faults: int | None = None       # stop starting operations once the proxy injected this many
    seconds: float | None = None    # ... or this long after the start
    progress_s: float = PROGRESS_S  # a progress line this often (0: none)

    def __post_init__(self):
        if self.faults is not None and self.faults < 1:
            raise ValueError("a fault budget must be at least 1")
        if self.seconds is not None and self.seconds <= 0:
            raise ValueError("a time budget must be positive")

    @property
    def bounded(self) -> bool:
        return self.faults is not None or self.seconds is not None


@dataclass
class Watch:
    """The parent's side while the writers run: `tick` is called often, counts what the
    proxy injected every COUNT_EVERY_S, and sets `stop` (a multiprocessing Event the
    writers read between operations) when the budget is spent."""
    budget: Budget
    proxy: object
    stop: object
    label: str = "campaign"
    out: object = print
    clock: Callable[[], float] = time.monotonic
    started: float | None = None    # when the writers were let go (default: when the watch was made)
    ops: int = 0
    faults: int = 0
    requests: int = 0
    stopped: str = ""               # why the writers were told to stop ("" if they were not)
    stopped_at_s: float | None = None
    _counted: float = 0.0
    _printed: float = 0.0

    def __post_init__(self):
        if self.started is None:
            self.started = self.clock()
        self._counted = self._printed = self.started - max(COUNT_EVERY_S, self.budget.progress_s)

    def op_ended(self) -> None:
        self.ops += 1

    def tick(self) -> None:
        now = self.clock()
        if now - self._counted < COUNT_EVERY_S:
            return
        self._counted = now
        exchanges = self.proxy.history()
        kinds = fault_counts(exchanges)
        self.requests, self.faults = len(exchanges), sum(kinds.values())
        elapsed = now - self.started
        if not self.stopped:
            if self.budget.faults is not None and self.faults >= self.budget.faults:
                self._stop(f"fault budget: {self.faults:,} faults injected (budget {self.budget.faults:,})", elapsed)
            elif self.budget.seconds is not None and elapsed >= self.budget.seconds:
                self._stop(f"time budget: {elapsed:.0f} s (budget {self.budget.seconds:.0f} s)", elapsed)
        if self.budget.progress_s and now - self._printed >= self.budget.progress_s:
            self._printed = now
            unresolved = sum(v for k, v in kinds.items() if k.startswith("unresolved:"))
            self.out(f"{self.label}: {elapsed:.0f} s: {self.ops} operations ended, {self.requests:,} S3 requests, "
                     f"{self.faults:,} faults injected ({unresolved} unresolved-swap schedules)"
                     + (f"; stopping ({self.stopped})" if self.stopped else ""), flush=True)

    def _stop(self, why: str, elapsed: float) -> None:
        self.stopped, self.stopped_at_s = why, round(elapsed, 1)
        self.stop.set()
        self.out(f"{self.label}: writers told to start no new operation: {why}", flush=True)
