"""Flawed REST catalog servers: negative controls for `icefloe conform --rest-uri`, each
`icefloe serve` with one method overridden (test infrastructure).

  unknown-as-400        an unknown commit outcome answered 400 BadRequest (apache/polaris
                        #5145: CommitStateUnknown mapped to 400);
  unknown-as-409        answered 409 CommitFailed, which tells the client to clean up a
                        commit that may have landed (apache/iceberg #12818, #13867);
  non-atomic-check      the requirements checked against one version, the swap made from
                        whatever is current a moment later (check, then act);
  replay-reapplies      advertises idempotency-key-lifetime, but a retry with the same key
                        runs the commit again (iceberg-go #1603).

Every server here, the reference too, runs on an `UnreliableBackend`: a SQLite catalog
whose COMMIT, once armed, fails after reaching the database (landed, reply lost) or before
(not landed) at seeded random, so unknown outcomes really happen at the server. The
reference answers them 500 and must pass; each variant must be caught.
"""
from __future__ import annotations

import random
import threading
import time

from icefloe.conformance.testing.faulty_sql import AFTER, BEFORE, wrap_connect
from icefloe.conformance.testing.rest_server import RestServer
from icefloe.impl.catalog.sql import SqlCatalog, connection_factory
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.serve import errors as E
from icefloe.impl.serve.commit import Committer
from icefloe.impl.serve.idempotency import Idempotency
from icefloe.impl.serve.service import CatalogService
from icefloe.impl.serve.store import TableChange, store_for

AFTER_P, BEFORE_P = 0.15, 0.05
CHECK_TO_SWAP_S = 0.05   # non-atomic-check: the window between its check and its swap


class UnreliableBackend:
    """COMMITs fail at seeded random once `arm()` is called (setup runs clean)."""

    def __init__(self, seed: int = 0, after_p: float = AFTER_P, before_p: float = BEFORE_P):
        self.rng, self.after_p, self.before_p = random.Random(seed), after_p, before_p
        self.armed = False
        self.lock = threading.Lock()
        self.counts = {AFTER: 0, BEFORE: 0}

    def arm(self) -> None:
        self.armed = True

    def decide(self):
        if not self.armed:
            return None
        with self.lock:
            x = self.rng.random()
            when = AFTER if x < self.after_p else BEFORE if x < self.after_p + self.before_p else None
            if when:
                self.counts[when] += 1
            return when


class UnknownAs400(Committer):
    def unknown(self, result):
        return E.bad_request(f"commit failed: {result.reason}")


class UnknownAs409(Committer):
    def unknown(self, result):
        return E.commit_failed(f"commit failed: {result.reason}")


class NonAtomicCheck(Committer):
    def swap(self, moves, stored):
        time.sleep(CHECK_TO_SWAP_S)
        changes = []
        for p in moves:
            current = self.service.location_of(p.ident)
            changes.append(TableChange(p.ident, current if p.base_location else None, p.new_location))
        return self.service.store.commit(changes, stored)


class ReplayReapplies(Idempotency):
    def run(self, key, operation, handler):
        return handler(None)


VARIANTS = {
    "unknown-as-400": {"committer": UnknownAs400},
    "unknown-as-409": {"committer": UnknownAs409},
    "non-atomic-check": {"committer": NonAtomicCheck},
    "replay-reapplies": {"idempotency": ReplayReapplies},
}
REFERENCE = "reference"


def server(variant: str, catalog_uri: str, warehouse: str, seed: int = 0) -> tuple[RestServer, UnreliableBackend]:
    """`icefloe serve` (REFERENCE) or one flawed variant, on an UnreliableBackend."""
    if variant != REFERENCE and variant not in VARIANTS:
        raise ValueError(f"no REST server variant {variant!r}: {REFERENCE}, {', '.join(sorted(VARIANTS))}")
    backend = UnreliableBackend(seed)
    dialect, connect = connection_factory(catalog_uri)
    catalog = SqlCatalog(dialect=dialect, connect=wrap_connect(connect, backend.decide))
    service = CatalogService(catalog, store_for(catalog), StoreRouter(), warehouse)
    return RestServer(catalog_uri, warehouse, service=service, **VARIANTS.get(variant, {})), backend
