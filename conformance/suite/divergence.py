"""Naming what a divergence breaks (the report's first divergence names the step, what the
model and the engine observed, and the property at stake)."""
from __future__ import annotations

from icefloe.conformance.suite.readers import row_id
from icefloe.conformance.violation import AGREEMENT, Violation
from icefloe.model.state import CONFLICT, DONE


def engine_failure(lock, w: int, e: Exception) -> Violation:
    """Name what an engine's own failed check protects, from what the model did at this
    step: if the model's writer ended in conflict at a retry and the engine went on to
    a new attempt, its validation let through what the model's rejects (P5), and its
    assertion is what stopped it; otherwise the engine left the model (A0)."""
    label = lock.program[-1] if lock.program else None
    rec = lock.active.get(w)
    phase = getattr(rec.commit, "phase", None) if rec is not None and rec.commit is not None else None
    wr = lock.model.writers[w - 1] if w else None
    model = "no error"
    prop = AGREEMENT
    if rec is not None and wr is not None:
        if wr.k != rec.k:
            res = lock.model.outcomes[w - 1][rec.k - 1].res
            model = f"op {row_id((w, rec.k))} ended {res}"
            if res == CONFLICT and label and label[0] in ("Retry", "Resolve") and phase not in (
                    "retry", "resolve", DONE):
                prop = "P5 ValidationSound"
        else:
            model = f"phase {wr.phase}"
    why = (" (its validation accepted what the model's rejects; this assertion is what stopped the commit)"
           if prop != AGREEMENT else "")
    return Violation(prop, f"writer {w}: the engine's own check failed in phase {phase}: {type(e).__name__}: "
                     f"{e}; the model: {model}{why}", model, f"{type(e).__name__} in phase {phase}: {e}")


def check_snapshot_ids(lock) -> None:
    """An operation keeps the snapshot id it drew at plan time (spec/PROTOCOL.md 1.5):
    checked after the rows, so a redraw that duplicated rows is named by what it broke."""
    for (w, k), rec in lock.ops.items():
        sid = getattr(rec.outcome if rec.result is not None else rec.commit, "snapshot_id", None)
        if rec.planned_snapshot_id is not None and sid not in (None, rec.planned_snapshot_id):
            raise Violation(AGREEMENT, f"op {row_id((w, k))}: planned as snapshot {rec.planned_snapshot_id}, "
                            f"now {sid} (spec/PROTOCOL.md 1.5: an operation keeps its snapshot id across "
                            "attempts, so the snapshot it reports is the one that landed)",
                            rec.planned_snapshot_id, sid)


def check_retained(lock) -> None:
    """At the end of a program: the engine retains no snapshot the model expired (an expiry
    that keeps what it was asked to remove did something else than the operation says)."""
    from icefloe.model import iceberg
    th = lock.last_history.table if lock.last_history is not None else None
    if th is None or not th.versions:
        return
    model = {lock.snapshot_id[s.id] for s in iceberg.current(lock.model).snaps if s.id in lock.snapshot_id}
    known = set(lock.snapshot_id.values())
    kept = sorted((set(th.versions[-1].snapshot_ids) & known) - model)
    if kept:
        raise Violation(AGREEMENT, f"the engine retains snapshots {kept}, which the model's expiry removed",
                        sorted(model), sorted(th.versions[-1].snapshot_ids))
