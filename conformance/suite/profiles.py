"""The suite's profiles and the model instance a run explores for an engine.

A profile bounds a run: how many writers and operations, the fault budget, the attempts
per commit (spec/PROTOCOL.md 6), and how many random programs Hypothesis draws on each
store after the directed programs (conformance.coverage.directed) have covered every transition
class. `bounds_for` narrows the model to what the engine's capabilities allow.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from icefloe.conformance import adapter as A
from icefloe.conformance.suite.view import FAULT_OF_ACTION
from icefloe.model import iceberg
from icefloe.model.state import APPEND, CLASSIC_KINDS, FAST_FORWARD, FAULT_KINDS, OP_KINDS, TAG_OP

MEMORY, S3, REST = "memory", "s3", "rest"
# The swap faults `icefloe serve`'s commit fault layer injects for a REST engine (its
# mirrors: conformance.suite.blackbox); data and metadata files are the engine's own business.
REST_FAULTS = (A.SWAP_FAIL, A.ACK_LOST, A.SWAP_DELAYED)


@dataclass(frozen=True)
class Profile:
    name: str
    examples_memory: int
    examples_s3: int
    steps: int
    writers: int = 2
    ops: int = 3
    fault_budget: int = 3
    attempts_max: int = 3          # first, middle and last attempts all exist
    directed: bool = True          # run the directed programs before the random search
    # The random search must itself exercise every rule, fault kind and resolution (the
    # vacuity guard, suite.vacuity). Always so without directed programs (a custom profile);
    # the deep profile asks it of its search too; ci's coverage comes from the directed
    # programs, so a correct engine's ci verdict cannot depend on what a seed draws.
    search_guard: bool = False
    # A run's time budget (wall clock, seconds; None: unbounded). Past it no directed program
    # and no search step starts, and a run that found nothing is reported as cut short
    # (suite.run_suite), never as a pass. It binds only on a machine far slower than CI's.
    seconds_max: float | None = None
    # The directed families a run keeps (empty: all; conformance.coverage.base names them).
    families: tuple = ()


PROFILES = {
    "ci": Profile("ci", examples_memory=60, examples_s3=6, steps=40, seconds_max=1500.0),
    # For an engine too slow for ci here (Iceberg-Java: ~15 s a program, docs/verdicts.md):
    # ci's model instance and its directed programs of the families that carry the commit
    # faults and the Unknown outcomes, no random search.
    "ci-slow": Profile("ci-slow", examples_memory=0, examples_s3=0, steps=40, seconds_max=3 * 3600.0,
                       families=("faults", "rest", "unknowns")),
    "deep": Profile("deep", examples_memory=600, examples_s3=40, steps=80, writers=3, ops=4, search_guard=True,
                    seconds_max=4 * 3600.0),
}

# Rule families, in the order the report lists them.
RULES = ("Begin", "write", "Swap", "Retry", "Resolve", "WriteFails", "SwapFails", "AckLost",
         "SwapDelayed", "Crash", "Deliver", "Drop", "Heal", "RemoveOrphans", "ReadCurrent", "ReadAt",
         "ReadIncremental")


def model_bounds(engine, profile: Profile) -> iceberg.Bounds:
    """The model at the profile's bounds with every operation and fault (what an engine
    with every capability is tested on; coverage totals are counted here)."""
    return iceberg.Bounds(writers=profile.writers, ops=profile.ops, kinds=OP_KINDS, faults=FAULT_KINDS,
                          fault_budget=profile.fault_budget, attempts_max=profile.attempts_max,
                          isolation=engine.capabilities.isolation, orphan_runs=1, partitions=2, refs=True)


def bounds_for(engine, profile: Profile) -> iceberg.Bounds:
    """The model at the profile's bounds, narrowed to the engine's capabilities."""
    caps = engine.capabilities
    kinds = tuple(k for k in OP_KINDS if k in caps.operations and (caps.refs or k not in (TAG_OP, FAST_FORWARD)))
    faults = tuple(f for f in FAULT_KINDS if f in caps.faults)
    if caps.mode == A.BLACK_BOX:
        faults = REST_FAULTS if caps.rest else ()
    return iceberg.Bounds(writers=profile.writers, ops=profile.ops, kinds=kinds, faults=faults,
                          fault_budget=profile.fault_budget if faults else 0,
                          attempts_max=min(profile.attempts_max, caps.commit_attempts_max or profile.attempts_max),
                          isolation=caps.isolation, orphan_runs=1 if A.ORPHANS in caps.operations else 0,
                          partitions=caps.partitions, refs=caps.refs)


def classic_bounds(b: iceberg.Bounds) -> iceberg.Bounds:
    """The instance without partitions, delete files or refs (one unpartitioned table on
    main, the six classic kinds): the classic coverage families' instances, and where a
    program written without them runs as written."""
    return replace(b, kinds=tuple(k for k in b.kinds if k in CLASSIC_KINDS) or (APPEND,), partitions=1, refs=False)


def expected_rules(engine, profile: Profile) -> tuple:
    """The rule families the engine's capabilities allow (each must run in a run that is
    not vacuous)."""
    caps = engine.capabilities
    b = bounds_for(engine, profile)
    out = ["Begin", "write", "ReadCurrent"]
    if caps.mode == A.BLACK_BOX and caps.rest:
        out = ["Begin", "Swap", "ReadCurrent"] + [name for name, kind in FAULT_OF_ACTION.items() if kind in b.faults]
        out += ["Deliver", "Drop"] if A.SWAP_DELAYED in b.faults else []
    if caps.mode == A.STEPPING:
        out += ["Swap", "Retry"]
        if A.ACK_LOST in b.faults or A.SWAP_DELAYED in b.faults:
            out.append("Resolve")
        out += [name for name, kind in FAULT_OF_ACTION.items() if kind in b.faults]
        if A.SWAP_DELAYED in b.faults:
            out += ["Deliver", "Drop"]
    if b.orphan_runs:
        out.append("RemoveOrphans")
    if A.READ_AT in caps.reads:
        out.append("ReadAt")
    if A.READ_INCREMENTAL in caps.reads:
        out.append("ReadIncremental")
    return tuple(r for r in RULES if r in out)
