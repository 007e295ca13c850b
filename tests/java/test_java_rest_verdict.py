"""Iceberg-Java 1.10.2 through the model lockstep at `icefloe serve`'s commit endpoint, the
bounded share of its verdict (the whole ci run, `icefloe conform --engine java`, takes hours
on a loaded 2-core machine): one directed program per commit fault kind of the server's
layer, each mirrored on the model and run to its end (liveness, history checker, every
retained snapshot read) with every property holding."""
from __future__ import annotations

import pytest

from icefloe.conformance import adapter as A, directed
from icefloe.conformance.backends import Backends
from icefloe.conformance.profiles import PROFILES, REST
from icefloe.conformance.runs import replay
from icefloe.conformance.stats import Stats

KINDS = {"reject", "fail_before", "fail_after", "lost", "delay", "duplicate"}


@pytest.fixture(scope="module")
def backends():
    b = Backends()
    yield b
    b.close()


def one_program_per_kind(engine) -> list:
    family = next(f for f in directed.plan(engine, PROFILES["ci"]).families if f.family.name == "rest")
    assert {c[0] for c in family.reachable} == KINDS
    chosen, seen = [], set()
    for program in family.programs:
        kind = family.targets.get(program, (None,))[0]
        if kind not in seen:
            seen.add(kind)
            chosen.append(program)
    return chosen


def test_java_meets_every_commit_fault_kind_and_holds(java_worker, backends):
    """Goal: each fault kind of the server's layer reaches Iceberg-Java's commit, is mirrored
    on the model and breaks no property. Method: one directed "rest" program per kind."""
    engine = A.load_engine("java")
    assert engine.capabilities.stores == frozenset({REST})
    stats = Stats()
    for program in one_program_per_kind(engine):
        replay(engine, program.labels, bounds=program.bounds, store=REST, backends=backends, stats=stats,
               ctx_seed=0, lenient=True)
    injected = {k.split()[-1] for k, v in stats.faults.items() if k.startswith("rest ") and v}
    assert injected == KINDS, stats.faults
    assert stats.unknown_resolved_committed + stats.unknown_resolved_not_committed > 0, stats
