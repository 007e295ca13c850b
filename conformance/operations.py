"""One operation of a lockstep program: what the engine is asked to do for what the model
planned (`op_spec`), and what the suite records of it (`OpRecord`)."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from icefloe.conformance import adapter as A
from icefloe.conformance.readers import row_id
from icefloe.conformance.violation import Violation
from icefloe.model import iceberg
from icefloe.model.state import APPEND, DELETE, EXPIRE, OVERWRITE, REWRITE, ROLLBACK


@dataclass
class OpRecord:
    w: int
    k: int
    kind: str
    spec: A.OpSpec
    commit: object = None
    start_snapshot_id: int | None = None
    planned_snapshot_id: int | None = None   # the snapshot id drawn at plan time (kept, 1.5)
    result: str | None = None            # model result once ended
    outcome: object = None               # engine outcome once ended
    thread: threading.Thread | None = None
    gate: object = None
    box: dict = field(default_factory=dict)


def op_spec(model, snapshot_id: dict, w: int, kind: str, before) -> A.OpSpec:
    """The engine's operation for what the model planned when writer `w` took `("Begin", w,
    kind)` from state `before` to `model` (same rows, same target); `snapshot_id` maps
    model snapshot ids to the engine's."""
    k = before.writers[w - 1].k
    after = model.writers[w - 1]
    op_id = row_id((w, k))
    noop = after.k != k
    head = iceberg.head_snap(iceberg.current(before))
    content = dict(model.content)
    if kind == APPEND:
        return A.OpSpec(A.APPEND, op_id, rows=(op_id,))
    if kind == OVERWRITE:
        return A.OpSpec(A.OVERWRITE, op_id, rows=(op_id,), where=None)
    if kind == DELETE:
        where = frozenset() if noop else frozenset(row_id(r) for f in after.files for r in content[f])
        return A.OpSpec(A.DELETE, op_id, where=where)
    if kind == REWRITE:
        return A.OpSpec(A.REWRITE, op_id, where=None)
    if kind == ROLLBACK:
        target = head.id if noop else after.target
        return A.OpSpec(A.ROLLBACK, op_id, target_snapshot_id=snapshot_id[target])
    assert kind == EXPIRE, kind
    return A.OpSpec(A.EXPIRE, op_id, retain_last=1)


BOOTSTRAP_PHASES_MAX = 64


def run_whole(table, w: int, spec: A.OpSpec):
    """Run an operation to its outcome outside the lockstep (the bootstrap appends)."""
    commit = table.begin(w, spec)
    if isinstance(commit, A.SteppingCommit) and not hasattr(commit, "run"):
        for _ in range(BOOTSTRAP_PHASES_MAX):
            if commit.done:
                return commit.outcome
            commit.step()
        raise Violation("L2 OperationsTerminate", f"op {spec.op_id} did not end in {BOOTSTRAP_PHASES_MAX} phases")
    return commit.run()
