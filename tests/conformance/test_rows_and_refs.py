"""The suite's partitioned table with row-level deletes and refs (issue 12): schedules the
model decides, replayed on icefloe in lockstep, and the two mutants of those areas caught.

Goal: the lockstep drives partitions, row deltas and refs on a real table, and what the
model says of a schedule (commit, conflict, the rows after deletes are applied) is what
icefloe does. Method: replay programs at the coverage families' own instances
(conformance.coverage.rows); each replay ends as every run does (`Lockstep.finish`: every
retained snapshot read, the history checker). The mutants run in a fresh process with the
mutant planted through the gate's import hook (mutants/hook.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import pytest
from contextlib import contextmanager
from dataclasses import fields, replace
from pathlib import Path

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import registry
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.coverage.families import FAMILIES
from icefloe.conformance.suite.profiles import MEMORY, PROFILES, bounds_for
from icefloe.conformance.suite.readers import row_id
from icefloe.conformance.suite.runs import new_lockstep
from icefloe.conformance.suite.stats import Stats
from icefloe.model.state import SERIALIZABLE, SNAPSHOT

ROOT = Path(__file__).resolve().parents[2]
WRITES = ("WriteData", "WriteManifests", "WriteManifestList", "WriteMetadata")


def family_bounds(name: str, **changes):
    """The instance the coverage family `name` searches, for icefloe at the ci profile."""
    family = next(f for f in FAMILIES if f.name == name)
    return replace(family.bounds(bounds_for(registry.load_engine("icefloe"), PROFILES["ci"])), **changes)


def writes(w: int, lock) -> list:
    """Writer w's private write steps, taken while one is enabled (up to its swap)."""
    done = []
    while True:
        label = next((lb for lb in lock.enabled() if lb[0] in WRITES and lb[1] == w), None)
        if label is None:
            return done
        lock.apply(label)
        done.append(label)


@contextmanager
def run(bounds, *steps):
    """Replay `steps` (a label, or ("writes", w): writer w's writes) on icefloe's memory
    store and finish the run; yields the lockstep (open until the block ends) and the
    program as run."""
    backends = Backends()
    lock = new_lockstep(registry.load_engine("icefloe"), backends, MEMORY, bounds, 0, Stats())
    program = []
    try:
        for step in steps:
            if step[0] == "writes":
                program += writes(step[1], lock)
            else:
                lock.apply(step)
                program.append(step)
        lock.finish()
        yield lock, program
    finally:
        lock.close()
        backends.close()


def outcome(lock, w: int):
    return type(lock.ops[(w, 1)].outcome).__name__


def test_operations_on_disjoint_partitions_both_commit():
    """Goal: L3 on the real table: a serializable overwrite of partition 1 retried over an
    append to partition 2 commits (no spurious conflict), and over an append to its own
    partition fails. Method: the partitions family's instance; each schedule replayed."""
    b = family_bounds("partitions", kinds=("append", "overwrite"))
    for rival_part, expect in ((2, "Committed"), (1, "Conflict")):
        with run(b, ("Begin", 1, "overwrite", 1), ("writes", 1), ("Begin", 2, "append", rival_part),
                 ("writes", 2), ("Swap", 2), ("Swap", 1), ("Retry", 1), ("writes", 1),
                 *((("Swap", 1),) if expect == "Committed" else ())) as (lock, _):
            assert outcome(lock, 2) == "Committed" and outcome(lock, 1) == expect, rival_part
            assert lock.last_history_verdict.valid is True


def test_update_then_delete_of_the_same_row_the_delete_conflicts():
    """Goal: the merge-on-read UPDATE/DELETE schedule (docs/merge-on-read-anomaly.md) on the
    suite's table: the row_update commits, the row_delete retried over it conflicts at both
    isolation levels, and row (0, 1) is live once (its updated copy). Method: the trace's
    order, replayed at the deltas family's instance."""
    for isolation in (SERIALIZABLE, SNAPSHOT):
        b = family_bounds("deltas", writers=2, kinds=("row_delete", "row_update"), isolation=isolation, por=False)
        with run(b, ("Begin", 1, "row_delete"), ("writes", 1), ("Begin", 2, "row_update"), ("writes", 2),
                 ("Swap", 2), ("Swap", 1), ("Retry", 1)) as (lock, _):
            assert (outcome(lock, 2), outcome(lock, 1)) == ("Committed", "Conflict"), isolation
            assert lock.table.read_current().rows == (row_id((0, 1)), row_id((0, 2))), isolation


def _planted(mutant: str, bounds, program) -> str:
    """The property a replay of `program` names on icefloe with `mutant` planted ('' if none)."""
    script = (
        "import json, sys\n"
        "from mutants import hook\n"
        f"hook.install({mutant!r})\n"
        "from icefloe.conformance.engines import registry\n"
        "from icefloe.conformance.suite.runs import replay\n"
        "from icefloe.conformance.violation import Violation\n"
        "from icefloe.model import iceberg\n"
        "spec = json.loads(sys.stdin.read())\n"
        "bounds = iceberg.Bounds(**{k: tuple(v) if isinstance(v, list) else v for k, v in spec['bounds'].items()})\n"
        "try:\n"
        "    replay(registry.load_engine('icefloe'), [tuple(x) for x in spec['program']], bounds=bounds)\n"
        "except Violation as v:\n"
        "    print(v.prop)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", script], input=json.dumps({"bounds": {f.name: getattr(bounds, f.name) for f in fields(bounds)},
                                                                            "program": program}),
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_a_retried_append_keeps_its_rows_after_a_concurrent_upsert():
    """Goal: stale-sequence-number-on-retry dies: an append retried over an append and an
    upsert (an equality delete of the partition, newer than both) takes the sequence number
    of the snapshot that lands, so the delete does not apply to its rows. Method: the
    deltas family's schedule, on icefloe (the rows agree: the retried append's row and the
    upsert's) and with the mutant planted (P6: the append's row is gone)."""
    b = family_bounds("deltas", kinds=("append", "upsert"))
    with run(b, ("Begin", 1, "append"), ("writes", 1), ("Begin", 2, "append"), ("writes", 2), ("Swap", 2),
             ("Begin", 3, "upsert"), ("writes", 3), ("Swap", 3), ("Swap", 1), ("Retry", 1), ("writes", 1),
             ("Swap", 1)) as (lock, program):
        assert [outcome(lock, w) for w in (1, 2, 3)] == ["Committed"] * 3
        assert lock.table.read_current().rows == (row_id((1, 1)), row_id((3, 1)))
    assert _planted("stale-sequence-number-on-retry", b, program) == "P6 Isolation"


def test_expiry_keeps_what_the_branch_reaches():
    """Goal: expire-keeps-main-only dies: after main moves on and drops the bootstrap's
    file, an expiry must keep the files the branch (at the bootstrap's head) reaches.
    Method: the refs family's schedule on icefloe (every retained snapshot readable) and
    with the mutant planted (P8: the branch's head is unreadable)."""
    b = family_bounds("refs")
    one = lambda kind: (("Begin", 1) + kind, ("writes", 1), ("Swap", 1))   # noqa: E731
    with run(b, *one(("append", "main")), *one(("delete",)), *one(("expire",))) as (lock, program):
        assert [outcome_of(lock, k) for k in (1, 2, 3)] == ["Committed"] * 3
        assert lock.table.read_at(lock.snapshot_id[(0, 2)]).rows == (row_id((0, 1)), row_id((0, 2)))
    assert _planted("expire-keeps-main-only", b, program) == "P8 NoDanglingRefs"


def outcome_of(lock, k: int):
    return type(lock.ops[(1, k)].outcome).__name__


def test_an_engine_without_partitions_or_refs_is_told_why_their_classes_are_out_of_reach():
    """Goal: the verdict's coverage says why an engine with one partition and main only
    (pyiceberg 0.12's adapter) cannot reach a class of the partitions or refs families.
    Method: directed._why on such classes with those capabilities."""
    from icefloe.conformance.coverage import directed
    from icefloe.conformance.engines.icefloe_engine import CAPABILITIES
    caps = replace(CAPABILITIES, partitions=1, refs=False,
                   operations=frozenset({A.APPEND, A.OVERWRITE, A.DELETE, A.EXPIRE}))
    assert directed._why(("overwrite", "append", "other partition", "data", "committed"), caps) == \
        "one partition (capability partitions=1)"
    assert directed._why((("append@b", "delete", "expire"),), caps) == "no commits to a branch (capability refs=False)"
    assert directed._why((("append", "tag", "expire"),), caps) == "operation tag not supported"
    assert directed._why(("overwrite", "append", "same partition", "data", "committed"), caps) != \
        directed._why(("overwrite", "append", "other partition", "data", "committed"), caps)


_SEED_GATE_BOUNDS = dict(writers=2, ops=3, kinds=("append", "overwrite", "delete", "rewrite", "rollback", "expire",
                                                  "row_delete", "row_update", "upsert", "tag", "fast_forward"),
                         faults=("write_fail", "swap_fail", "ack_lost", "swap_delayed", "crash"), fault_budget=3,
                         attempts_max=3, isolation=SERIALIZABLE, orphan_runs=1, workload="any", por=False,
                         partitions=2, refs=True)
def _WRITES(w):  # noqa: N802 - a program fragment: writer w's manifest, list and metadata writes
    return (("WriteManifests", w), ("WriteManifestList", w), ("WriteMetadata", w))


_ALL_FAULTS = ("Faults", 0, ("write_fail", "swap_fail", "ack_lost", "swap_delayed", "crash"))


@pytest.mark.parametrize("ctx_seed, program", [
    # seed 1: the delete names one file; a concurrent UPDATE's copy of one of its rows is no conflict
    (2376, [_ALL_FAULTS, ("Begin", 1, "delete", 1), ("Begin", 2, "row_update", 1), ("WriteData", 2),
            ("WriteManifests", 1), ("WriteManifestList", 1), ("WriteManifests", 2), ("WriteManifestList", 2),
            ("WriteMetadata", 2), ("Swap", 2), ("WriteMetadata", 1), ("Swap", 1), ("Retry", 1)]),
    # seed 6: a retry that keeps its filtered manifests meets a manifests-phase write failure
    (2061, [("Faults", 0, ("write_fail",)), ("RemoveOrphans", 0), ("Begin", 1, "append", 1, "b"), ("WriteData", 1),
            ("WriteManifests", 1), ("Begin", 2, "delete", 1), ("WriteManifestList", 1), ("WriteManifests", 2),
            ("WriteManifestList", 2), ("WriteMetadata", 1), ("Swap", 1), ("WriteMetadata", 2),
            ("Begin", 1, "append", 1, "b"), ("Swap", 2), ("Retry", 2), ("WriteFails", 2)]),
    # seed 4: after a row update and a compaction of its partition, the update's position
    # delete (naming the compacted file only) attached to the compaction's output by
    # partition alone, so a second compaction of that lone file committed; the model's is a no-op
    (1324, [("Faults", 0, ("swap_fail",)), ("RemoveOrphans", 0), ("Begin", 2, "row_update", 2), ("WriteData", 2),
            ("Begin", 1, "expire"), ("WriteManifests", 2), ("WriteManifestList", 2), ("WriteMetadata", 1),
            ("WriteMetadata", 2), ("Swap", 1), ("Swap", 2), ("Retry", 2), ("WriteManifests", 2),
            ("WriteManifestList", 2), ("WriteMetadata", 2), ("Swap", 2), ("Begin", 1, "rewrite", 2),
            ("Begin", 2, "append", 1, "b"), ("WriteData", 1), ("WriteData", 2), ("WriteManifests", 1),
            ("WriteManifestList", 1), ("WriteManifests", 2), ("WriteManifestList", 2), ("WriteMetadata", 1),
            ("Swap", 1), ("Begin", 1, "rewrite", 2)]),
    # seed 6, after the first fix: an upsert whose starting snapshot a rollback took off
    # main; the model's upsert assumes nothing, the engine's row delta checked ancestry
    (1346, [("Begin", 1, "append", 1, "b"), ("Begin", 2, "append", 1, "b"), ("WriteData", 1), ("WriteData", 2),
            ("WriteManifests", 1), ("WriteManifests", 2), ("WriteManifestList", 1), ("WriteManifestList", 2),
            ("WriteMetadata", 2), ("AckLost", 2), ("WriteMetadata", 1), ("AckLost", 1), ("Resolve", 1),
            ("WriteManifestList", 1), ("Resolve", 2), ("WriteMetadata", 1), ("Swap", 1), ("Begin", 2, "rollback"),
            ("Begin", 1, "upsert", 1), ("WriteMetadata", 2), ("Heal", 0), ("Swap", 2), ("WriteData", 1),
            ("WriteManifests", 1), ("WriteManifestList", 1), ("WriteMetadata", 1), ("Swap", 1), ("Retry", 1)]),
    # seed 1, after the P10 harness fix: an overwrite of a partition whose only file's row a
    # row_delete deleted kept that dead file (no live row matched), so it removed nothing and
    # was labelled "append"; the model's overwrite removes every file of the partition
    (1522, [("Begin", 1, "row_delete", 1), ("WriteData", 1), *_WRITES(1), ("Swap", 1), ("Begin", 1, "overwrite", 1), ("Heal", 0),
            ("WriteData", 1), *_WRITES(1), ("Swap", 1), ("RemoveOrphans", 0),
            *[s for w in (1, 2, 2, 2) for s in (("Begin", w, "append", 1, "b"), ("WriteData", w), *_WRITES(w),
                                                 ("Swap", w))],
            ("ReadIncremental", 0, (0, 1))]),
    # seed 6 with merged manifests: an upsert merged its delete manifest with the row delete's
    # on its first attempt, a rollback took that away, its retry listed the manifest alone,
    # whose entries the handle had cached without a sequence number (TypeError in planning)
    (1724, [
            ("Begin", 2, "append", 1, "b"),
            ("Begin", 1, "row_delete", 2),
            ("WriteData", 1),
            ("WriteData", 2),
            ("WriteManifests", 1),
            ("WriteManifests", 2),
            ("WriteManifestList", 1),
            ("WriteManifestList", 2),
            ("WriteMetadata", 1),
            ("WriteMetadata", 2),
            ("AckLost", 1),
            ("Resolve", 1),
            ("AckLost", 2),
            ("Resolve", 2),
            ("WriteManifestList", 2),
            ("WriteMetadata", 2),
            ("Begin", 1, "upsert", 2),
            ("Swap", 2),
            ("Begin", 2, "rollback"),
            ("WriteMetadata", 2),
            ("Heal", 0),
            ("Swap", 2),
            ("WriteData", 1),
            ("WriteManifests", 1),
            ("WriteManifestList", 1),
            ("WriteMetadata", 1),
            ("Swap", 1),
            ("Retry", 1),
            ("WriteManifests", 1),
            ("WriteManifestList", 1),
            ("WriteMetadata", 1),
            ("Swap", 1)
    ]),
])
def test_the_seed_gates_shrunk_disagreements_replay_clean(ctx_seed, program):
    """Goal: the model/engine disagreements the seed gate found stay fixed. Method: replay each shrunk program on icefloe; any Violation fails the test."""
    from icefloe.conformance.suite.runs import replay
    from icefloe.model.iceberg import Bounds
    replay(registry.load_engine("icefloe"), program, bounds=Bounds(**_SEED_GATE_BOUNDS), store="memory", ctx_seed=ctx_seed)


def test_an_overwrite_of_an_empty_partition_is_read_incrementally_as_an_append():
    """Goal: P10 on the partitioned table: an overwrite that removed nothing (its partition
    was emptied by a delete) is an append for an incremental reader, as the spec defines
    `append` ("only data files were added and no files were removed") and icefloe records
    it (seeds 1 and 2 of the seed gate found the harness expecting it skipped). Method:
    delete partition 1's file, overwrite partition 1, then every incremental read since
    each ancestor of main."""
    b = family_bounds("partitions", kinds=("delete", "overwrite"), writers=2)
    with run(b, ("Begin", 1, "delete", 1), ("writes", 1), ("Swap", 1), ("Begin", 2, "overwrite", 1),
             ("writes", 2), ("Swap", 2)) as (lock, _):
        assert (outcome(lock, 1), outcome(lock, 2)) == ("Committed", "Committed")
        labels = [lb for lb in lock.readers.labels() if lb[0] == "ReadIncremental"]
        assert len(labels) == 4
        for label in labels:
            lock.readers.read(label)          # raises Violation on a disagreement
        since_delete = lock.table.read_incremental(lock.snapshot_id[(1, 1)])
        assert since_delete.rows == (row_id((2, 1)),)
