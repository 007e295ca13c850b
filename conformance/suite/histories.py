"""The engine's recorded history, judged (spec/PROPERTIES.md P1-P6 as seen from outside;
the checker is icefloe.model.checks.history).

`record(lock)` turns what a lockstep run saw into the checker's `History`: the engine's
own `TableHistory` (its metadata chain and snapshot records, as its adapter returned
it), plus one `Operation` per operation the program ran (kind, outcome as the engine
reported it, snapshot, starting snapshot, files read, added and removed) and the reads
that returned file sets. `judge(lock)` runs the checker and raises a Violation naming
the property of each anomaly it finds.
"""
from __future__ import annotations

import re

from icefloe.conformance import adapter as A
from icefloe.conformance.suite.readers import row_id
from icefloe.conformance.violation import AGREEMENT, Violation
from icefloe.model.checks import history as H
from icefloe.model.state import CRASHED, DELETE, NOOP, OVERWRITE, REWRITE

# The history checker's anomalies, by the property of spec/PROPERTIES.md each breaks.
ANOMALY_PROPERTY = {
    "forked history": "P1 LinearHistory", "lost commit": "P2 NoLostCommit",
    "failed commit landed": "P4 ReadersSeeCommitted", "duplicate commit": "P3 NoDuplicateCommit",
    "dirty read": "P4 ReadersSeeCommitted", "lost update": "P6 Isolation", "G0": "P6 Isolation",
    "G1c": "P6 Isolation", "G-single": "P6 Isolation", "G2": "P6 Isolation",
}
def _main_line(th: A.TableHistory) -> set:
    line, sid = set(), th.versions[-1].main if th.versions else None
    while sid is not None and sid not in line:
        line.add(sid)
        sid = th.snapshots[sid].parent_id if sid in th.snapshots else None
    return line


def record(lock) -> H.History:
    th = lock.table.history()
    snaps = th.snapshots
    main_line = _main_line(th)
    operations, observed = [], []
    partitioned = lock.ctx.partitions > 1
    for (w, k), rec in sorted(lock.ops.items()):
        out = rec.outcome
        if rec.result is None:
            # Not ended for the model; if the engine ended it (a divergence), judge what
            # the engine claims, so the checker can name what it breaks (a black-box
            # engine's outcome is in the record once its commit ended).
            commit = rec.commit
            if out is None and (commit is None or not hasattr(commit, "step") or not commit.done):
                continue
            out = out if out is not None else commit.outcome
            if out is not None and out.snapshot_id is not None:
                lock.snapshot_id.setdefault((w, k), out.snapshot_id)
        if rec.result == NOOP or out is None and rec.result != CRASHED:
            continue
        if rec.result == CRASHED and lock.snapshot_id.get((w, k)) not in snaps:
            continue                 # crashed before any attempt of it landed
        sid = lock.snapshot_id.get((w, k)) if rec.spec.kind not in (A.ROLLBACK, A.EXPIRE) else None
        rec_s = snaps.get(sid) if sid is not None else None
        added = rec_s.added_files if rec_s else frozenset()
        removed = rec_s.removed_files if rec_s else frozenset()
        if rec_s is not None and (sid not in main_line or rec.spec.ref != A.MAIN_REF):
            # Rolled back, or committed to another branch: its effect on main was undone
            # (or never made), so it neither read for nor wrote to main's transactions (the
            # checker still sees its snapshot for the lost / duplicate commit checks).
            added = removed = frozenset()
        location = getattr(out, "metadata_location", None)
        if location:
            observed.append(location)
        # An overwrite reads its partition (the whole table when it has one partition).
        read = (frozenset({rec.spec.partition}) if partitioned else H.ALL) if rec.kind == OVERWRITE else frozenset()
        operations.append(H.Operation(
            row_id((w, k)), rec.kind, A.outcome_name(out) or A.UNKNOWN, sid, location, rec.start_snapshot_id,
            read, removed if rec.kind in (DELETE, REWRITE) else frozenset(), added, removed))
    return H.History(th, tuple(operations), tuple(lock.readers.reads), _partitions(th) if partitioned else {},
                     tuple(observed))


_PART = re.compile(rf"/{A.PART_COLUMN}=(\d+)/")


def _partitions(th: A.TableHistory) -> dict:
    """Each data file's partition, read off its location (`.../part=N/...`, where an engine
    of the partitioned table writes it)."""
    out = {}
    for r in th.snapshots.values():
        for f in r.files | r.added_files | r.removed_files:
            m = _PART.search(f)
            if m:
                out[f] = int(m.group(1))
    return out


def judge(lock) -> H.Verdict:
    """The history checker over what the run recorded; a Violation if it finds anomalies."""
    try:
        lock.last_history = record(lock)
    except Exception as e:  # noqa: BLE001 - a chain the engine cannot read back
        raise Violation("P8 NoDanglingRefs", f"the engine's history cannot be read: {type(e).__name__}: {e}",
                        "a readable metadata chain", repr(e)) from e
    verdict = lock.last_history_verdict = H.check_history(lock.last_history, lock.caps.isolation)
    if verdict.anomalies:
        names = sorted({ANOMALY_PROPERTY.get(a.name, AGREEMENT) for a in verdict.anomalies})
        v = Violation(names[0], "the history checker: " + "; ".join(
            f"{a.name}: {a.explanation}" for a in verdict.anomalies))
        v.verdict, v.properties = verdict, set(names)
        raise v
    return verdict
