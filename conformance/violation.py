"""What the conformance suite reports, as types of its own: a `Violation` (a property of
spec/PROPERTIES.md broken at one step, with what the model and the engine observed) and
an `InvalidProgram` (a program that asks for a step the model does not enable here, or
that the engine's capabilities exclude; a caller's mistake, never a finding).

Neither is an AssertionError: an `assert` in the suite is for its own invariants, and
an engine's own assertion that fires is reported as a Violation naming it.
"""
from __future__ import annotations

from icefloe.model import checks

AGREEMENT = "A0 ModelAgreement"
PROPERTIES = (AGREEMENT, *checks.SAFETY_CHECKS, *checks.TERMINAL_CHECKS)


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


class InvalidProgram(Exception):
    """A step the model does not enable in this state, or that this engine's capabilities
    exclude: the program is not one the suite can run (checked before the step runs)."""

    def __init__(self, label, why: str):
        super().__init__(f"step {label!r} {why}")
        self.label, self.why = label, why
