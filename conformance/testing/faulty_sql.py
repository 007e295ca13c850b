"""Driver errors on a SQL catalog's COMMIT (spec/PROTOCOL.md 4.1, 9.2), around any DB-API
connection: the conformance suite's transport faults for SQL catalogs.

`wrap_connect(connect, decide)` returns a connection factory whose connections ask
`decide()` at every COMMIT statement:
- "before": the driver raises before the COMMIT reached the database (the transaction is
  rolled back when the connection is dropped): not applied, and the client cannot know;
- "after": the COMMIT is executed, then the driver raises (the reply was lost): applied,
  and the client cannot know;
- None: the COMMIT runs as usual.
The error is the driver's own OperationalError, as a lost connection raises it.
"""
from __future__ import annotations

from typing import Callable

BEFORE, AFTER = "before", "after"


class _Cursor:
    def __init__(self, inner, connection: "_Connection"):
        self._inner, self._connection = inner, connection

    def execute(self, statement, *args):
        if isinstance(statement, str) and statement.strip().upper() == "COMMIT":
            when = self._connection.decide()
            if when == BEFORE:
                raise self._connection.operational_error("injected: connection lost before COMMIT was sent")
            result = self._inner.execute(statement, *args)
            if when == AFTER:
                raise self._connection.operational_error("injected: connection lost after COMMIT, reply lost")
            return result
        return self._inner.execute(statement, *args)

    def __getattr__(self, name):
        return getattr(self._inner, name)


class _Connection:
    def __init__(self, inner, decide: Callable[[], str | None]):
        self._inner, self.decide = inner, decide

    def cursor(self, *args):
        return _Cursor(self._inner.cursor(*args), self)

    def operational_error(self, message: str) -> Exception:
        error = getattr(self._inner, "OperationalError", None)
        if error is None:
            import sqlite3
            error = sqlite3.OperationalError
        return error(message)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def wrap_connect(connect: Callable[[], object], decide: Callable[[], str | None]) -> Callable[[], object]:
    """A connection factory like `connect` whose COMMITs fail as `decide()` says."""
    def connect_with_faults():
        return _Connection(connect(), decide)
    return connect_with_faults
