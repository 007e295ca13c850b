"""The server-side fault plan of an interop campaign (issue 13 items 2 and 5; spec/PROTOCOL.md
13; the model's SwapFails, AckLost, SwapDelayed then Deliver or Drop): test infrastructure
over conformance.testing.rest_faults, which `icefloe serve` wears in the campaign.

Each writer has its own seeded plan (`WriterPlan`, one rest_faults Rule): every commit
request it sends is faulted with probability `rate`, the kind drawn by weight from every
kind the layer has (reject 409; 500/502/503/504 before applying; 500/502/504 after
applying; the answer dropped; delayed: 503 now, the request parked; duplicated). A 409
comes from the catalog itself, which records it against the request's Idempotency-Key,
so the layer's reject (which never reaches the catalog) is not drawn for the request that
follows an unknown answer: that request is a client's replay of the same key, and a
catalog would have answered it from its record.

`Conductor` is the harness's hand on the layer while writers run, in a thread of its
own: each parked request is delivered (applied late) or dropped after a seeded wait, and
now and then one writer's next commit is gated (held before the catalog) for a seeded
while, so the others overtake it. `heal()` stops all of it: no new fault, every gate
released, every parked request delivered or dropped.
"""
from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from icefloe.conformance.testing import rest_faults as F

WEIGHTS_DEFAULT = {F.REJECT: 2.0, F.FAIL_BEFORE: 2.0, F.FAIL_AFTER: 2.0, F.LOST: 1.0, F.DELAY: 1.5,
                   F.DUPLICATE: 1.0}
BEFORE_STATUSES = (500, 502, 503, 504)
UNKNOWN_KINDS = (F.FAIL_BEFORE, F.FAIL_AFTER, F.LOST, F.DELAY)
PARK_WAIT_S = (0.05, 1.5)          # a parked request's wait before it is delivered or dropped
DELIVER_PROBABILITY = 0.6
GATE_EVERY_S = (0.3, 1.5)          # between two gates
GATE_HOLD_S = (0.05, 0.6)          # how long a gated commit is held once it arrived
GATE_ARRIVE_S_MAX = 20.0           # a gate nobody reaches in this long is taken away
TICK_S = 0.02


class WriterPlan(F.Rule):
    """Writer `writer`'s commit faults: each request faulted with probability `rate`."""

    def __init__(self, writer, seed: int, rate: float, weights: dict | None = None):
        super().__init__(F.Fault(F.REJECT), F.Match(writer=writer), times=0)
        self.rng = random.Random(f"interop-{seed}-{writer}")
        self.rate, self.weights = rate, dict(weights or WEIGHTS_DEFAULT)
        unknown = set(self.weights) - set(F.KINDS)
        if unknown:
            raise ValueError(f"fault kinds {sorted(unknown)}: not among {F.KINDS}")
        self.previous_unknown = False

    def take(self, writer, method, path) -> bool:
        if not self.match(writer, method, path):
            return False
        self.seen += 1
        after_unknown, self.previous_unknown = self.previous_unknown, False
        if self.rng.random() >= self.rate:
            return False
        kinds = [k for k in self.weights if self.weights[k] > 0 and not (after_unknown and k == F.REJECT)]
        kind = self.rng.choices(kinds, [self.weights[k] for k in kinds])[0]
        status = 500
        if kind == F.FAIL_BEFORE:
            status = self.rng.choice(BEFORE_STATUSES)
        elif kind == F.FAIL_AFTER:
            status = self.rng.choice(F.UNKNOWN_STATUSES)
        self.fault = F.Fault(kind, status)
        self.previous_unknown = kind in UNKNOWN_KINDS
        self.fired += 1
        return True


@dataclass
class ConductorCounts:
    delivered: int = 0
    dropped: int = 0
    gates: int = 0                  # commits held at a gate
    gates_unused: int = 0
    by_writer: Counter = field(default_factory=Counter)


class Conductor:
    """Parked requests and gates while the writers run (module docstring)."""

    def __init__(self, faults: F.RestFaults, writers: list, seed: int, gates: bool = True):
        self.faults, self.writers, self.gates = faults, list(writers), gates
        self.rng = random.Random(f"interop-conductor-{seed}")
        self.counts = ConductorCounts()
        self._stop = threading.Event()
        self._due: dict[int, tuple[float, bool]] = {}
        self._gate = None
        self._gate_next = time.monotonic() + self.rng.uniform(*GATE_EVERY_S)
        self._thread = threading.Thread(target=self._run, name="interop-conductor", daemon=True)

    def start(self) -> "Conductor":
        self._thread.start()
        return self

    def _settle(self, rid: int, deliver: bool) -> None:
        if deliver:
            self.faults.deliver(rid)
            self.counts.delivered += 1
        else:
            self.faults.drop(rid)
            self.counts.dropped += 1

    def _tick(self) -> None:
        now = time.monotonic()
        for rid in self.faults.parked():
            if rid not in self._due:
                self._due[rid] = (now + self.rng.uniform(*PARK_WAIT_S), self.rng.random() < DELIVER_PROBABILITY)
        for rid, (when, deliver) in sorted(self._due.items()):
            if when <= now and rid in self.faults.parked():
                self._settle(rid, deliver)
                del self._due[rid]
        if not self.gates:
            return
        if self._gate is None and now >= self._gate_next and self.writers:
            writer = self.rng.choice(self.writers)
            self._gate = (self.faults.add_gate(F.Match(writer=writer)), now, None, writer)
        elif self._gate is not None:
            gate, placed, arrived, writer = self._gate
            if arrived is None and gate.arrived.is_set():
                self._gate = (gate, placed, now + self.rng.uniform(*GATE_HOLD_S), writer)
            elif arrived is not None and now >= arrived:
                gate.release()
                self.faults.remove_gate(gate)
                self.counts.gates += 1
                self.counts.by_writer[writer] += 1
                self._gate = None
                self._gate_next = now + self.rng.uniform(*GATE_EVERY_S)
            elif arrived is None and now - placed > GATE_ARRIVE_S_MAX:
                self.faults.remove_gate(gate)
                gate.release()
                self.counts.gates_unused += 1
                self._gate = None
                self._gate_next = now + self.rng.uniform(*GATE_EVERY_S)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._tick()
            self._stop.wait(TICK_S)

    def heal(self, rules: list) -> None:
        """No new fault; release the gate; deliver or drop every parked request (seeded)."""
        self._stop.set()
        self._thread.join(30)
        for rule in rules:
            self.faults.remove_rule(rule)
        if self._gate is not None:
            gate = self._gate[0]
            self.faults.remove_gate(gate)
            gate.release()
            self.counts.gates += gate.arrived.is_set()
            self._gate = None
        for rid in self.faults.parked():
            deliver = self._due.get(rid, (0, self.rng.random() < DELIVER_PROBABILITY))[1]
            self._settle(rid, deliver)


def fault_counts(exchanges, writer_engine: dict) -> dict:
    """engine -> Counter of 'kind' and 'kind status' labels over the commit requests."""
    out: dict = {}
    for x in exchanges:
        if x.fault is None or not F.is_commit(x.method, x.path):
            continue
        engine = writer_engine.get(x.writer, "?")
        c = out.setdefault(engine, Counter())
        c[x.fault] += 1
        if x.fault in (F.FAIL_BEFORE, F.FAIL_AFTER):
            c[f"{x.fault} {x.client_status}"] += 1
    return out
