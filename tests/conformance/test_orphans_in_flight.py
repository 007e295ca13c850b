"""Goal: conform judges orphan removal by age while another writer works (spec/PROTOCOL.md 12.2;
coverage family orphans-in-flight): the reference passes every directed program, an inverted
threshold (the curated mutant orphans-age-inverted) fails them, and an engine without orphan
removal has every class out of reach. Method: the family's programs replayed in lockstep on
icefloe's memory store, with the suite's StoreClock; the mutant planted by rewriting the one
line of impl/table/maintenance.py, as mutants.run does."""
from __future__ import annotations

from dataclasses import replace

import pytest

from icefloe.conformance import adapter as A
from icefloe.conformance.coverage import directed
from icefloe.conformance.coverage import families as C
from icefloe.conformance.coverage.base import Tracker, cover, explore
from icefloe.conformance.engines import icefloe_engine as I
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.suite.clock import ORPHAN_AGE_MS, StoreClock
from icefloe.conformance.suite.profiles import MEMORY, PROFILES, bounds_for, model_bounds
from icefloe.conformance.suite.runs import replay
from icefloe.conformance.violation import Violation
from icefloe.impl.table import maintenance
from icefloe.model.state import LIST, MANIFESTS, METADATA, SWAP

FAMILY = next(f for f in C.FAMILIES if f.name == "orphans-in-flight")
# The working writer's phases in which it has written files no snapshot reaches yet.
WRITTEN_UNSWAPPED = (MANIFESTS, LIST, METADATA, SWAP)
MUTANT_LINE = ("info.last_modified_ms >= older_than_ms:", "info.last_modified_ms < older_than_ms:  # mutant")


def _programs(engine):
    g = explore(FAMILY, FAMILY.bounds(bounds_for(engine, PROFILES["ci"])), False)
    return g, cover(g, False)


@pytest.fixture(scope="module")
def backends():
    b = Backends()
    yield b
    b.close()


def _run(engine, program, backends, tracker=None):
    observers = [tracker.watch(program.bounds)] if tracker is not None else []
    replay(engine, program.labels, bounds=program.bounds, store=MEMORY, backends=backends, observers=observers,
           ctx_seed=0)


def test_store_clock_threshold_falls_between_the_files_before_and_after_age():
    """Goal: the threshold a removal passes after AgeFiles is above every stamp before it and at
    most every stamp after it. Method: read, age, read, compare."""
    clock = StoreClock()
    before = [clock.now_ms() for _ in range(3)]
    clock.age()
    after = [clock.now_ms() for _ in range(3)]
    threshold = clock.older_than_ms()
    assert max(before) < threshold <= min(after)
    assert min(after) - max(before) > ORPHAN_AGE_MS - 1


def test_reference_passes_every_program_and_covers_every_class(backends):
    """Goal: no false alarm: icefloe keeps the working writer's files, deletes the old orphans
    and its commits read back, in every class. Method: run the family's programs, track coverage."""
    engine = I.engine()
    g, programs = _programs(engine)
    sources = {outcome for c in g.classes for _, outcome in c[0]}
    assert len(g.classes) >= 80 and sources == {"crashed", "unknown"}, sources
    tracker = Tracker(C.FAMILIES)
    for program in programs:
        _run(engine, program, backends, tracker)
    assert tracker.covered[FAMILY.name] >= g.classes


def test_inverted_threshold_fails_where_the_working_writer_has_written(backends, monkeypatch):
    """Goal: the mutant orphans-age-inverted (old files kept, young ones deleted) is killed by
    conform itself. Method: plant it; every program whose removal meets the working writer with
    files written and not yet swapped, and whose commit then lands, must fail with P8 (its
    commit's files are gone)."""
    source = open(maintenance.__file__).read()
    assert source.count(MUTANT_LINE[0]) == 1
    namespace = dict(vars(maintenance))
    exec(compile(source.replace(*MUTANT_LINE), maintenance.__file__, "exec"), namespace)
    monkeypatch.setattr(maintenance, "remove_orphan_files", namespace["remove_orphan_files"])
    engine = I.engine()
    g, programs = _programs(engine)
    targets = {p: c for c, p in g.witnesses.items()}
    failed, written = [], []
    for program in programs:
        cls = targets.get(program)
        if cls is None or cls[2] not in WRITTEN_UNSWAPPED or cls[3] != "committed":
            continue                 # no young orphan of the working writer, or it never commits
        written.append(cls)
        try:
            _run(engine, program, backends)
        except Violation as v:
            failed.append(v.prop)
        else:
            failed.append(f"passed: {cls} {program.labels}")
    assert written and set(failed) == {"P8 NoDanglingRefs"}, failed


def test_engine_without_orphan_removal_has_every_class_out_of_reach(monkeypatch):
    """Goal: an engine that declares no orphan removal is not asked to run these programs and
    is told why. Method: the directed plan for this family (and rivals, which the races plan
    reads), the engine being icefloe's capabilities without ORPHANS."""
    class NoOrphans:
        name = "no-orphans"
        capabilities = replace(I.CAPABILITIES, operations=I.CAPABILITIES.operations - {A.ORPHANS})
    engine = NoOrphans()
    full, mine = model_bounds(engine, PROFILES["ci"]), bounds_for(engine, PROFILES["ci"])
    assert explore(FAMILY, FAMILY.bounds(full), False).classes
    assert not explore(FAMILY, FAMILY.bounds(mine), False).classes
    monkeypatch.setattr(C, "FAMILIES", tuple(f for f in C.FAMILIES if f.name in (FAMILY.name, "rivals")))
    the_plan = directed.plan(engine, replace(PROFILES["ci"], families=(FAMILY.name,)))
    (entry,) = the_plan.families
    assert not entry.reachable and not entry.programs
    assert set(entry.why_not.values()) == {"operation orphans not supported"}
