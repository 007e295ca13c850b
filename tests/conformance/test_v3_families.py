"""The suite's v3 phase (conformance.v3; issue 30 item 3): the families dvs and lineage are
searched from the v3 model, replayed step by step on an engine's v3 table, and fail the
flawed v3 engines (conformance/engines/flawed_v3.py) with their properties."""
from __future__ import annotations

import pytest

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import flawed_v3
from icefloe.conformance.engines.icefloe_engine import engine as reference_engine
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.suite.runs import Sink
from icefloe.conformance.suite.stats import Stats
from icefloe.conformance.v3 import families as F
from icefloe.conformance.v3 import phase
from icefloe.conformance.violation import Violation
from icefloe.model import v3 as V

# apache/iceberg #17764's window: a compaction of one file validates over two DVs on the
# other, the later replacing the earlier, and must go on to its next attempt.
WINDOW = ("validation", "rewrite", (("row_delete", "other file"), ("row_delete", "other file")), "next attempt")
RETRY_AFTER_APPEND = ("commit", "append", "attempt 2", ("append",))
# The phase's first finding (fixed in 20608d8): impl/table/validation.py's delete_may_apply
# judged a DV by file_path bounds, which a DV has none of, so every DV "may apply" to every
# data file and a row delete of file B conflicted with a DV committed meanwhile for file A
# (spurious, L3). Its minimal program, instance (row_delete, row_delete) on two data files:
DV_ON_OTHER_FILE = [("Begin", 1, (0, 1), 1), ("Begin", 2, (0, 2), 1), ("WriteData", 1), ("WriteMetadata", 1),
                    ("Swap", 1), ("WriteData", 2), ("WriteMetadata", 2), ("Swap", 2), ("Retry", 2)]


@pytest.fixture(scope="module")
def backends():
    b = Backends()
    yield b
    b.close()


def test_families_reach_every_class_on_the_reference():
    """Goal: the families are searched from the model and icefloe can be driven to all of their
    classes, the #17764 window and a retry after a concurrent append among them. Method: the
    phase's plan at icefloe's capabilities against the model's classes."""
    plans = {p.family.name: p for p in phase.plan(reference_engine())}
    assert set(plans) == {"dvs", "lineage"}
    for p in plans.values():
        assert p.total and p.reachable == p.total and not p.why_not, p.family.name
        covered = set().union(*(F.simulate(prog, p.family) for prog in p.programs))
        assert covered >= p.total, sorted(p.total - covered, key=repr)
    assert WINDOW in plans["dvs"].total and RETRY_AFTER_APPEND in plans["lineage"].total
    assert ("commit", "row_delete", "replaces a DV") in plans["dvs"].total
    assert {("commit", "row_delete", "merges position deletes"), ("commit", "row_update", "merges position deletes"),
            ("commit", "rewrite", "drops position deletes")} <= plans["dvs"].total
    assert ("ids kept", "rewrite", "materialised") in plans["lineage"].total


def test_merge_policy_is_judged_at_its_own_classes():
    """Goal: the engine's declared DV policy decides the model it is judged by. Method: under
    merge, two deletes on one file both commit; under conflict the later conflicts."""
    b = V.V3Bounds(roles=(V.ROW_DELETE, V.ROW_DELETE), data_files=2)
    dvs = F.FAMILIES[0]
    conflict = F.explore(dvs, b)
    merge = F.explore(dvs, F.with_policy(b, "merge"))
    same = ("race", "row_delete", "row_delete", "same file", "committed")
    assert same in merge and same not in conflict


def test_engine_without_v3_has_the_families_out_of_reach():
    """Goal: an engine that declares no format v3 is not failed by the phase but told why.
    Method: the plan and verdict coverage for capabilities with the defaults."""
    class V2Only:
        name = "v2-only"
        capabilities = A.Capabilities(operations=frozenset({A.APPEND}), mode=A.STEPPING)
    plans = phase.plan(V2Only())
    assert all(not p.programs and not p.reachable for p in plans)
    cov = phase.coverage(plans, phase.new_covered())
    for name in ("dvs", "lineage"):
        assert cov[name]["covered"] == 0 and cov[name]["unreachable"] == cov[name]["total"] > 0
        assert list(cov[name]["why_unreachable"]) == ["format v3 not supported (capabilities format_versions, "
                                                      "v3_operations)"]
    assert phase.unchecked(V2Only()) == ("P11 OneLiveDV", "P12 DeletedRowsStayDeleted", "P13 RowIdsUnique",
                                         "P14 NextRowIdExact")


def test_capabilities_refuse_a_dv_writer_without_policy():
    """Goal: the contract's v3 fields are checked and their defaults keep old engines valid.
    Method: construct capabilities."""
    A.Capabilities(operations=frozenset({A.APPEND}), mode=A.STEPPING)
    with pytest.raises(A.EngineSpecError, match="dv_policy"):
        A.Capabilities(operations=frozenset({A.APPEND}), mode=A.STEPPING, format_versions=frozenset({2, 3}),
                       v3_operations=frozenset({A.APPEND, A.ROW_DELETE}))
    with pytest.raises(A.EngineSpecError, match="v3_operations"):
        A.Capabilities(operations=frozenset({A.APPEND}), mode=A.STEPPING, v3_operations=frozenset({A.APPEND}))
    with pytest.raises(A.EngineSpecError, match="v3_upgrade"):
        A.Capabilities(operations=frozenset({A.APPEND}), mode=A.STEPPING, format_versions=frozenset({2, 3}),
                       v3_operations=frozenset({A.APPEND}), v3_upgrade=True)


def test_engine_without_upgrade_has_the_position_delete_classes_out_of_reach():
    """Goal: an engine that cannot build a table upgraded from v2 is told which dvs classes
    that puts out of reach and why, and is judged on the rest. Method: icefloe's capabilities
    with v3_upgrade off, planned."""
    from dataclasses import replace
    from icefloe.conformance.engines import icefloe_engine as I

    class NoUpgrade:
        name = "no-upgrade"
        capabilities = replace(I.CAPABILITIES, v3_upgrade=False)
    dvs = next(p for p in phase.plan(NoUpgrade()) if p.family.name == "dvs")
    assert ("commit", "row_delete", "merges position deletes") in dvs.why_not
    assert set(dvs.why_not.values()) == {"no table upgraded from v2 with position deletes (capability v3_upgrade)"}
    assert dvs.reachable == dvs.total - set(dvs.why_not) and len(dvs.why_not) == 13
    assert not any(p.bounds.upgraded for p in dvs.programs)


def test_lineage_phase_passes_on_the_reference(backends):
    """Goal: icefloe's appends, compactions, copy-on-write deletes and updates keep row ids as
    the model does. Method: every lineage program, step by step, on icefloe's v3 table."""
    plans = [p for p in phase.plan(reference_engine()) if p.family.name == "lineage"]
    covered = phase.new_covered()
    failure = phase.run(reference_engine(), plans, backends, Stats(), Sink(), covered)
    assert failure is None, (failure.violation, failure.program)
    assert not phase.missed(plans, covered)


def test_dv_on_another_file_is_no_conflict(backends):
    """Goal: a DV committed for file A is no conflict for a row delete of file B (L3). Method:
    the minimal program on icefloe's v3 table."""
    phase.replay(reference_engine(), DV_ON_OTHER_FILE, V.V3Bounds(roles=(V.ROW_DELETE, V.ROW_DELETE), data_files=2),
                 backends)


def test_dvs_phase_passes_on_the_reference(backends):
    """Goal: icefloe's DVs agree with the model at every step of every dvs program, the #17764
    window included. Method: the phase's dvs programs on icefloe's v3 table."""
    plans = [p for p in phase.plan(reference_engine()) if p.family.name == "dvs"]
    covered = phase.new_covered()
    failure = phase.run(reference_engine(), plans, backends, Stats(), Sink(), covered)
    assert failure is None, (failure.violation, failure.program)
    assert not phase.missed(plans, covered)


# variant -> (its family, the properties it must be failed with, what the finding says)
CAUGHT = {
    "stale-first-row-id-on-retry": ("lineage", {"P13 RowIdsUnique", "P14 NextRowIdExact"}, "row"),
    "replacement-dv-keeps-old": ("dvs", {"P11 OneLiveDV"}, "2 live DVs"),
    "dv-validation-over-window": ("dvs", {"L3 NoSpuriousConflict"}, "can't index multiple DVs"),
    "merge-over-overwrite-dv": ("dvs", {"P6 Isolation"}, "row_delete"),
    "dv-ignores-position-deletes": ("dvs", {"P12 DeletedRowsStayDeleted", "P6 Isolation"}, ""),
}


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_flawed_engine_fails_with_its_property(name, backends):
    """Goal: each flawed v3 engine is failed by the phase with the property of its bug, on a
    program the reference passes. Method: every program of the variant's family on the
    variant (its own DV policy), then each program it fails with that property on icefloe."""
    family, props, says = CAUGHT[name]
    variant = flawed_v3.VARIANTS[name]()
    assert variant.name == f"flawed:{name}" and flawed_v3.DESCRIPTIONS[name]
    plan = next(p for p in phase.plan(variant) if p.family.name == family)
    caught = []
    for program in plan.programs:
        try:
            phase.replay(variant, program.labels, program.bounds, backends)
        except Violation as v:
            if v.prop in props and says in v.message:
                caught.append(program)
    assert caught, f"{name} was not failed with {props}"
    assert any(_passes(reference_engine(), program, backends) for program in caught), \
        f"the reference fails every program {name} is failed by"


def _passes(engine, program, backends) -> bool:
    try:
        phase.replay(engine, program.labels, program.bounds, backends)
    except Violation:
        return False
    return True
