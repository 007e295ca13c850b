"""The races family: directed races on every store the suite runs, not only the in-memory
store with SQLite (issue 30 item 4; spec/PROTOCOL.md 3.2 "The swap contract", 4.2 "S3
pointer object", 9 "Commit outcomes"; the model's `Swap` on a moved pointer, `SwapDelayed`
then `Deliver`, `AckLost` then `Resolve`).

Every other family's programs run on the memory store with a SQLite catalog; the S3
catalog's lost-race path (a 412 on a remembered etag the rival made stale) and its reconcile
when the pointer moved more than once while an outcome was unknown were reached only by
the random search's few S3 programs. A class is `(where, race, operation)`:

  where     "s3 + S3 catalog" (moto S3 through the fault proxy, the pointer object with
            conditional writes), "s3 + SQLite", "memory + PostgreSQL" (a real server, when the
            machine has one: conformance.testing.postgres_server);
  race      "lost the race at its swap": a rival's append lands while the operation waits
            to swap, so its swap is refused (a 412 on S3) and it retries or ends, for every
            classic operation kind;
            "two rivals commit while its swap is delayed": an append's swap is reported
            unknown and parked, two rivals' appends land, then the parked request arrives
            (stale) and the writer resolves;
            "two rivals commit while its answer is held" (S3 catalog): the append's pointer
            write applied, its answer held while two rivals' appends land on top, then lost:
            the catalog's reconcile finds the pointer two swaps on and must not call it
            rejected (apache/iceberg #3717 turned inward).

A class counts as covered when its program ran on the engine in agreement with the model
and the model's transitions show the race itself (`Observer`): the operation's swap on a
pointer that had moved, or two rivals' commits while its outcome was unknown.
"""
from __future__ import annotations

from dataclasses import replace

from icefloe.conformance.coverage.base import Family, Graph, Program, Tracker, simulate
from icefloe.conformance.suite.profiles import MEMORY, S3, classic_bounds
from icefloe.model import iceberg
from icefloe.model.state import ACK_LOST, APPEND, CLASSIC_KINDS, RESOLVE, SWAP_DELAYED, SWAP_FAIL

FAMILY = Family("races", "a race on each store the suite runs: a lost swap, two rivals inside an unknown window")
S3_CATALOG, S3_SQLITE, POSTGRES = "s3 + S3 catalog", "s3 + SQLite", "memory + PostgreSQL"
WHERE = {S3_CATALOG: (S3, "s3"), S3_SQLITE: (S3, "sqlite"), POSTGRES: (MEMORY, "postgres")}
LOST = "lost the race at its swap"
DELAYED2 = "two rivals commit while its swap is delayed"
HELD2 = "two rivals commit while its answer is held"
RACES = (LOST, DELAYED2, HELD2)


def total_classes() -> frozenset:
    """Every class at full capabilities (the coverage total)."""
    out = {(where, LOST, kind) for where in WHERE for kind in CLASSIC_KINDS}
    out |= {(where, DELAYED2, APPEND) for where in WHERE}
    out.add((S3_CATALOG, HELD2, APPEND))
    return frozenset(out)


def _append(w: int) -> list:
    return [("Begin", w, APPEND), ("WriteData", w), ("WriteManifests", w), ("WriteManifestList", w),
            ("WriteMetadata", w)]


def programs(rivals: Graph, bounds: iceberg.Bounds, wheres: tuple, held: bool) -> dict:
    """class -> Program for the engine: `rivals` is the rivals family's instance as the
    engine can be driven, `bounds` the engine's (narrowed to its capabilities), `wheres`
    the stores and catalogs it can run on, `held` whether its S3 requests can be held."""
    out = {}
    for kind in CLASSIC_KINDS:
        witness = min((p for c, p in rivals.witnesses.items() if c[0] == kind and c[1] == APPEND and c[2] == "swap"),
                      key=lambda p: (len(p.labels), repr(p.labels)), default=None)
        if witness is None:
            continue
        for where in wheres:
            store, catalog = WHERE[where]
            cls = (where, LOST, kind)
            out[cls] = Program(FAMILY.name, witness.bounds, witness.labels, store, catalog, cls)
    three = replace(classic_bounds(bounds), writers=3, ops=1, orphan_runs=0, por=False,
                    kinds=tuple(k for k in bounds.kinds if k in CLASSIC_KINDS) or (APPEND,))
    rivals_commit = _append(2) + [("Swap", 2)] + _append(3) + [("Swap", 3)]
    if SWAP_DELAYED in bounds.faults:
        b = replace(three, faults=(SWAP_DELAYED,), fault_budget=1)
        labels = tuple(_append(1) + [("SwapDelayed", 1)] + rivals_commit + [("Deliver", 1, 1, 1)])
        simulate(Program(FAMILY.name, b, labels), False, Tracker(()))     # every step enabled in the model
        for where in wheres:
            store, catalog = WHERE[where]
            cls = (where, DELAYED2, APPEND)
            out[cls] = Program(FAMILY.name, b, labels, store, catalog, cls)
    swap_faults = (SWAP_FAIL, ACK_LOST, SWAP_DELAYED)      # a held answer is offered where all three are
    if held and set(swap_faults) <= set(bounds.faults) and S3_CATALOG in wheres:
        b = replace(three, faults=swap_faults, fault_budget=1)
        labels = tuple(_append(1) + [("HoldAnswer", 1)] + rivals_commit + [("LoseAnswer", 1)])
        store, catalog = WHERE[S3_CATALOG]
        out[(S3_CATALOG, HELD2, APPEND)] = Program(FAMILY.name, b, labels, store, catalog,
                                                   (S3_CATALOG, HELD2, APPEND))
    return out


class Observer:
    """What a races program's model transitions show: `lost` when some writer's Swap met a
    pointer that had left its base; `rivals_while_unknown` the most rival commits that landed
    while one writer's outcome was unknown (its phase Resolve, or its swap parked)."""

    def __init__(self):
        self.lost = False
        self.rivals_while_unknown = 0
        self._unknown: dict = {}        # writer -> rival commits since its outcome became unknown

    def __call__(self, s, label, t) -> None:
        if label[0] == "Swap":
            wr = s.writers[label[1] - 1]
            if s.cat != wr.base:
                self.lost = True
        parked = {req[0] for req in t.inflight}
        for w, wr in enumerate(t.writers, start=1):
            if wr.phase == RESOLVE or w in parked:
                self._unknown.setdefault(w, 0)
            else:
                self._unknown.pop(w, None)
        if t.cat != s.cat:
            for w in self._unknown:
                if t.cat[0] != w:
                    self._unknown[w] += 1
                    self.rivals_while_unknown = max(self.rivals_while_unknown, self._unknown[w])

    def note(self, family: str, cls: tuple) -> None:
        """Transport notes go to the run's own tracker, not here."""

    def covered(self, cls: tuple) -> bool:
        return self.lost if cls[1] == LOST else self.rivals_while_unknown >= 2


def postgres_available() -> str | None:
    """None if this machine can start a PostgreSQL server, else why not."""
    try:
        from icefloe.conformance.testing.postgres_server import server_bin_dir
        server_bin_dir()
        import psycopg2  # noqa: F401 - the SQL catalog's driver
    except Exception as e:  # noqa: BLE001 - any reason is a reason not to run there
        return f"no PostgreSQL on this machine ({e})"
    return None
