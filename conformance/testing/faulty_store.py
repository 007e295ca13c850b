"""A fault-injecting store wrapper for model-vs-implementation tests (spec/PROTOCOL.md,
"Faults"; "fail_before" is the model's `WriteFails`, "lose_ack" its `AckLost` applied to storage).

Only survivable faults, decided by a deterministic plan so a run replays from its seed:
- "fail_before": the request is refused before it reaches the store (StoreUnavailable);
- "lose_ack": the request is applied, then its answer is lost (StoreOutcomeUnknown),
  whatever the answer was (success or a definite error alike);
- "delay": the request is marked slow in the history (and `sleep_ms` is called if given),
  then passes through unchanged.
A read cannot have an unknown effect, so a lost answer to a read is a StoreUnavailable.
Every call is recorded in `history`, in call order, with what the inner store did and
what the caller saw.
"""
from __future__ import annotations

import fnmatch
import random
import threading
from dataclasses import dataclass
from typing import Callable, Iterator, Literal, Protocol, Sequence

from icefloe.impl.io.base import (
    ALL_KINDS,
    READ_KINDS,
    WRITE_KINDS,
    CountingMixin,
    ObjectInfo,
    ObjectStore,
    StoreError,
    StoreOutcomeUnknown,
    StoreUnavailable,
)

Effect = Literal["pass", "fail_before", "lose_ack", "delay"]
EFFECTS: frozenset[str] = frozenset({"pass", "fail_before", "lose_ack", "delay"})


@dataclass(frozen=True)
class FaultRule:
    """Fire `effect` on matching calls number nth .. nth+times-1 (1-based, counted per rule);
    times=None fires on every match from the nth on. A call matches if its kind is `kind`
    (None: any kind) and its location matches the glob `location_pattern` (None: any)."""
    effect: Effect
    kind: str | None = None
    location_pattern: str | None = None
    nth: int = 1
    times: int | None = 1

    def __post_init__(self):
        assert self.effect in EFFECTS, self.effect
        assert self.kind is None or self.kind in ALL_KINDS, self.kind
        assert self.nth >= 1, self.nth
        assert self.times is None or self.times >= 1, self.times

    def matches(self, kind: str, location: str) -> bool:
        return (self.kind is None or self.kind == kind) and (
            self.location_pattern is None or fnmatch.fnmatchcase(location, self.location_pattern))

    def fires_at(self, match_number: int) -> bool:
        if match_number < self.nth:
            return False
        return self.times is None or match_number < self.nth + self.times


class FaultPlan(Protocol):
    def decide(self, kind: str, location: str) -> Effect:
        """The effect for the next call; called once per call, in call order."""


class RulePlan:
    """An explicit list of rules; the first rule that fires decides, else "pass".
    Every matching rule counts the call, whether or not an earlier rule fired."""

    def __init__(self, rules: Sequence[FaultRule]):
        self.rules = tuple(rules)
        self._matches = [0] * len(self.rules)
        self._lock = threading.Lock()

    def decide(self, kind: str, location: str) -> Effect:
        effect: Effect = "pass"
        with self._lock:
            for i, rule in enumerate(self.rules):
                if rule.matches(kind, location):
                    self._matches[i] += 1
                    if effect == "pass" and rule.fires_at(self._matches[i]):
                        effect = rule.effect
        return effect

    def __repr__(self) -> str:
        return f"RulePlan({list(self.rules)!r})"


class RandomPlan:
    """Faults drawn from `random.Random(seed)`: one draw per matching call, so the same
    sequence of calls gets the same faults. Only write kinds by default."""

    def __init__(self, seed: int, fail_before_p: float = 0.0, lose_ack_p: float = 0.0,
                 delay_p: float = 0.0, kinds: frozenset[str] = WRITE_KINDS,
                 location_pattern: str | None = None):
        assert 0.0 <= fail_before_p + lose_ack_p + delay_p <= 1.0
        assert kinds <= ALL_KINDS, kinds
        self.seed = seed
        self.fail_before_p, self.lose_ack_p, self.delay_p = fail_before_p, lose_ack_p, delay_p
        self.kinds = frozenset(kinds)
        self.location_pattern = location_pattern
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def decide(self, kind: str, location: str) -> Effect:
        if kind not in self.kinds:
            return "pass"
        if self.location_pattern is not None and not fnmatch.fnmatchcase(location, self.location_pattern):
            return "pass"
        with self._lock:
            draw = self._random.random()
        if draw < self.fail_before_p:
            return "fail_before"
        if draw < self.fail_before_p + self.lose_ack_p:
            return "lose_ack"
        if draw < self.fail_before_p + self.lose_ack_p + self.delay_p:
            return "delay"
        return "pass"

    def __repr__(self) -> str:
        return (f"RandomPlan(seed={self.seed!r}, fail_before_p={self.fail_before_p!r}, "
                f"lose_ack_p={self.lose_ack_p!r}, delay_p={self.delay_p!r}, kinds=frozenset({sorted(self.kinds)!r}), "
                f"location_pattern={self.location_pattern!r})")


@dataclass(frozen=True)
class StoreCall:
    """One call as the wrapper saw it. `applied` is what the inner store did ("ok", an
    error class name, or None if the call never reached it); `outcome` is what the caller
    saw ("ok" or an error class name)."""
    seq: int
    kind: str
    location: str
    effect: Effect
    applied: str | None
    outcome: str


class FaultInjectingStore(CountingMixin):
    """Wraps `inner`; `counts` are the calls made to the wrapper (the inner store counts
    those that reached it)."""

    def __init__(self, inner: ObjectStore, plan: FaultPlan, *,
                 sleep_ms: Callable[[int], None] | None = None, delay_ms: int = 0):
        self._init_counts()
        self.inner = inner
        self.plan = plan
        self.sleep_ms = sleep_ms
        self.delay_ms = delay_ms
        self.history: list[StoreCall] = []
        self._history_lock = threading.Lock()

    def get(self, location: str) -> bytes:
        return self._call("get", location, lambda: self.inner.get(location))

    def stat(self, location: str) -> ObjectInfo:
        return self._call("stat", location, lambda: self.inner.stat(location))

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        infos = self._call("list", prefix, lambda: list(self.inner.list(prefix)))
        return iter(infos)

    def put_if_absent(self, location: str, data: bytes) -> ObjectInfo:
        return self._call("put_if_absent", location, lambda: self.inner.put_if_absent(location, data))

    def compare_and_swap(self, location: str, data: bytes, expected_etag: str) -> ObjectInfo:
        return self._call("compare_and_swap", location,
                          lambda: self.inner.compare_and_swap(location, data, expected_etag))

    def delete(self, location: str) -> None:
        return self._call("delete", location, lambda: self.inner.delete(location))

    def _call(self, kind: str, location: str, apply: Callable):
        self._count(kind)
        effect = self.plan.decide(kind, location)
        assert effect in EFFECTS, effect
        if effect == "fail_before":
            self._record(kind, location, effect, None, "StoreUnavailable")
            raise StoreUnavailable(location, f"injected: {kind} refused before it was applied")
        if effect == "delay" and self.sleep_ms is not None:
            self.sleep_ms(self.delay_ms)
        try:
            result = apply()
        except StoreError as e:
            applied = type(e).__name__
            if effect != "lose_ack":
                self._record(kind, location, effect, applied, applied)
                raise
            lost_error = e
        else:
            applied, lost_error = "ok", None
            if effect != "lose_ack":
                self._record(kind, location, effect, applied, applied)
                return result
        # effect == "lose_ack": the inner call ran; its answer never reaches the caller.
        if kind in READ_KINDS:
            self._record(kind, location, effect, applied, "StoreUnavailable")
            raise StoreUnavailable(location, f"injected: answer to {kind} lost") from lost_error
        assert kind in WRITE_KINDS
        self._record(kind, location, effect, applied, "StoreOutcomeUnknown")
        raise StoreOutcomeUnknown(location, f"injected: {kind} applied ({applied}), acknowledgement lost") from lost_error

    def _record(self, kind: str, location: str, effect: Effect, applied: str | None, outcome: str) -> None:
        with self._history_lock:
            self.history.append(StoreCall(len(self.history), kind, location, effect, applied, outcome))
