"""Black-box engines whose swap is a REST catalog commit, in lockstep (docs/conformance.md
"Commits"; spec/PROTOCOL.md 9, 13): held at `icefloe serve`'s commit endpoint, their swap
faults injected there (conformance.testing.rest_faults) and mirrored on the model, as
conformance.suite.transport mirrors a stepping engine's transport faults.
"""
from __future__ import annotations

from dataclasses import replace

from icefloe.conformance import adapter as A
from icefloe.conformance.suite.blackbox import BLACK_BOX_WAIT_S, GATE_POLL_S, await_outcome, start_commit
from icefloe.conformance.suite.view import END_UNKNOWN, FAULT_OF_ACTION, end_unknown, solo
from icefloe.conformance.violation import AGREEMENT, Violation
from icefloe.model import iceberg
from icefloe.model.state import COMMITTED, DONE, RETRY, SWAP, RESOLVE

COMMIT_FAULT = "CommitFault"
GATE, ENDED = "gate", "ended"
RETRANSMISSIONS_MAX = 8        # the same commit request sent again, each released as it comes


class RestDriver:
    """A black-box engine held at `icefloe serve`'s commit endpoint (the capability
    transport "rest"), its swap faults injected there and mirrored on the model.

    `("Begin", w, kind)` starts the commit in a worker thread that the server holds at its
    commit request (a gate on writer w; conformance.testing.rest_faults); the model runs
    that writer to SWAP. There the program names what happens to the held request, and the
    driver releases it so, waits until the engine sends its next commit request (a retry,
    held again) or ends, and takes the model actions that match:

      ("Swap", w)                         it goes through;
      ("SwapFails", w)                    409 (`reject`), not applied;
      ("AckLost", w)                      applied, then 500 (`fail_after`);
      ("SwapDelayed", w)                  503 now, parked at the server (`delay`) until
                                          ("Deliver", w, k, a) or ("Drop", w, k, a);
      ("CommitFault", w, kind, status)    any fault kind of the layer, by its name:
          reject -> SwapFails; fail_before (500..504, not applied) -> SwapFails if the
          engine took it as a rejection (retried or gave up), SwapDelayed then Drop if it
          reported Unknown; fail_after (500/502/504) and lost (the connection dropped after
          applying) -> AckLost; delay -> SwapDelayed; duplicate (delivered twice) -> Swap.

    The same request sent again (a replay with its Idempotency-Key, a retry of the HTTP
    layer: an identical body) is released as it comes; it is the same attempt, and what
    the server did with any copy of it is what the model mirrors (a 5xx before applying
    whose replay landed is AckLost; a delayed request whose replay landed is delivered).
    Then the writer runs by itself (view.solo) to its next commit request or to its end:
    after a rejection `Retry`, after an unknown outcome `EndUnknown` if the engine reported
    Unknown (view.end_unknown; its caller resolves it, and `resolve` counts how, landed or
    not, once that is definite), or `Resolve` if the engine resolved it itself. A commit request the model has no room for (the model's operation ended, the
    engine commits again: a retry that re-applies a landed commit) or an engine that ends
    where the model's writer commits again is a Violation.
    """

    RELEASES = ("Swap", "SwapFails", "AckLost", "SwapDelayed")
    KINDS = (("reject", None), ("fail_before", 500), ("fail_before", 503), ("fail_after", 500),
             ("fail_after", 502), ("fail_after", 504), ("lost", None), ("delay", None), ("duplicate", None))
    # The model actions a fault kind may be mirrored by (all must be enabled to draw it).
    NEEDS = {"reject": ("SwapFails",), "fail_before": ("SwapFails", "SwapDelayed"), "fail_after": ("AckLost",),
             "lost": ("AckLost",), "delay": ("SwapDelayed",), "duplicate": ("Swap",)}

    def __init__(self, lock, faults):
        self.lock, self.faults = lock, faults
        self.parked: dict = {}      # model request (w, k, attempt) -> (server request id, snapshot id, op kind)
        self.unknown: set = set()   # (w, k) the engine ended Unknown, until resolved

    @staticmethod
    def inject(name: str):
        """The layer's fault that a model swap action is injected as."""
        from icefloe.conformance.testing import rest_faults as F
        return {"Swap": None, "SwapFails": F.Fault(F.REJECT), "AckLost": F.Fault(F.FAIL_AFTER, 500),
                "SwapDelayed": F.Fault(F.DELAY, 503)}[name]

    # -- the program's words -------------------------------------------------------------

    def labels(self, enabled: dict) -> list:
        """The CommitFault steps a program may take now: the writer's commit is held at the
        server, and every model action that may mirror the fault is enabled."""
        out = []
        for w, wr in enumerate(self.lock.model.writers, start=1):
            rec = self.lock.active.get(w)
            if wr.phase != SWAP or rec is None or rec.gate is None or not rec.gate.arrived.is_set():
                continue
            for kind, status in self.KINDS:
                if all((name, w) in enabled for name in self.NEEDS[kind]) and self.lock.model.faults_on:
                    out.append((COMMIT_FAULT, w, kind, status))
        return out

    def start(self, w: int, rec) -> None:
        """`Begin`: the commit in a thread, held at its first commit request."""
        from icefloe.conformance.testing.rest_faults import Match
        rec.gate = self.faults.add_gate(Match(writer=w))

        start_commit(w, rec)
        wr = self.lock.model.writers[w - 1]
        if wr.phase == DONE or wr.k != rec.k:        # a no-op for the model
            self.join(w, rec)
            return
        if self._await(w, rec) == ENDED:
            raise Violation(AGREEMENT, f"writer {w}: the engine ended ({rec.outcome}) without a commit request; "
                            f"the model's writer commits", wr.phase, rec.outcome)
        self._solo(w, (SWAP,))

    def mirror(self, label, before) -> None:
        """A model action the program named, which the model has taken (from `before`): a
        swap or swap fault at the held commit, or a parked request's Deliver or Drop."""
        if label[0] in ("Deliver", "Drop"):
            self.take(label[0], label[1:], landed=before.cat != self.lock.model.cat)
        else:
            self._release(label[1], self.inject(label[0]), taken=label[0], before=before)

    def step(self, label) -> None:
        """("CommitFault", w, kind, status): release the held commit into that fault."""
        from icefloe.conformance.testing import rest_faults as F
        _, w, kind, status = label
        k = self.lock.active[w].k
        self._release(w, F.Fault(kind, status) if status is not None else F.Fault(kind), taken=None)
        if self.lock.model.writers[w - 1].k != k:
            self.lock._ended(w, k)

    def take(self, name: str, request, landed: bool, replayed: bool = False) -> None:
        """("Deliver" | "Drop", w, k, attempt): the parked request goes on, or never does.
        `replayed`: the same request, sent again, landed meanwhile (the model delivers it now)."""
        w, k = request[0], request[1]
        rid, sid, kind = self.parked.pop(request)
        self._note(("delay", name.lower(), kind))
        if replayed:
            self._advance(("Deliver",) + tuple(request))
            self.faults.drop(rid)
        elif name == "Drop":
            self.faults.drop(rid)
        else:
            self._deliver(rid, sid, w, k, landed)
        if (w, k) in self.unknown:
            self.resolve(w, k)

    def _deliver(self, rid: int, sid, w: int, k: int, landed: bool) -> None:
        status = self.faults.deliver(rid)
        applied = status is not None and 200 <= status < 300
        if applied != landed:
            raise Violation(AGREEMENT, f"writer {w}: its delayed commit request, delivered now, was "
                            f"{'applied' if applied else 'refused'} by the server ({status}); the model "
                            f"{'lands it' if landed else 'says it cannot land (its base has moved)'}",
                            "applied" if landed else "refused", status)
        if landed and sid is not None:
            self.lock.snapshot_id[(w, k)] = sid

    def resolve(self, w: int, k: int) -> None:
        """Operation (w, k), which the engine ended Unknown, resolved as its caller would
        (spec/PROTOCOL.md 9.6) as soon as that is definite: an attempt of it is in the chain,
        or none is and none is in flight any more (the liveness phase delivers the rest)."""
        lock = self.lock
        if iceberg.own_landed(lock.model, w, k) is not None:
            lock.stats.unknown_resolved_committed += 1
        elif not any(req[0] == w and req[2][1] == k for req in lock.model.inflight):
            lock.stats.unknown_resolved_not_committed += 1
        else:
            return
        self.unknown.discard((w, k))

    # -- inside ---------------------------------------------------------------------------

    def _release(self, w: int, fault, taken: str | None, before=None) -> None:
        from icefloe.conformance.testing.rest_faults import Match
        lock = self.lock
        rec = lock.active[w]
        held = rec.gate
        if held is None or not held.arrived.is_set():
            raise Violation(AGREEMENT, f"writer {w}: no commit request of it is held at the server", "held", "none")
        op_kind = lock.model.writers[w - 1].kind
        landed_before = iceberg.own_landed(before or lock.model, w, rec.k) is not None
        rec.gate = self.faults.add_gate(Match(writer=w))     # its next commit request, if it sends one
        held.release(fault)
        where, sent = self._await(w, rec), [held]
        while where == GATE and _again(held, rec.gate, fault) and len(sent) <= RETRANSMISSIONS_MAX:
            again, rec.gate = rec.gate, self.faults.add_gate(Match(writer=w))
            again.release()                     # the same request again (a replay, a retry of the HTTP layer)
            sent.append(again)
            where = self._await(w, rec)
        applied = any(g.exchange is not None and g.exchange.applied for g in sent)
        sid = _added_snapshot(held.body)
        kind = None if fault is None else fault.kind
        if kind is not None:
            lock.stats.faults[f"rest {kind}"] += 1
        if kind not in (None, "delay"):          # a delayed request's class: at its Deliver or Drop
            self._note((kind, fault.status if kind in ("fail_before", "fail_after") else None, op_kind))
        actions = [] if taken else mirror(kind, where, rec.outcome, applied)
        for name in actions:
            wr = lock.model.writers[w - 1]
            self._advance((name, w, wr.k, wr.attempt) if name == "Drop" else (name, w), count=True)
        wr = lock.model.writers[w - 1]
        if kind == "delay" and wr.k == rec.k:
            if held.exchange is None or held.exchange.id not in self.faults.parked():
                raise Violation(AGREEMENT, f"writer {w}: the server did not park the delayed commit", "parked", "none")
            self.parked[(w, wr.k, wr.attempt)] = (held.exchange.id, sid, op_kind)
            if len(sent) > 1 and applied:       # a retransmission landed: the parked twin is a replay now
                self.take("Deliver", (w, wr.k, wr.attempt), True, replayed=True)
        landed = iceberg.own_landed(lock.model, w, rec.k) is not None and not landed_before
        if kind is not None and landed != applied:
            raise Violation(AGREEMENT, f"writer {w}: the server {'applied' if applied else 'did not apply'} its "
                            f"commit ({kind}); the model {'lands' if landed else 'does not land'} it",
                            "applied" if landed else "not applied", "applied" if applied else "not applied")
        self._continue(w, rec, where)
        if sid is not None and not landed_before and iceberg.own_landed(lock.model, w, rec.k) is not None:
            lock.snapshot_id[(w, rec.k)] = sid          # the request that landed added it

    def _continue(self, w: int, rec, where: str) -> None:
        """After the faulted request: the writer's own steps to its next commit request or end."""
        lock = self.lock
        wr = lock.model.writers[w - 1]
        if where == ENDED and isinstance(rec.outcome, A.Conflict) and iceberg.own_landed(lock.model, w, rec.k):
            raise Violation("P4 ReadersSeeCommitted", f"writer {w}: the engine reported a conflict ({rec.outcome.reason}) "
                            "for a commit that landed: an unknown outcome taken as a failure (duckdb-iceberg #1120, "
                            "apache/iceberg #12818)", "committed or unknown", rec.outcome)
        if wr.k == rec.k and wr.phase == RETRY and where == ENDED and isinstance(rec.outcome, A.Conflict):
            self._gave_up(w)
        if lock.model.writers[w - 1].k == rec.k:
            if wr.phase == RESOLVE and where == ENDED and isinstance(rec.outcome, A.Unknown):
                self.unknown.add((w, rec.k))
                self._advance((END_UNKNOWN, w), end_unknown(lock.model, w))
                self.resolve(w, rec.k)
            else:
                resolving = wr.phase == RESOLVE
                self._solo(w, (SWAP,) if where == GATE else ())
                if resolving:
                    ended = lock.model.writers[w - 1].k != rec.k
                    committed = ended and lock.model.outcomes[w - 1][rec.k - 1].res == COMMITTED
                    if committed:
                        lock.stats.unknown_resolved_committed += 1
                    else:
                        lock.stats.unknown_resolved_not_committed += 1
        ended = lock.model.writers[w - 1].k != rec.k
        if where == GATE and ended:
            res = lock.model.outcomes[w - 1][rec.k - 1].res
            raise Violation("P3 NoDuplicateCommit" if res == COMMITTED else AGREEMENT,
                            f"writer {w}: the engine sent another commit request after its operation ended "
                            f"{res} for the model" + (" (a retry re-applies a landed commit)" if res == COMMITTED
                                                      else ""), res, "another commit request")
        if where == ENDED and not ended:
            raise Violation(AGREEMENT, f"writer {w}: the engine ended ({rec.outcome}) where the model's writer "
                            f"commits again (phase {lock.model.writers[w - 1].phase})",
                            lock.model.writers[w - 1].phase, rec.outcome)

    def _gave_up(self, w: int) -> None:
        """The engine ended Conflict after a rejection although the model's writer has
        attempts left: its loop stopped early, as its time budget may stop it (6.3; the
        model has no clocks). The model's Retry with the attempts this one has made."""
        lock = self.lock
        s, wr = lock.model, lock.model.writers[w - 1]
        if iceberg.reconcile(lock.bounds, s, w).writers[w - 1].k != wr.k:
            return                                   # the model's own Retry ends it too
        self._advance(("Retry", w), iceberg.reconcile(replace(lock.bounds, attempts_max=wr.attempt), s, w))
        lock.stats.gave_up += 1

    def _advance(self, label, nxt=None, count: bool = False) -> None:
        lock = self.lock
        if nxt is None:
            nxt = dict(iceberg.successors(lock.bounds, lock.model)).get(label)
            if nxt is None:
                raise Violation(AGREEMENT, f"writer {label[1]}: no model action mirrors what the engine made of "
                                f"the fault here (it would be {label})", "a mirror", label)
        if count and FAULT_OF_ACTION.get(label[0]):
            lock.stats.faults[FAULT_OF_ACTION[label[0]]] += 1
        lock.advance(label, nxt)

    def _solo(self, w: int, stop_at) -> None:
        for label, nxt in solo(self.lock.bounds, self.lock.model, w, stop_at):
            self.lock.advance(label, nxt)

    def _await(self, w: int, rec) -> str:
        """Wait until writer w's commit is held at its gate (GATE) or has ended (ENDED)."""
        waited = 0.0
        while not rec.gate.wait_arrived(GATE_POLL_S):
            if not rec.thread.is_alive():
                if rec.gate.arrived.is_set():
                    break
                self.join(w, rec)
                return ENDED
            waited += GATE_POLL_S
            if waited >= BLACK_BOX_WAIT_S:
                raise Violation("L2 OperationsTerminate", f"writer {w}: the commit neither ended nor sent a "
                                f"commit request within {BLACK_BOX_WAIT_S:.0f} s", "ended", "running")
        return GATE

    def join(self, w: int, rec) -> None:
        gate, rec.gate = rec.gate, None
        if gate is not None:
            self.faults.remove_gate(gate)
            gate.release()
        await_outcome(w, rec)
        if rec.outcome is not None and rec.outcome.snapshot_id is not None:
            self.lock.snapshot_id.setdefault((w, rec.k), rec.outcome.snapshot_id)

    def _note(self, cls: tuple) -> None:
        for observe in self.lock.observers:
            note = getattr(observe, "note", None)
            if note is not None:
                note("rest", cls)

    def close(self) -> None:
        for rec in list(self.lock.active.values()):
            if rec.gate is not None:
                rec.gate.release()
        self.faults.close()
        for rec in list(self.lock.active.values()):
            if rec.thread is not None:
                rec.thread.join(BLACK_BOX_WAIT_S)


def mirror(kind: str | None, where: str, outcome, applied: bool) -> list:
    """The model actions that match a commit released into fault `kind` (None: none), given
    whether the engine then sent another commit request (GATE) or ended with `outcome`, and
    whether the server applied the request (or the same request sent again)."""
    if kind in (None, "duplicate"):
        return ["Swap"]
    if kind == "reject":
        return ["SwapFails"]
    if kind == "fail_before" and applied:   # not applied, then the engine sent it again and it was
        return ["AckLost"]
    if kind == "fail_before":       # not applied: taken as a rejection, or reported unknown
        return ["SwapDelayed", "Drop"] if where == ENDED and isinstance(outcome, A.Unknown) else ["SwapFails"]
    if kind in ("fail_after", "lost"):
        return ["AckLost"]
    assert kind == "delay", kind
    return ["SwapDelayed"]


def _again(first, held, fault) -> bool:
    """Whether the request `held` is `first` sent again: the same body and Idempotency-Key
    after an answer that left the outcome unknown (after a definite one, say a 409, the
    same request is the engine's next attempt)."""
    same = held.body == first.body and (held.exchange and held.exchange.key) == (first.exchange and first.exchange.key)
    return same and fault is not None and fault.kind in ("fail_before", "fail_after", "lost", "delay")


def _added_snapshot(body: bytes | None) -> int | None:
    """The snapshot a REST commit request makes main's head, among those it adds (one
    commit may add several: pyiceberg's overwrite adds a delete and an append), if any."""
    import json
    try:
        request = json.loads(body or b"null")
    except ValueError:
        return None
    added, head = [], None
    for change in request.get("table-changes", [request]) if isinstance(request, dict) else []:
        for update in change.get("updates", []) if isinstance(change, dict) else []:
            if not isinstance(update, dict):
                continue
            if update.get("action") == "add-snapshot":
                added.append(update.get("snapshot", {}).get("snapshot-id"))
            elif update.get("action") == "set-snapshot-ref" and update.get("ref-name") == "main":
                head = update.get("snapshot-id")
    return head if head in added else (added[-1] if added else None)

