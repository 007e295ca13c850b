"""Commit outcomes as types (spec/PROTOCOL.md, "Commit outcomes"; TLA+ `Outcome`).

"The swap was rejected" and "we do not know whether the swap landed" are different
facts: a Conflict allows cleanup of what the attempt wrote, an Unknown never does.
"""
from __future__ import annotations

from dataclasses import dataclass


# -- the outcome of one swap request at the catalog ------------------------------------

@dataclass(frozen=True)
class Swapped:
    """The catalog acknowledged: its pointer now names `new_location`."""
    new_location: str


@dataclass(frozen=True)
class SwapRejected:
    """Definitely not applied: the pointer was not `expected_location`, or the request
    failed before it could have had any effect."""
    expected_location: str
    actual_location: str | None
    reason: str


@dataclass(frozen=True)
class SwapUnknown:
    """The request may or may not have been applied (lost acknowledgement, timeout,
    connection reset after sending). It may even be applied later."""
    expected_location: str
    new_location: str
    reason: str


SwapResult = Swapped | SwapRejected | SwapUnknown


# -- the outcome of a whole table operation (all attempts) -------------------------------

@dataclass(frozen=True)
class Committed:
    metadata_location: str
    snapshot_id: int | None
    attempts: int


@dataclass(frozen=True)
class Conflict:
    """Definitely not committed: a validation failed, or retries were exhausted on
    definite swap rejections. Everything the operation wrote has been cleaned up."""
    reason: str
    attempts: int
    snapshot_id: int | None = None


@dataclass(frozen=True)
class Unknown:
    """Not known to be committed, not known to have failed. Nothing was cleaned up.
    Resolve later by looking for `snapshot_id` in the table's metadata chain."""
    reason: str
    attempts: int
    snapshot_id: int | None
    attempted_locations: tuple[str, ...] = ()


CommitOutcome = Committed | Conflict | Unknown


class IcefloeError(Exception):
    """Base of every typed error icefloe raises."""


class CommitConflictError(IcefloeError):
    def __init__(self, outcome: Conflict):
        super().__init__(outcome.reason)
        self.outcome = outcome


class CommitStateUnknownError(IcefloeError):
    def __init__(self, outcome: Unknown):
        super().__init__(outcome.reason)
        self.outcome = outcome


def require_committed(outcome: CommitOutcome) -> Committed:
    """Turn a non-committed outcome into its distinct exception."""
    if isinstance(outcome, Committed):
        return outcome
    if isinstance(outcome, Conflict):
        raise CommitConflictError(outcome)
    if isinstance(outcome, Unknown):
        raise CommitStateUnknownError(outcome)
    raise TypeError(f"not a commit outcome: {outcome!r}")
