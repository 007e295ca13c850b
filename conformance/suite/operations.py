"""One operation of a lockstep program: what the engine is asked to do for what the model
planned (`op_spec`), and what the suite records of it (`OpRecord`)."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from icefloe.conformance import adapter as A
from icefloe.conformance.suite.readers import row_id
from icefloe.conformance.violation import AGREEMENT, AdapterError, Violation
from icefloe.model import iceberg
from icefloe.model.state import (
    APPEND, CDC_UPDATE, DELETE, DELETE_FILE_KINDS, EXPIRE, FAST_FORWARD, MAIN, OVERWRITE, REWRITE, ROLLBACK, ROW_DELETE,
    ROW_UPDATE, TAG_OP, UPSERT,
)


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


def op_spec(model, snapshot_id: dict, w: int, kind: str, before, choices=()) -> A.OpSpec:
    """The engine's operation for what the model planned when writer `w` took `("Begin", w,
    kind)` from state `before` to `model` (same rows, same target); `snapshot_id` maps
    model snapshot ids to the engine's."""
    k = before.writers[w - 1].k
    after = model.writers[w - 1]
    op_id = row_id((w, k))
    noop = after.k != k
    head = iceberg.head_snap(iceberg.current(before))
    content = dict(model.content)
    # The partition and ref the Begin label chose (`choices`: its elements after the kind).
    part = next((x for x in choices if isinstance(x, int)), 1)
    ref = next((x for x in choices if isinstance(x, str)), MAIN)
    if kind == APPEND:
        return A.OpSpec(A.APPEND, op_id, rows=(op_id,), partition=part, ref=ref)
    if kind == OVERWRITE:
        return A.OpSpec(A.OVERWRITE, op_id, rows=(op_id,), where=None, partition=part)
    if kind == DELETE:
        where = frozenset() if noop else frozenset(row_id(r) for f in after.files for r in content[f])
        return A.OpSpec(A.DELETE, op_id, where=where, partition=part)
    if kind == REWRITE:
        return A.OpSpec(A.REWRITE, op_id, where=None, partition=part)
    if kind == ROLLBACK:
        target = head.id if noop else after.target
        return A.OpSpec(A.ROLLBACK, op_id, target_snapshot_id=snapshot_id[target])
    if kind in (ROW_DELETE, ROW_UPDATE):
        row = None if noop else row_id(after.row[1])
        return A.OpSpec(kind, op_id, rows=() if row is None or kind == ROW_DELETE else (row,), partition=part,
                        row=row)
    if kind == UPSERT:
        return A.OpSpec(A.UPSERT, op_id, rows=(op_id,), partition=part)
    if kind == CDC_UPDATE:
        first = row_id(after.row[1])     # the version the commit deletes in its own data file
        return A.OpSpec(A.CDC_UPDATE, op_id, rows=(first, op_id), partition=part, row=first)
    if kind in (TAG_OP, FAST_FORWARD):
        # A no-op moves its ref where it is (main's head): the engine plans nothing too.
        target = head.id if noop else after.target
        return A.OpSpec(kind, op_id, target_snapshot_id=snapshot_id[target])
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


def bootstrap(lock, engine, ctx: A.TableContext):
    """(ctx, table): the table the model starts from, with its two bootstrap appends: its
    partitions (row-level kinds need the partition column too) and, with refs, the branch
    at the bootstrap's head. Records the bootstrap's snapshot ids in `lock.snapshot_id`."""
    bounds = lock.bounds
    needs_part = bounds.partitions > 1 or bool(set(bounds.kinds) & set(DELETE_FILE_KINDS))
    ctx = replace(ctx, partitions=2 if needs_part else 1, refs=bounds.refs)
    try:
        table = engine.create_table(ctx)
    except A.EngineSpecError:
        raise
    except Exception as e:  # noqa: BLE001 - the adapter's contract is a table handle
        raise AdapterError("create_table", e) from e
    for k in (1, 2):
        part = iceberg.mget(lock.model.parts, (0, k))
        try:
            out = run_whole(table, 0, A.OpSpec(A.APPEND, f"0.{k}", rows=(row_id((0, k)),), partition=part))
        except (Violation, AdapterError):
            raise
        except Exception as e:  # noqa: BLE001 - the adapter's contract is an Outcome
            raise AdapterError(f"the bootstrap append 0.{k}", e) from e
        if not isinstance(out, A.Committed) or out.snapshot_id is None:
            raise Violation(AGREEMENT, f"the bootstrap append 0.{k} did not commit: {out}")
        lock.snapshot_id[(0, k)] = out.snapshot_id
    if bounds.refs:
        table.create_branch(A.BRANCH, lock.snapshot_id[(0, 2)])
    return ctx, table
