"""Negative controls at the implementation level: the suite catches every flawed engine.

Goal: each variant of icefloe.conformance.engines.flawed (icefloe's own stepping adapter
with one rule broken) is caught by the conformance state machine with a short, replayable
counterexample that names a property, and the reference engine passes that same program.
Method: `machine.run` searches (ci profile sizes, memory store, fixed seed); the shrunk
program is replayed on the variant and on the reference. The committed programs below
(the shrinks found when this file was written, plus one per variant that reaches the real
damage) are replayed too, and what the variant left behind is judged by the safety
properties directly (`damage`), since the lockstep names the first disagreement with the
model ("A0 ModelAgreement") when the engine's phase or outcome deviates before its
storage does.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from icefloe.conformance import adapter as A
from icefloe.conformance.suite import run as suite
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.suite.profiles import MEMORY, PROFILES, Profile, bounds_for, classic_bounds
from icefloe.conformance.suite.runs import Sink, new_lockstep
from icefloe.conformance.engines import flawed_v3
from icefloe.conformance.engines.flawed import DESCRIPTIONS as ALL_DESCRIPTIONS, VARIANTS as ALL_VARIANTS
from icefloe.conformance.engines.icefloe_engine import engine as reference_engine
from icefloe.conformance.suite.stats import Stats
from icefloe.conformance.violation import AGREEMENT, Violation
from icefloe.model import variants as model_variants

# The format v3 variants are registered too (`--variant`, the seed gate) and tested in
# tests/conformance/test_v3_families.py by the v3 phase; this file tests the v2 ones.
VARIANTS = {n: make for n, make in ALL_VARIANTS.items() if n not in flawed_v3.VARIANTS}
DESCRIPTIONS = {n: d for n, d in ALL_DESCRIPTIONS.items() if n not in flawed_v3.VARIANTS}

SEED = 1
PROGRAM_LABELS_MAX = 16
SEARCH = replace(PROFILES["ci"], name="variants", examples_s3=0)
# The search runs each variant at its model twin's bounds (model/variants.py: writers, ops),
# so that it finds and shrinks in seconds; `icefloe conform --variant` runs the ci profile
# (docs/regressions.md records what it names for each variant). No twin: the bounds of the
# closest one.
TWIN = {"no-revalidate": "no-revalidate", "cleanup-after-unknown": "cleanup-after-unknown",
        "pointer-status-check": "pointer-status-check", "no-lineage-check": "no-lineage-check",
        "sdk-retry-swap": "no-lineage-check", "expire-deleted-entries": "expire-deleted-entries",
        "rename-commit": "rename-commit", "blind-put-commit": "rename-commit",
        "orphans-no-threshold": "orphans-no-threshold"}
SEARCH_EXAMPLES = 100
SEARCH_STEPS = 30


def search_profile(name: str) -> Profile:
    bounds = model_variants.get(TWIN[name]).defaults
    return replace(SEARCH, examples_memory=SEARCH_EXAMPLES, steps=SEARCH_STEPS, writers=bounds["writers"],
                   ops=bounds["ops"], fault_budget=1)

# variant -> the properties the suite may name for it (the model twin's `breaks`, plus the
# agreement check where the engine's phase or outcome deviates first).
NAMED = {
    "no-revalidate": {"P5 ValidationSound", "P6 Isolation"},
    "cleanup-after-unknown": {AGREEMENT, "P8 NoDanglingRefs"},
    "pointer-status-check": {AGREEMENT, "P8 NoDanglingRefs", "P4 ReadersSeeCommitted"},
    "no-lineage-check": {"P3 NoDuplicateCommit", "P6 Isolation"},
    "sdk-retry-swap": {AGREEMENT, "P3 NoDuplicateCommit", "P6 Isolation"},
    "expire-deleted-entries": {"P8 NoDanglingRefs"},
    "rename-commit": {AGREEMENT, "P2 NoLostCommit"},
    "blind-put-commit": {AGREEMENT, "P2 NoLostCommit"},
    "orphans-no-threshold": {"P8 NoDanglingRefs"},
}

_ACK_LOST_1 = (("Begin", 1, "append"), ("WriteData", 1), ("WriteManifests", 1), ("WriteManifestList", 1),
               ("WriteMetadata", 1), ("AckLost", 1))
_TWO_APPENDS = (("Begin", 1, "append"), ("Begin", 2, "append"))
# variant -> [(program, property the suite names, safety properties the damage breaks)]
REPLAYS = {
    "no-revalidate": [
        ((("Begin", 1, "rewrite"), ("Begin", 2, "rewrite")), "P5 ValidationSound", {"P3 NoDuplicateCommit"})],
    "cleanup-after-unknown": [
        (_ACK_LOST_1, AGREEMENT, {"P8 NoDanglingRefs"})],
    "pointer-status-check": [
        (_TWO_APPENDS + (("WriteData", 1), ("WriteData", 2), ("WriteManifests", 2), ("WriteManifests", 1),
                         ("WriteManifestList", 1), ("WriteManifestList", 2), ("WriteMetadata", 2), ("Swap", 2), ("WriteMetadata", 1),
                         ("SwapDelayed", 1)), AGREEMENT, set()),
        (_ACK_LOST_1 + (("Begin", 2, "append"), ("WriteData", 2), ("WriteManifests", 2), ("WriteManifestList", 2),
                        ("WriteMetadata", 2), ("Swap", 2), ("Resolve", 1)),
         AGREEMENT, {"P4 ReadersSeeCommitted", "P8 NoDanglingRefs"})],
    "no-lineage-check": [
        (_ACK_LOST_1, "P6 Isolation", {"P3 NoDuplicateCommit"})],
    "sdk-retry-swap": [
        (_ACK_LOST_1, AGREEMENT, {"P3 NoDuplicateCommit"})],
    "expire-deleted-entries": [
        ((("Begin", 1, "delete"), ("WriteManifests", 1), ("WriteManifestList", 1), ("WriteMetadata", 1), ("Swap", 1),
          ("Begin", 1, "rollback"), ("WriteMetadata", 1), ("Swap", 1), ("Begin", 1, "expire"), ("WriteMetadata", 1),
          ("Swap", 1)), "P8 NoDanglingRefs", {"P8 NoDanglingRefs"})],
    "rename-commit": [
        (_TWO_APPENDS + (("WriteData", 1), ("WriteData", 2), ("WriteManifests", 1), ("WriteManifests", 2),
                         ("WriteManifestList", 1), ("WriteManifestList", 2), ("WriteMetadata", 1), ("WriteMetadata", 2), ("Swap", 1),
                         ("Swap", 2)), AGREEMENT, {"P2 NoLostCommit"})],
    "blind-put-commit": [
        (_TWO_APPENDS, AGREEMENT, {"P2 NoLostCommit"})],
    # The orphans-in-flight family's directed program (orphan removal by age while writer 2
    # works; bounds ORPHAN_AGE_BOUNDS): writer 2's data file is young, yet removed.
    "orphans-no-threshold": [
        ((("Begin", 1, "append"), ("Crash", 1), ("AgeFiles", 0), ("Begin", 2, "append"), ("WriteData", 2),
          ("RemoveOrphans", 0), ("WriteManifests", 2), ("WriteManifestList", 2), ("WriteMetadata", 2), ("Swap", 2)),
         "P8 NoDanglingRefs", {"P8 NoDanglingRefs"})],
}
# Programs that need other bounds than the profile's classic ones (replay_judged's default).
REPLAY_BOUNDS = {"orphans-no-threshold": dict(writers=2, ops=1, kinds=("append", "rewrite"),
                                              faults=("crash", "ack_lost", "swap_delayed"), fault_budget=1,
                                              attempts_max=1, orphan_runs=1, por=False, orphan_age=True)}


@pytest.fixture(scope="module")
def backends():
    b = Backends()
    yield b
    b.close()


def replay_judged(engine, program, backends, ctx_seed=None, profile=SEARCH, bounds=None):
    """Replay `program` (at `bounds`, default the profile's without partitions, delete files
    or refs, as the programs here are written); return (the Violation the suite raises or
    None, the damage)."""
    bounds = bounds or classic_bounds(bounds_for(engine, profile))
    lock = new_lockstep(engine, backends, MEMORY, bounds, SEED, Stats(), ctx_seed)
    violation = None
    try:
        try:
            for label in program:
                lock.apply(tuple(label))
            lock.finish()
        except Violation as v:
            violation = v
        return violation, damage(lock)
    finally:
        lock.close()


def damage(lock) -> set:
    """The safety properties the engine's table breaks now, judged from what it stores
    (not from its agreement with the model): P8 a retained snapshot or the pointer cannot
    be read; P2 an acknowledged snapshot is not on main's ancestry; P4 a snapshot reported
    failed is on it; P3 a row is live more often than committed appends wrote it; and the
    history checker's findings."""
    found = set()
    try:
        history = lock.table.history()
    except Exception:  # noqa: BLE001 - no readable pointer: P8, and nothing more to judge
        return {"P8 NoDanglingRefs"}
    try:
        current_rows = lock.table.read_current().rows
        for sid in history.versions[-1].snapshot_ids:
            lock.table.read_at(sid)
    except Exception:  # noqa: BLE001 - unreadable is what P8 forbids
        found.add("P8 NoDanglingRefs")
        current_rows = ()
    snaps, line, sid = history.snapshots, set(), history.versions[-1].main
    while sid is not None and sid in snaps and sid not in line:
        line.add(sid)
        sid = snaps[sid].parent_id
    appended = Counter()
    for rec in lock.ops.values():
        commit = rec.commit
        if commit is None or not commit.done or commit.snapshot_id is None:
            continue
        if isinstance(commit.outcome, A.Committed) and commit.snapshot_id not in line and rec.kind == A.APPEND:
            found.add("P2 NoLostCommit")
        if isinstance(commit.outcome, A.Conflict) and commit.snapshot_id in line:
            found.add("P4 ReadersSeeCommitted")
        if rec.kind == A.APPEND and commit.snapshot_id in line:
            appended.update(rec.spec.rows)
    if any(n > max(1, appended[r]) for r, n in Counter(current_rows).items()):
        found.add("P3 NoDuplicateCommit")
    try:
        lock.judge_history()
    except Violation as v:
        found |= v.properties - {AGREEMENT}
    return found


def test_every_variant_is_registered_with_a_description():
    """Goal: `--list-variants` has what this file tests. Method: compare the registries."""
    assert set(VARIANTS) == set(NAMED) == set(REPLAYS) == set(DESCRIPTIONS)
    assert set(ALL_VARIANTS) == set(VARIANTS) | set(flawed_v3.VARIANTS) == set(ALL_DESCRIPTIONS)
    for name, make in VARIANTS.items():
        engine = make()
        assert isinstance(engine.capabilities, A.Capabilities) and engine.name == f"flawed:{name}"


# expire-deleted-entries is caught only by a delete, then a rollback past it, then an expiry
# (the suite has no refs besides main, so only a rollback makes a removed file live again);
# a seeded search of 100 examples at its twin's bounds and `icefloe conform --variant` at the
# ci profile with seed 1 did not draw that order (with seed 0 it does, in about 100 s: too
# long for this suite). Its counterexample in REPLAYS is the same 11 steps conform's seed-0
# search shrinks to, and is replayed below.
SEARCHED = sorted(set(VARIANTS) - {"expire-deleted-entries"})


def test_every_variant_is_searched_or_says_why_not():
    """Goal: no variant silently escapes the search test. Method: the one left out is named."""
    assert set(VARIANTS) - set(SEARCHED) == {"expire-deleted-entries"}


@pytest.mark.parametrize("name", SEARCHED)
def test_suite_catches_variant_with_a_short_replayable_counterexample(name, backends):
    """Goal: the state machine catches the variant. Method: Hypothesis search (ci sizes), then
    the shrunk program replayed: the variant fails it naming the same property, the
    reference passes it."""
    profile = search_profile(name)
    failure = suite.run(VARIANTS[name](), profile, SEED, backends, Stats(), Sink(), stores=(MEMORY,))
    assert failure is not None, f"{name} was not caught"
    assert failure.violation.prop in NAMED[name], failure.violation
    assert len(failure.program) <= PROGRAM_LABELS_MAX, failure.program
    again, _ = replay_judged(VARIANTS[name](), failure.program, backends, failure.ctx_seed, profile, failure.bounds)
    assert again is not None and again.prop == failure.violation.prop, (failure.program, again)
    ok, harm = replay_judged(reference_engine(), failure.program, backends, failure.ctx_seed, profile,
                             failure.bounds)
    assert ok is None and harm == set(), (ok, harm)


@pytest.mark.parametrize("name,index", [(n, i) for n in sorted(REPLAYS) for i in range(len(REPLAYS[n]))])
def test_committed_counterexample_replays(name, index, backends):
    """Goal: each committed counterexample still fails the variant with its property and
    leaves the recorded damage, and the reference passes it untouched. Method: replay."""
    program, prop, harm = REPLAYS[name][index]
    bounds = None
    if name in REPLAY_BOUNDS:
        bounds = replace(classic_bounds(bounds_for(VARIANTS[name](), SEARCH)), **REPLAY_BOUNDS[name])
    violation, found = replay_judged(VARIANTS[name](), program, backends, bounds=bounds)
    assert violation is not None and violation.prop == prop, violation
    assert found == harm, found
    ok, clean = replay_judged(reference_engine(), program, backends, bounds=bounds)
    assert ok is None and clean == set(), (ok, clean)
