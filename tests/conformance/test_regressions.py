"""REGRESSIONS.md rows 1-10 as deterministic replay programs (docs/regressions.md).

Goal: each real commit-protocol bug is a fixed program (faults + interleaving) that the
reference implementation passes and the flawed variant reproducing the bug fails, with
the violated property named. Method: `regression_programs.Run` steps real PendingCommits
(MemoryStore, MemoryCatalog or the listing catalog) phase by phase, with the catalog's
and the store's own fault hooks; `violations` judges the end state.
"""
from __future__ import annotations

import pytest

from icefloe.impl.outcomes import Committed, Conflict, Unknown
from regression_programs import Run, violations

BOOT = (("append", 0, ("a",)), ("finish", 0))

# name -> (REGRESSIONS.md row or 0, program, flawed variant, attempts_max, properties it breaks)
PROGRAMS = {
    "glue_sdk_retry_7151": (1, BOOT + (
        ("append", 1, ("b",)), ("to", 1, "swap"), ("lose_ack",), ("finish", 1), ("read", "r")),
        "sdk-retry-swap", 1, {"P8 NoDanglingRefs"}),
    "glue_sdk_retry_reapplies_7151": (1, BOOT + (
        ("append", 1, ("b",)), ("to", 1, "swap"), ("lose_ack",), ("finish", 1)),
        "sdk-retry-swap", 2, {"P3 NoDuplicateCommit"}),
    "lagging_status_check_3717": (2, BOOT + (
        ("append", 1, ("b",)), ("to", 1, "swap"), ("lose_ack",), ("to", 1, "resolve"),
        ("append", 2, ("c",)), ("finish", 2), ("finish", 1)),
        "pointer-status-check", 2, {"P4 ReadersSeeCommitted", "P8 NoDanglingRefs"}),
    "cleanup_on_unknown_2317": (3, BOOT + (
        ("append", 1, ("b",)), ("to", 1, "swap"), ("lose_ack",), ("finish", 1)),
        "cleanup-after-unknown", 2, {"P8 NoDanglingRefs"}),
    "abort_after_landed_4666": (4, BOOT + (
        ("append", 1, ("b",)), ("to", 1, "swap"), ("delay_swap",), ("finish", 1), ("deliver",)),
        "cleanup-after-unknown", 1, {"P8 NoDanglingRefs"}),
    "recommit_after_unknown_2808": (5, BOOT + (
        ("append", 1, ("b",)), ("to", 1, "swap"), ("lose_ack",), ("finish", 1)),
        "no-lineage-check", 2, {"P3 NoDuplicateCommit"}),
    "rename_race_970": (6, BOOT + (
        ("append", 1, ("b",)), ("to", 1, "swap"), ("append", 2, ("c",)), ("to", 2, "swap"),
        ("finish", 1), ("finish", 2)),
        "rename-commit", 2, {"P2 NoLostCommit"}),
    "stale_version_hint_864": (7, BOOT + (
        ("fail_write", "*version-hint.text"), ("append", 1, ("b",)), ("finish", 1), ("read", "r")),
        "version-hint", 2, {"P2 NoLostCommit"}),
    "compaction_vs_delete_10312": (8, BOOT + (
        ("append", 0, ("b",)), ("finish", 0), ("rewrite", 1), ("to", 1, "swap"),
        ("delete", 2, ("a",)), ("finish", 2), ("finish", 1)),
        "no-revalidate", 2, {"P6 Isolation"}),
    "expire_with_tag_17304": (9, BOOT + (
        ("tag", "keep"), ("delete", 1, ("a",)), ("finish", 1), ("append", 1, ("b",)), ("finish", 1),
        ("expire", 2), ("finish", 2)),
        "expire-deleted-entries", 2, {"P8 NoDanglingRefs"}),
    "expire_after_rollback_13568": (9, BOOT + (
        ("delete", 1, ("a",)), ("finish", 1), ("rollback", 1), ("expire", 2), ("finish", 2)),
        "expire-deleted-entries", 2, {"P8 NoDanglingRefs"}),
    # Not a REGRESSIONS.md row (0): the model's orphans-no-threshold control.
    "orphans_while_writing": (0, BOOT + (
        ("append", 1, ("b",)), ("to", 1, "metadata"), ("orphans",), ("finish", 1)),
        "orphans-no-threshold", 2, {"P8 NoDanglingRefs"}),
    "log_version_overwritten_delta1410": (10, BOOT + (
        ("append", 1, ("b",)), ("append", 2, ("c",)), ("finish", 1), ("finish", 2)),
        "blind-put-commit", 2, {"P2 NoLostCommit"}),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_reference_passes(name):
    """Goal: the reference implementation keeps every property on the bug's program.
    Method: replay the program with variant=None and judge the end state."""
    _, program, _, attempts, _ = PROGRAMS[name]
    run = Run(None, attempts_max=attempts).play(program)
    assert violations(run) == {}
    assert all(op.commit.done for op in run.ops)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_flawed_variant_fails(name):
    """Goal: the flawed variant reproduces the bug. Method: replay the same program with the
    variant and require exactly the properties recorded for it."""
    _, program, variant, attempts, breaks = PROGRAMS[name]
    run = Run(variant, attempts_max=attempts).play(program)
    assert set(violations(run)) == breaks, violations(run)


def test_reference_outcomes_are_the_true_ones():
    """Goal: on the unknown-outcome programs the reference reports what happened. Method:
    replay each and compare the writer's outcome with the pointer's chain."""
    for name, expected in (("cleanup_on_unknown_2317", Committed), ("lagging_status_check_3717", Committed),
                           ("recommit_after_unknown_2808", Committed), ("glue_sdk_retry_7151", Committed),
                           ("abort_after_landed_4666", Unknown), ("compaction_vs_delete_10312", Conflict)):
        _, program, _, attempts, _ = PROGRAMS[name]
        run = Run(None, attempts_max=attempts).play(program)
        assert isinstance(run.outcome(1), expected), (name, run.outcome(1))


def test_flawed_outcomes_are_false_ones():
    """Goal: each flawed variant lies about the outcome the way the real bug did. Method:
    the variant's outcome for writer 1 contradicts what landed."""
    for name in ("cleanup_on_unknown_2317", "lagging_status_check_3717", "glue_sdk_retry_7151"):
        _, program, variant, attempts, _ = PROGRAMS[name]
        run = Run(variant, attempts_max=attempts).play(program)
        assert isinstance(run.outcome(1), Conflict), (name, run.outcome(1))
    _, program, variant, attempts, _ = PROGRAMS["stale_version_hint_864"]
    run = Run(variant, attempts_max=attempts).play(program)
    assert isinstance(run.outcome(1), Committed)
    assert run.reads["r"][-1][1] == ("a",), "the reader trusted the stale hint"
