"""Every coverage family of a run: the classic ones of coverage.base and the partition,
row-level and ref ones of coverage.rows (a run's `Tracker(FAMILIES)` records the classes each
executed model step completed). The families' classes, the search and the tracker are
described in coverage.base; this module only gathers them, so rows extends base without a cycle.
"""
from __future__ import annotations

from icefloe.conformance.coverage.base import (  # noqa: F401 - the search and the tracker, re-exported
    Family, Faults, Graph, Handles, Orphans, OrphansInFlight, Program, Rivals, Sequences, Tracker, Unknowns,
    Validations, cover, explore, simulate,
)
from icefloe.conformance.coverage.pairs import PAIRS
from icefloe.conformance.coverage.rows import ROW_FAMILIES


FAMILIES = (
    Faults("faults", "an operation meets a fault in a phase, and ends so"),
    Unknowns("unknowns", "an unknown swap outcome on the first, a middle or the last attempt, and its fate"),
    Rivals("rivals", "another writer's commit lands while an operation is in a phase"),
    Validations("validations", "a retry validates over the commits that landed since its start"),
    Sequences("sequences", "three commits in a row on main", ()),
    Orphans("orphans", "orphan removal after an operation ended so"),
    OrphansInFlight("orphans-in-flight", "orphan removal by age while another writer works, after operations "
                    "that ended so left old orphans"),
    Handles("handles", "a writer's next operation begins through its own handle after a rival committed"),
    *ROW_FAMILIES,
    PAIRS,
)
FAMILY_NAMES = tuple(f.name for f in FAMILIES) + ("transport",)
