"""Driver errors on a SQL catalog's COMMIT (spec/PROTOCOL.md 4.1, 9.2), around any DB-API
connection: the conformance suite's transport faults for SQL catalogs.

`wrap_connect(connect, decide)` returns a connection factory whose connections ask
`decide()` at every COMMIT statement:
- "before": the driver raises before the COMMIT reached the database (the transaction is
  rolled back when the connection is dropped): not applied, and the client cannot know;
- "after": the COMMIT is executed, then the driver raises (the reply was lost): applied,
  and the client cannot know;
- a `Stalled(seconds, commit)`: the driver raises at once, as a client whose COMMIT got no
  reply within its timeout, while the statement is still on its way: `seconds` later the
  COMMIT (or, with `commit=False`, a ROLLBACK: the connection died before the server read
  it) runs on the abandoned connection, which is closed then. Until then the transaction
  keeps its row locks, as an in-flight COMMIT does on the server;
- None: the COMMIT runs as usual.
The error is the driver's own OperationalError, as a lost connection raises it.

`wrap_connect(..., refuse=...)` also asks `refuse()` before every new connection; an error
message refuses it (the database unreachable). `UnresolvedCommits` combines the two into a
seeded schedule that leaves a swap's outcome unknown to its writer (issue 14 item 8): a
lost COMMIT answer alone is settled by the writer's next pointer read, so the writer's
next connection is refused too.
"""
from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable

BEFORE, AFTER = "before", "after"
STALL = "stall"
SQL_FAULT_KINDS = (BEFORE, AFTER, STALL)
STALL_JOIN_S = 60.0


@dataclass(frozen=True)
class Stalled:
    """The COMMIT is sent `seconds` late, after the client gave up (module docstring)."""
    seconds: float
    commit: bool = True


class _Cursor:
    def __init__(self, inner, connection: "_Connection"):
        self._inner, self._connection = inner, connection

    def execute(self, statement, *args):
        if isinstance(statement, str) and statement.strip().upper() == "COMMIT":
            when = self._connection.decide()
            if isinstance(when, Stalled):
                self._connection.stall(self._inner, when)
                raise self._connection.operational_error("injected: no reply to COMMIT within the timeout")
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
    def __init__(self, inner, decide: Callable[[], str | None], stalls: "_Stalls | None" = None):
        self._inner, self.decide = inner, decide
        self._stalls = stalls or _Stalls()
        self._stalled = False

    def stall(self, cursor, how: Stalled) -> None:
        """Send the transaction's end `how.seconds` from now, from another thread."""
        self._stalled = True
        self._stalls.start(how, cursor, self._inner)

    def close(self):
        if not self._stalled:  # else the stalled statement's thread closes it when sent
            self._inner.close()

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


class _Stalls:
    """The stalled COMMITs (ROLLBACKs) of one factory, each on its own thread."""

    def __init__(self):
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.errors: Counter = Counter()

    def start(self, how: Stalled, cursor, inner) -> None:
        def late():
            time.sleep(how.seconds)
            try:
                cursor.execute("COMMIT" if how.commit else "ROLLBACK")
            except Exception as e:  # noqa: BLE001 - a late statement's fate is the server's
                self.errors[type(e).__name__] += 1
            finally:
                try:
                    inner.close()
                except Exception:  # noqa: BLE001 - already gone
                    pass
        t = threading.Thread(target=late, name="stalled-commit", daemon=True)
        with self._lock:
            self._threads = [x for x in self._threads if x.is_alive()] + [t]
        t.start()

    def join(self, timeout_s: float = STALL_JOIN_S) -> bool:
        """Wait until every stalled statement was sent; False if some are still pending."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in threads)


def wrap_connect(connect: Callable[[], object], decide: Callable[[], str | None],
                 refuse: Callable[[], str | None] | None = None, error: type = None,
                 stalls: _Stalls | None = None) -> Callable[[], object]:
    """A connection factory like `connect` whose COMMITs fail as `decide()` says and whose
    new connections are refused (raising `error`, the driver's OperationalError) while
    `refuse()` names a reason."""
    stalls = stalls if stalls is not None else _Stalls()

    def connect_with_faults():
        why = refuse() if refuse is not None else None
        if why:
            import sqlite3
            raise (error or sqlite3.OperationalError)(f"injected: {why}")
        return _Connection(connect(), decide, stalls)
    connect_with_faults.stalls = stalls
    return connect_with_faults


class UnresolvedCommits:
    """A seeded schedule of COMMIT faults that leave swaps unresolved (module docstring):
    each COMMIT is hit with `probability`; the kind is drawn by `weights` (BEFORE: not
    applied; AFTER: applied, answer lost; STALL: sent `stall_s` late, a COMMIT with
    probability `stall_commit_share`, else a ROLLBACK); after each, the writer's next
    `blackout_connects` connections are refused. `injected` counts by kind."""

    def __init__(self, seed, probability: float, *, weights: dict | None = None,
                 stall_s: tuple = (0.3, 1.5), stall_commit_share: float = 0.5, blackout_connects: int = 1):
        assert 0.0 <= probability <= 1.0 and blackout_connects >= 0
        self.probability = probability
        self.weights = dict(weights or {AFTER: 2.0, BEFORE: 1.0, STALL: 1.0})
        assert set(self.weights) <= set(SQL_FAULT_KINDS) and sum(self.weights.values()) > 0
        self.stall_s, self.stall_commit_share = stall_s, stall_commit_share
        self.blackout_connects = blackout_connects
        self.injected: Counter = Counter()
        self._rng = random.Random(f"unresolved-commits-{seed}")
        self._dark = 0
        self._lock = threading.Lock()

    def decide(self):
        with self._lock:
            if self._rng.random() >= self.probability:
                return None
            kinds = [k for k in SQL_FAULT_KINDS if self.weights.get(k, 0) > 0]
            kind = self._rng.choices(kinds, [self.weights[k] for k in kinds])[0]
            self._dark = self.blackout_connects
            if kind == STALL:
                commit = self._rng.random() < self.stall_commit_share
                self.injected[f"{STALL}:{'commit' if commit else 'rollback'}"] += 1
                return Stalled(round(self._rng.uniform(*self.stall_s), 3), commit)
            self.injected[kind] += 1
            return kind

    def refuse(self) -> str | None:
        with self._lock:
            if self._dark <= 0:
                return None
            self._dark -= 1
            self.injected["blackout"] += 1
            return "connection refused (the database is unreachable)"

    def wrap(self, connect: Callable[[], object], error: type | None = None) -> Callable[[], object]:
        return wrap_connect(connect, self.decide, self.refuse, error)
