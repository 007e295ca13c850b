"""The time storage stamps files with, the suite's own (spec/PROTOCOL.md 12.2 "Orphan removal";
model: `age_files`, TLA+ `AgeFiles`): orphan removal by age is judged without sleeping.

A program's table context hands `StoreClock.now_ms` to the engine (`TableContext.now_ms`),
whose storage stamps each file it writes with it (icefloe's memory store does). The clock
moves one millisecond per reading; the model's `AgeFiles` step, taken while no writer works,
moves it on by the threshold (three days, Iceberg's default), so every file written before
that step is older than `older_than_ms()` and every file written after it is younger, as
long as fewer than ORPHAN_AGE_MS files are written in between (a program writes dozens).

It starts long before any wall-clock time: an engine that stamps files by the wall clock
instead sees every threshold the suite passes fall before all of its files, so orphan
removal deletes none of them (a safe choice the model would call incomplete, never a
false alarm on safety).
"""
from __future__ import annotations

ORPHAN_AGE_MS = 3 * 24 * 3600 * 1000     # Iceberg's default `older_than`: three days ago
EPOCH_MS = 1_000_000_000                 # 1970-01-12: before every wall-clock stamp


class StoreClock:
    """A logical millisecond clock: readings strictly increase; `age` jumps it forward by the
    orphan-removal threshold."""

    def __init__(self, start_ms: int = EPOCH_MS):
        self.t = start_ms
        self.aged_at: int | None = None      # the reading before the last `age`

    def now_ms(self) -> int:
        self.t += 1
        return self.t

    def age(self) -> None:
        """Time passes the threshold: every file stamped so far is older than it from now on."""
        self.aged_at = self.t
        self.t += ORPHAN_AGE_MS

    def older_than_ms(self) -> int:
        """What a scheduled orphan removal passes now: `now - ORPHAN_AGE_MS` (plus one, so that
        a file stamped at the very reading `age` followed is older than it)."""
        assert self.aged_at is not None, "no AgeFiles step yet: no file is older than the threshold"
        threshold = self.t - ORPHAN_AGE_MS + 1
        assert self.aged_at < threshold <= self.aged_at + ORPHAN_AGE_MS, \
            "more files written since AgeFiles than the threshold has milliseconds"
        return threshold
