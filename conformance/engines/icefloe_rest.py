"""icefloe's own table operations through an Iceberg REST catalog, as black-box engines
whose swap is a REST commit (capability transport "rest"; the contract:
icefloe.conformance.adapter): the reference REST engines of the suite's REST mode, and a
negative control.

Each writer runs icefloe's commit loop (impl's PendingCommit: plan, data file, manifest,
manifest list, metadata file, then the swap) over its own impl.catalog.rest.RestCatalog,
whose swap commits the attempt's changes with the requirements of its base and an
Idempotency-Key, its requests carrying the writer's number in X-Icefloe-Writer. Data
files go to the table's location, which the server's warehouse gives (a local directory).

  engine()                  as icefloe ships it: a 5xx or a lost answer is decided by
                            replaying the request with its key (the server answers a key
                            that landed as it did), and a swap left unknown is resolved by
                            the commit loop (9.3) through the same replays;
  engine_unresolving()      no replays, and a swap left unknown ends the operation Unknown
                            at once, nothing deleted (9.1, 9.6): the shape of Iceberg-Java
                            and pyiceberg on CommitStateUnknownException;
  engine_cleanup_after_unknown()  the unresolving engine taking an unknown outcome for a
                            failure: it deletes what the operation wrote and reports a
                            Conflict (duckdb-iceberg #1120; apache/iceberg #12818's class).
"""
from __future__ import annotations

from icefloe.conformance import adapter as A
from icefloe.conformance.engines.icefloe_engine import IcefloeCommit, IcefloeEngine, IcefloeTable
from icefloe.impl.catalog.base import NamespaceAlreadyExists
from icefloe.impl.catalog.rest import RestCatalog
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.outcomes import Conflict, Unknown
from icefloe.impl.table.commit import RESOLVE

REQUEST_TIMEOUT_S = 150.0          # longer than the server may hold a commit (GATE_HOLD_S_MAX)
STEPS_MAX = 64
CAPABILITIES = A.Capabilities(
    operations=frozenset({A.APPEND, A.OVERWRITE, A.DELETE, A.ROLLBACK}), mode=A.BLACK_BOX,
    reads=frozenset({A.READ_CURRENT, A.READ_AT, A.READ_INCREMENTAL}), isolation=A.SERIALIZABLE,
    stores=frozenset({"rest"}), transport=frozenset({A.TRANSPORT_REST}))


class RestCommit:
    """A BlackBoxCommit: icefloe's commit loop to its outcome (`stop_at_unknown`: until a
    swap's outcome is unknown, then Unknown, nothing deleted)."""

    stop_at_unknown = False

    def __init__(self, inner: IcefloeCommit):
        self.inner = inner

    def run(self) -> A.Outcome:
        p = self.inner.pending
        for _ in range(STEPS_MAX):
            if p.done:
                return p.outcome
            if p.phase == RESOLVE and self.stop_at_unknown:
                return self.unknown(p)
            self.inner.step()
        raise RuntimeError(f"the commit did not end in {STEPS_MAX} phases (phase {p.phase})")

    def unknown(self, p) -> A.Outcome:
        reason = p.swap_results[-1].reason if p.swap_results else "unknown"
        return Unknown(f"the REST commit's outcome is unknown ({reason})", p.attempt, p.snapshot_id,
                       tuple(p.attempted))


class UnresolvingCommit(RestCommit):
    stop_at_unknown = True


class CleanupAfterUnknownCommit(UnresolvingCommit):
    """Negative control: an unknown outcome taken as a failure, the operation's files deleted."""

    def unknown(self, p) -> A.Outcome:
        for location in reversed(p.written):
            try:
                p.io.delete(location)
            except Exception:  # noqa: BLE001 - as careless as the bug it reproduces
                pass
        return Conflict("the REST commit failed (5xx): cleaned up", p.attempt, p.snapshot_id)


class IcefloeRestTable(IcefloeTable):
    """The TableHandle: IcefloeTable's operations and readers over RestCatalogs."""

    commit_class = RestCommit
    replays_max = 2

    def parts(self, writer: int):
        if not (self.ctx.catalog_uri or "").startswith("http://"):
            raise A.EngineSpecError(f"the icefloe REST engine needs an http:// REST catalog URI, "
                                    f"not {self.ctx.catalog_uri!r}")
        if writer not in self.io:
            store = StoreRouter()
            self.io[writer] = store
            self.catalogs[writer] = self.catalog_for(writer, store)
            if writer == 0:
                try:
                    self.catalogs[0].create_namespace(tuple(self.ctx.identifier.split(".")[:-1]))
                except NamespaceAlreadyExists:
                    pass
        return self.io[writer], self.catalogs[writer]

    def catalog_for(self, writer: int, store) -> RestCatalog:
        return RestCatalog(self.ctx.catalog_uri, store, headers={A.WRITER_HEADER: str(writer)},
                           timeout_s=REQUEST_TIMEOUT_S, replays_max=self.replays_max)

    def begin(self, writer: int, op: A.OpSpec):
        if op.kind not in CAPABILITIES.operations:
            raise A.EngineSpecError(f"the icefloe REST engine has no {op.kind!r} (see its capabilities)")
        return self.commit_class(super().begin(writer, op))


class UnresolvingTable(IcefloeRestTable):
    commit_class = UnresolvingCommit
    replays_max = 0


class CleanupAfterUnknownTable(UnresolvingTable):
    commit_class = CleanupAfterUnknownCommit


class IcefloeRestEngine(IcefloeEngine):
    name = "icefloe-rest"
    capabilities = CAPABILITIES
    table_class = IcefloeRestTable

    def create_table(self, ctx: A.TableContext) -> IcefloeRestTable:
        return self.table_class(self, ctx)


def engine() -> IcefloeRestEngine:
    """`icefloe conform --engine icefloe.conformance.engines.icefloe_rest:engine`."""
    return IcefloeRestEngine()


def engine_unresolving() -> IcefloeRestEngine:
    """Ends an unknown commit Unknown at once, as Iceberg-Java and pyiceberg do."""
    return type("Unresolving", (IcefloeRestEngine,), {"name": "icefloe-rest-unresolving",
                                                       "table_class": UnresolvingTable})()


def engine_cleanup_after_unknown() -> IcefloeRestEngine:
    """The negative control: deletes its files after a 5xx and reports a conflict."""
    return type("CleanupAfterUnknown", (IcefloeRestEngine,), {"name": "icefloe-rest-cleanup-after-unknown",
                                                               "table_class": CleanupAfterUnknownTable})()
