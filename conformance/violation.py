"""What the conformance suite reports, as types of its own: a `Violation` (a property of
spec/PROPERTIES.md broken at one step, with what the model and the engine observed) and
an `InvalidProgram` (a program that asks for a step the model does not enable here, or
that the engine's capabilities exclude; a caller's mistake, never a finding).

Neither is an AssertionError: an `assert` in the suite is for its own invariants, and
an engine's own assertion that fires is reported as a Violation naming it.
"""
from __future__ import annotations

from icefloe.model import checks
from icefloe.model.checks import v3 as v3_checks

AGREEMENT = "A0 ModelAgreement"
# The format v3 properties (P11-P14) judged by the suite's v3 phase (conformance.v3).
V3_PROPERTIES = tuple(p for p in v3_checks.SAFETY_CHECKS if p not in checks.SAFETY_CHECKS)
PROPERTIES = (AGREEMENT, *checks.SAFETY_CHECKS, *V3_PROPERTIES, *checks.TERMINAL_CHECKS)


class Violation(Exception):
    """A property broken at one step, with what the model and the engine observed.
    `step_index` and `label` name the step (set by the lockstep); `properties` holds every
    property the failure breaks (the history checker may name more than the step did);
    `program` is the program as run, once a replay has raised it."""

    def __init__(self, prop: str, message: str, model=None, engine=None):
        super().__init__(f"{prop}: {message}")
        if prop not in PROPERTIES:
            raise ValueError(f"not a property of spec/PROPERTIES.md: {prop!r}")
        self.prop, self.message, self.model, self.engine = prop, message, model, engine
        self.step_index: int | None = None
        self.label = None
        self.verdict = None               # the history checker's Verdict, when it found this
        self.properties: set = {prop}
        self.program: list | None = None

    def at(self, step_index: int, label) -> "Violation":
        """Name the step (the first call wins: the innermost step that raised it)."""
        if self.step_index is None:
            self.step_index, self.label = step_index, label
        return self


class AdapterError(Exception):
    """An exception the engine's adapter did not expect: a black-box commit's `run()` raised
    instead of returning an Outcome, or `create_table` raised. It says the adapter is wrong
    or incomplete for this engine (a method the engine's version lacks, an error it does
    not map), not that the engine broke a property: its own verdict, "adapter error", with
    the traceback in the report (issue 32). `where` names the call; `program` and `store`,
    once known, the program during which it happened."""

    def __init__(self, where: str, error: BaseException):
        import traceback
        super().__init__(f"{where}: {type(error).__name__}: {error}")
        self.where, self.error = where, error
        self.traceback = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        self.program: list | None = None
        self.store: str | None = None

    def to_json(self) -> dict:
        return {"where": self.where, "exception": type(self.error).__name__, "message": str(self.error),
                "traceback": self.traceback, "store": self.store,
                "program": None if self.program is None else [list(lab) for lab in self.program]}


class InvalidProgram(Exception):
    """A step the model does not enable in this state, or that this engine's capabilities
    exclude: the program is not one the suite can run (checked before the step runs)."""

    def __init__(self, label, why: str):
        super().__init__(f"step {label!r} {why}")
        self.label, self.why = label, why
