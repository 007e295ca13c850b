"""Black-box engines in lockstep (docs/conformance.md "Commits"): a commit runs whole in a
worker thread, and the suite interleaves writers only by holding them at the fault
proxy.

`("Begin", w, kind)` starts the commit in a thread that the proxy holds at its metadata
JSON PUT (a gate on the writer's own access key); the model meanwhile runs that writer
to METADATA (its data, manifests and manifest list are written inside the engine).
Other writers may commit while it waits. A later `("WriteMetadata", w)` releases the
gate and waits for the outcome, while the model runs that writer's remaining non-fault
actions (`model_solo`). A no-op for the model must end without reaching the gate.
"""
from __future__ import annotations

import threading

from icefloe.conformance.adapter import EngineFailure
from icefloe.conformance.suite.view import solo
from icefloe.conformance.violation import AGREEMENT, AdapterError, Violation
from icefloe.model.state import DONE, METADATA

BLACK_BOX_WAIT_S = 60.0
GATE_ARRIVE_S = 30.0
GATE_POLL_S = 0.05




def start_commit(w: int, rec) -> None:
    """Run writer `w`'s engine commit in a thread of its own; its outcome (or what it raised)
    lands in `rec.box` for await_outcome."""
    def run():
        try:
            rec.box["outcome"] = rec.commit.run()
        except BaseException as e:  # noqa: BLE001 - reported as the engine's observation
            rec.box["error"] = e
    rec.thread = threading.Thread(target=run, name=f"writer-{w}", daemon=True)
    rec.thread.start()

def await_outcome(w: int, rec) -> None:
    """Wait for writer `w`'s engine thread (released from its gate) to end; its outcome goes
    to `rec.outcome`. A commit that does not end in time breaks L2; one whose engine failed
    (adapter.EngineFailure) disagrees with the model (A0); one that raises anything else is an
    adapter error (violation.AdapterError), not a property's violation."""
    rec.thread.join(BLACK_BOX_WAIT_S)
    if rec.thread.is_alive():
        raise Violation("L2 OperationsTerminate", f"writer {w}: the commit did not end within "
                        f"{BLACK_BOX_WAIT_S:.0f} s", "ended", "running")
    error = rec.box.get("error")
    if isinstance(error, EngineFailure):   # the engine failed its own operation: an observation
        raise Violation(AGREEMENT, f"writer {w}: the engine's commit failed: {error}", "an outcome",
                        repr(error.cause))
    if error is not None:       # the adapter's contract is an Outcome: what else it raised is its own error
        raise AdapterError(f"writer {w}: the commit's run()", error)
    rec.outcome = rec.box.get("outcome")

class BlackBoxDriver:
    def __init__(self, lock):
        self.lock = lock

    def start(self, w: int, rec) -> None:
        """Run the commit in a worker thread, held at its metadata write."""
        from icefloe.conformance.testing.proxy import Match
        lock = self.lock
        gate = None
        if lock.proxy is not None:
            gate = lock.proxy.add_gate(Match(operation=frozenset({"PutObject", "ConditionalPutObject"}),
                                             key="*.metadata.json", client=lock.ctx.access_key(w)))
        rec.gate = gate

        start_commit(w, rec)
        wr = lock.model.writers[w - 1]
        if wr.phase == DONE or wr.k != rec.k:        # the model found nothing to do
            self.join(w, rec)
            return
        waited = 0.0
        while gate is not None and not gate.wait_arrived(GATE_POLL_S) and rec.thread.is_alive():
            waited += GATE_POLL_S
            if waited >= GATE_ARRIVE_S:
                break
        if gate is not None and not gate.wait_arrived(0):
            self.join(w, rec)
            raise Violation(AGREEMENT, f"writer {w}: the engine never wrote its metadata "
                            f"(outcome {rec.outcome})", wr.phase, rec.outcome)
        self.model_solo(w, stop_at=(METADATA,))

    def join(self, w: int, rec) -> None:
        if rec.gate is not None:
            rec.gate.release()
        await_outcome(w, rec)

    def finish(self, w: int) -> None:
        """`("WriteMetadata", w)`: release the writer and wait for its outcome."""
        lock = self.lock
        rec = lock.active[w]
        self.join(w, rec)
        if rec.outcome is not None and rec.outcome.snapshot_id is not None:
            lock.snapshot_id.setdefault((w, rec.k), rec.outcome.snapshot_id)
        self.model_solo(w, stop_at=())

    def model_solo(self, w: int, stop_at) -> None:
        """Advance the model's writer w by its non-fault actions (inside a black-box commit)."""
        for label, nxt in solo(self.lock.bounds, self.lock.model, w, stop_at):
            self.lock.advance(label, nxt)

    def close(self) -> None:
        for rec in list(self.lock.active.values()):
            if rec.gate is not None:
                rec.gate.release()
            if rec.thread is not None:
                rec.thread.join(BLACK_BOX_WAIT_S)

