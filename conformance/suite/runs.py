"""Running a program outside Hypothesis: `replay` (a program on a fresh model and
engine), `shrink` (delta debugging to a minimal program that still breaks the same
property), and the `Failure` a run reports.

A program is a list of labels (conformance.suite.lockstep) run at a model instance (`bounds`);
`replay` ends it as every run does (`Lockstep.finish`: liveness, the history checker,
every retained snapshot read). The directed programs are shrunk here; the random search
shrinks with Hypothesis' own shrinker (conformance.suite.machine).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.suite.lockstep import Lockstep
from icefloe.conformance.suite.profiles import MEMORY, REST, S3, classic_bounds
from icefloe.conformance.suite.readers import READ_LABELS
from icefloe.conformance.suite.stats import Stats
from icefloe.conformance.violation import InvalidProgram, Violation
from icefloe.model import iceberg
from icefloe.model.state import CLASSIC_KINDS

SHRINK_REPLAYS_MAX = 400
SHRINK_SECONDS_MAX = 90.0


@dataclass
class Failure:
    """A failing program (after shrinking: a minimal one), the bounds it runs at and the
    violation it finds; `program` is the program as run up to the failing step."""
    store: str
    program: list
    violation: Violation
    seed: int
    ctx_seed: int = 0
    bounds: iceberg.Bounds | None = None
    found_by: str = "search"           # "directed" (a program derived from the model) or "search"
    catalog: str | None = None         # on S3: "sqlite" or "s3" (None: as the example's number chose)


@dataclass
class Sink:
    failure: Failure | None = None
    failures_seen: int = 0
    on_example: object = None          # callable(stats) for progress
    extra: dict = field(default_factory=dict)
    coverage: object = None            # a coverage.Tracker, when the run measures coverage
    deadline: float | None = None      # time.monotonic() past which no program or example starts
    cut: str = ""                      # what the time budget left unrun, if it ran out
    clock: Callable[[], float] = time.monotonic   # injected in tests: when the budget runs out

    def out_of_time(self) -> bool:
        return self.deadline is not None and self.clock() >= self.deadline


def new_lockstep(engine, backends: Backends, store: str, bounds: iceberg.Bounds, seed: int, stats: Stats,
                 ctx_seed: int | None = None, catalog: str | None = None) -> Lockstep:
    ctx = backends.context(engine, store, seed, bounds.attempts_max, catalog)
    if ctx_seed is not None:
        ctx.seed = ctx_seed
    proxy = backends.proxy if store == S3 else None
    if proxy is not None:
        proxy.clear()
    rest = backends.rest().faults if store == REST else None
    return Lockstep(engine, ctx, bounds, stats, proxy, rest)


def replay(engine, program, *, bounds: iceberg.Bounds | None = None, store: str = MEMORY, seed: int = 0,
           backends: Backends | None = None, ctx_seed: int | None = None, finish: bool = True,
           stats: Stats | None = None, observers=(), catalog: str | None = None, lenient: bool = False) -> Lockstep:
    """Run a program (a list of labels) on a fresh model and engine; raises the Violation
    the program finds (with `.program`, the steps as run), else returns the Lockstep.
    `bounds` default: the ci profile's, narrowed to the engine's capabilities (and to the
    classic instance for a program that names no partition, row-level kind or ref). `lenient`
    (directed programs): a step the engine's own legal choices made impossible (a black-box
    commit that stopped retrying where the model retries) ends the program there, as
    `Lockstep.left` says, and the run goes on to its end."""
    if bounds is None:
        from icefloe.conformance.suite.profiles import PROFILES, bounds_for
        bounds = bounds_for(engine, PROFILES["ci"])
        if not _names_rows_or_refs(program):
            bounds = classic_bounds(bounds)
    own = backends is None
    backends = backends or Backends()
    lock = None
    try:
        lock = new_lockstep(engine, backends, store, bounds, seed, stats or Stats(), ctx_seed, catalog)
        lock.observers.extend(observers)
        for label in program:
            try:
                lock.apply(tuple(label))
            except InvalidProgram:
                if not lenient or not lock.program:
                    raise
                lock.left = f"the engine left its directed program before {label[0]}"
                break
        if finish:
            lock.finish()
        return lock
    except Violation as v:
        v.program = list(lock.program) if lock is not None else list(program)
        raise
    finally:
        if lock is not None:
            lock.close()
        if own:
            backends.close()


def _names_rows_or_refs(program) -> bool:
    """Whether a program uses partitions, row-level deletes or refs: a Begin label with a
    partition or ref after its kind, or of a kind only that instance has."""
    return any(label[0] == "Begin" and (len(label) > 3 or label[2] not in CLASSIC_KINDS) for label in program)


def _fails(engine, program, failure: Failure, backends, finish: bool = True) -> Violation | None:
    """The violation `program` finds, if it is one of the same property; else None."""
    try:
        replay(engine, program, bounds=failure.bounds, store=failure.store, seed=failure.seed,
               backends=backends, ctx_seed=failure.ctx_seed, finish=finish, catalog=failure.catalog)
    except Violation as v:
        return v if v.prop == failure.violation.prop else None
    except InvalidProgram:
        return None                  # not a valid program for the model (a step not enabled)
    return None


def shrink(engine, failure: Failure, backends: Backends, replays_max: int = SHRINK_REPLAYS_MAX,
           seconds_max: float = SHRINK_SECONDS_MAX) -> Failure:
    """Delta debugging over the program's steps: cut after the failing step, drop every
    read, then drop chunks (halves, quarters, ... single steps) while the same property
    still fails; last, drop the reads the liveness phase made before the failing one.
    Bounded by `replays_max` replays and `seconds_max`; the result replays as it is."""
    program = list(failure.program)
    if failure.violation.step_index is not None:
        program = program[: failure.violation.step_index + 1]
    best = _fails(engine, program, failure, backends)
    replays = 1
    if best is None:                      # the cut lost it (a teardown finding): keep it whole
        program = list(failure.program)
        best = _fails(engine, program, failure, backends)
        replays += 1
        if best is None:
            return failure                # not reproducible: report as found
    deadline = time.monotonic() + seconds_max
    quiet = [lab for lab in program if lab[0] not in READ_LABELS]
    if quiet != program:                  # readers first: usually not needed, cheap to drop
        found = _fails(engine, quiet, failure, backends)
        replays += 1
        if found is not None:
            program, best = quiet, found
    chunk = max(1, len(program) // 2)
    while chunk >= 1 and replays < replays_max and time.monotonic() < deadline:
        i, progressed = 0, False
        while i < len(program) and replays < replays_max and time.monotonic() < deadline:
            candidate = program[:i] + program[i + chunk:]
            found = _fails(engine, candidate, failure, backends) if candidate else None
            replays += 1
            if found is not None:
                program, best, progressed = candidate, found, True
            else:
                i += chunk
        if not progressed:
            chunk //= 2
    # The program as run up to the failing step, liveness steps included; the reads the
    # liveness phase made before the failing step go if the failure stays without them.
    executed = list(getattr(best, "program", None) or program)
    if best.step_index is not None and best.step_index < len(executed):
        executed = executed[: best.step_index + 1]
        last = executed[-1]
        lean = [lab for lab in executed[:-1] if lab[0] not in READ_LABELS] + [last]
        if lean != executed:
            found = _fails(engine, lean, failure, backends, finish=False)
            if found is not None:
                executed, best = lean, found
    return Failure(failure.store, executed, best, failure.seed, failure.ctx_seed, failure.bounds,
                   failure.found_by, failure.catalog)
