"""Final-state forms of the liveness properties L1 and L2 (spec/PROPERTIES.md), shared by
every model whose outcome rows start with (res, lone): Iceberg's (checks/iceberg.py),
Hive's (model/hive.py) and Hudi's (model/hudi.py)."""
from __future__ import annotations

from icefloe.model.state import COMMITTED, PENDING


def pending_operation(outcomes) -> str | None:
    """The first operation that never ended, for any model whose outcome rows start
    with (res, lone): the final-state form of L2's termination clause."""
    for w, row in enumerate(outcomes, start=1):
        for k, o in enumerate(row, start=1):
            if o[0] == PENDING:
                return f"operation ({w}, {k}) never ended"
    return None


def lone_not_committed(outcomes, allowed=(COMMITTED,), healed_only=False) -> str | None:
    """The first lone operation that did not end in `allowed` (L1's final-state form)."""
    for w, row in enumerate(outcomes, start=1):
        for k, o in enumerate(row, start=1):
            if o[1] and (not healed_only or o[2]) and o[0] not in allowed:
                return f"lone operation ({w}, {k}) ended {o[0]}"
    return None
