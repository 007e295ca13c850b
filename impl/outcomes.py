"""Commit outcomes as types (spec/PROTOCOL.md 9 "Commit outcomes"; TLA+ `Finish(w, wr, res)`
with res "committed", "conflict" or "unknown"). `Outcome` is the one outcome type of icefloe:
the model records how an operation ended as `model.state.OpResult` (its `res` one of these names).

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
    failed before it could have had any effect. `unavailable`: the catalog could not take
    the request at all (a read-only or unreachable database, an unreadable pointer), which
    a retry reports as such rather than as losing a race."""
    expected_location: str
    actual_location: str | None
    reason: str
    unavailable: bool = False


@dataclass(frozen=True)
class SwapUnknown:
    """The request may or may not have been applied (lost acknowledgement, timeout,
    connection reset after sending). It may even be applied later."""
    expected_location: str
    new_location: str
    reason: str


SwapResult = Swapped | SwapRejected | SwapUnknown


# -- the outcome of a whole table operation (all attempts) -------------------------------

# Why a Conflict is definite (`Conflict.cause`), so a caller can tell a failed validation
# from exhausted retries without parsing the reason's text (spec/PROTOCOL.md 7 and 9.5).
VALIDATION = "validation"   # a validation of the operation no longer holds (7.3)
ATTEMPTS = "attempts"       # commit.retry.num-retries exhausted on definite rejections (6.1)
TIME = "time"               # commit.retry.total-timeout-ms exhausted (6.1)
COLLISION = "collision"     # a freshly named object or snapshot id already existed (1.4, 1.5)
STORE = "store"             # storage or the catalog failed definitely (nothing landed) (9.5)
CONFLICT_CAUSES = (VALIDATION, ATTEMPTS, TIME, COLLISION, STORE)

# Isolation levels of operations that read what they replace (spec/PROTOCOL.md 7.3; the
# table properties write.delete/update/merge.isolation-level take these values).
SERIALIZABLE, SNAPSHOT = "serializable", "snapshot"
ISOLATION_LEVELS = (SERIALIZABLE, SNAPSHOT)


@dataclass(frozen=True)
class Committed:
    """Landed. `snapshot_id` is None for operations without a snapshot (rollback, expire,
    a no-op); `attempts` is 0 for a no-op (5.4); `metadata_location` is the version that
    landed, when the engine knows it."""
    snapshot_id: int | None
    attempts: int
    metadata_location: str | None = None


@dataclass(frozen=True)
class Conflict:
    """Definitely not committed: a validation failed, or retries were exhausted on
    definite swap rejections. Everything the operation wrote has been cleaned up.
    `cause` is one of CONFLICT_CAUSES."""
    reason: str
    attempts: int
    snapshot_id: int | None = None
    cause: str = VALIDATION

    def __post_init__(self):
        if self.cause not in CONFLICT_CAUSES:
            raise ValueError(f"Conflict.cause must be one of {CONFLICT_CAUSES}, not {self.cause!r}")


@dataclass(frozen=True)
class Unknown:
    """Not known to be committed, not known to have failed. Nothing was cleaned up.
    Resolve later by looking for `snapshot_id` in the table's metadata chain."""
    reason: str
    attempts: int
    snapshot_id: int | None = None
    attempted_locations: tuple[str, ...] = ()


Outcome = Committed | Conflict | Unknown

# The outcomes' names (spec/PROTOCOL.md 9.1; TLA+ `Finish`). model.state names them alike; the
# model imports nothing of impl, so the names are defined twice and a test holds them equal.
COMMITTED, CONFLICT, UNKNOWN = "committed", "conflict", "unknown"


class IcefloeError(Exception):
    """Base of every typed error icefloe raises."""


class InvalidArgument(IcefloeError, ValueError):
    """A caller's mistake: an argument outside what the call accepts. (Assertions in impl
    state icefloe's own invariants only; what a caller passes is checked with this.)"""


def require(condition: bool, message: str) -> None:
    """Check a caller's argument: InvalidArgument(message) unless `condition` holds."""
    if not condition:
        raise InvalidArgument(message)


class CommitLoopExceeded(IcefloeError, RuntimeError):
    """The commit loop took more steps than its bound (spec/PROTOCOL.md 6.3): a defect of an
    operation or of icefloe, never the caller's input, and raised even under `python -O`.
    Nothing was cleaned up: if a swap was sent, the commit may have landed, so resolve it as
    an Unknown (look for its snapshot in the metadata chain)."""


class CommitConflictError(IcefloeError):
    def __init__(self, outcome: Conflict):
        super().__init__(outcome.reason)
        self.outcome = outcome


class CommitStateUnknownError(IcefloeError):
    def __init__(self, outcome: Unknown):
        super().__init__(outcome.reason)
        self.outcome = outcome


def require_committed(outcome: Outcome) -> Committed:
    """Turn a non-committed outcome into its distinct exception."""
    if isinstance(outcome, Committed):
        return outcome
    if isinstance(outcome, Conflict):
        raise CommitConflictError(outcome)
    if isinstance(outcome, Unknown):
        raise CommitStateUnknownError(outcome)
    raise TypeError(f"not a commit outcome: {outcome!r}")
