"""icefloe's own table operations through an Iceberg REST catalog, as a black-box engine
whose swap is a REST commit (capability transport "rest"; the contract:
icefloe.conformance.adapter): the reference REST engine of the suite's REST mode, and
with `engine_cleanup_after_unknown` its negative control.

Each writer runs icefloe's commit loop (impl's PendingCommit: plan, data file, manifest,
manifest list, metadata file, then the swap) over its own `RestPointer`, an icefloe
catalog that speaks the REST catalog protocol through a minimal client: `load` is the
table's GET (its metadata-location), `create` registers the first metadata file, and
`swap(expected, new)` commits the difference between the two metadata files (new
snapshots, removed snapshots, changed refs) with the requirements a REST client sends
(assert-table-uuid, assert-ref-snapshot-id of main): 200 is Swapped, 409 (and any other
4xx: refused, not applied) SwapRejected, a 5xx or no answer SwapUnknown. The server
writes its own metadata file; icefloe's is the request's source only.

As Iceberg-Java and pyiceberg do, a writer stops at an unknown swap outcome and reports
Unknown (no resolution, nothing deleted: spec/PROTOCOL.md 9.1, 9.6); a rejection is
retried (commit.retry.num-retries = attempts_max - 1). Every request carries the
writer's number in X-Icefloe-Writer. Data files go to the table's location, which the
server's warehouse gives (a local directory).

`engine_cleanup_after_unknown`: the same engine, which takes an unknown swap outcome as a
failure and deletes what the operation wrote (duckdb-iceberg #1120; apache/iceberg
#12818's class: files deleted although the commit landed), reporting a Conflict.
"""
from __future__ import annotations

import json

from icefloe.conformance import adapter as A
from icefloe.conformance.engines.icefloe_engine import IcefloeCommit, IcefloeEngine, IcefloeTable
from icefloe.impl.catalog.base import CatalogUnavailable, NoSuchTable, TableAlreadyExists
from icefloe.impl.format.metadata import MAIN_BRANCH, to_json
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.outcomes import Committed, Conflict, SwapRejected, Swapped, SwapUnknown, Unknown
from icefloe.impl.table.commit import DONE, UNKNOWN, read_metadata

REQUEST_TIMEOUT_S = 150.0          # longer than the server may hold a commit (GATE_HOLD_S_MAX)
STEPS_MAX = 64
CAPABILITIES = A.Capabilities(
    operations=frozenset({A.APPEND, A.OVERWRITE, A.DELETE, A.ROLLBACK}), mode=A.BLACK_BOX,
    reads=frozenset({A.READ_CURRENT, A.READ_AT, A.READ_INCREMENTAL}), isolation=A.SERIALIZABLE,
    stores=frozenset({"rest"}), transport=frozenset({A.TRANSPORT_REST}))


class RestPointer:
    """An icefloe catalog over the REST catalog protocol (writer `writer`'s requests)."""

    name = "rest"

    def __init__(self, url: str, writer: int, io):
        from icefloe.conformance.testing.rest_client import RestClient
        self.client = RestClient(url, writer=writer, timeout_s=REQUEST_TIMEOUT_S)
        self.io = io
        self.last_location: str | None = None      # the metadata file the server wrote last for us

    @staticmethod
    def _path(identifier) -> tuple[str, str]:
        return ".".join(identifier.namespace), identifier.name

    def load(self, identifier) -> str:
        namespace, name = self._path(identifier)
        answer = self.client.load(namespace, name)
        if answer.status == 404:
            raise NoSuchTable(str(identifier))
        if answer.status != 200:
            raise CatalogUnavailable(f"load {identifier}: {answer.status} {answer.error or answer.body}")
        return answer.body["metadata-location"]

    def create(self, identifier, metadata_location: str) -> None:
        namespace, name = self._path(identifier)
        created = self.client.create_namespace(namespace)
        if created.status not in (200, 409):
            raise CatalogUnavailable(f"create namespace {namespace}: {created.status} {created.body}")
        answer = self.client.call("POST", f"/v1/namespaces/{namespace}/register",
                                  {"name": name, "metadata-location": metadata_location})
        if answer.status == 409:
            raise TableAlreadyExists(str(identifier))
        if answer.status != 200:
            raise CatalogUnavailable(f"register {identifier}: {answer.status} {answer.error or answer.body}")

    def swap(self, identifier, expected_location: str, new_location: str):
        base, new = read_metadata(self.io, expected_location), read_metadata(self.io, new_location)
        head = base.refs.get(MAIN_BRANCH)
        requirements = [{"type": "assert-table-uuid", "uuid": base.table_uuid},
                        {"type": "assert-ref-snapshot-id", "ref": MAIN_BRANCH,
                         "snapshot-id": None if head is None else head.snapshot_id}]
        answer = self.client.commit(*self._path(identifier), requirements, updates(base, new))
        if answer.status == 200:
            self.last_location = answer.body["metadata-location"]
            return Swapped(new_location)
        if answer.status is not None and 400 <= answer.status < 500:
            return SwapRejected(expected_location, None, f"{answer.status} {answer.type}")
        return SwapUnknown(expected_location, new_location, f"{answer.status} {answer.type or answer.error}")

    def list_tables(self, namespace):
        return []

    def drop(self, identifier) -> None:
        raise NotImplementedError("the conformance engine never drops its table")


def updates(base, new) -> list:
    """The REST updates that turn metadata `base` into `new`: snapshots added and removed,
    refs set and removed (what icefloe's operations change)."""
    doc, old = json.loads(to_json(new)), json.loads(to_json(base))
    before = {s["snapshot-id"] for s in old.get("snapshots", [])}
    after = {s["snapshot-id"] for s in doc.get("snapshots", [])}
    out = [{"action": "add-snapshot", "snapshot": s} for s in doc.get("snapshots", []) if s["snapshot-id"] not in before]
    old_refs, new_refs = old.get("refs", {}), doc.get("refs", {})
    for name, ref in sorted(new_refs.items()):
        if old_refs.get(name) != ref:
            out.append({"action": "set-snapshot-ref", "ref-name": name, **ref})
    out += [{"action": "remove-snapshot-ref", "ref-name": name} for name in sorted(set(old_refs) - set(new_refs))]
    if before - after:
        out.append({"action": "remove-snapshots", "snapshot-ids": sorted(before - after)})
    return out


class RestCommit:
    """A BlackBoxCommit: icefloe's commit loop until it ends, or until a swap's outcome is
    unknown (then Unknown, nothing deleted)."""

    def __init__(self, inner: IcefloeCommit, catalog: RestPointer):
        self.inner, self.catalog = inner, catalog

    def run(self) -> A.Outcome:
        p = self.inner.pending
        for _ in range(STEPS_MAX):
            if p.done:
                break
            if p.phase == UNKNOWN:
                return self.unknown(p)
            self.inner.step()
        if p.phase != DONE:
            raise RuntimeError(f"the commit did not end in {STEPS_MAX} phases (phase {p.phase})")
        out = p.outcome
        if isinstance(out, Committed) and out.attempts:
            return Committed(out.snapshot_id, out.attempts, self.catalog.last_location)
        return out

    def unknown(self, p) -> A.Outcome:
        reason = p.swap_results[-1].reason if p.swap_results else "unknown"
        return Unknown(f"the REST commit's outcome is unknown ({reason})", p.attempt, p.snapshot_id)


class CleanupAfterUnknownCommit(RestCommit):
    """Negative control: an unknown outcome taken as a failure, the operation's files deleted."""

    def unknown(self, p) -> A.Outcome:
        for location in reversed(p.written):
            try:
                p.io.delete(location)
            except Exception:  # noqa: BLE001 - as careless as the bug it reproduces
                pass
        return Conflict("the REST commit failed (5xx): cleaned up", p.attempt, p.snapshot_id)


class IcefloeRestTable(IcefloeTable):
    """The TableHandle: IcefloeTable's operations and readers over RestPointer catalogs."""

    commit_class = RestCommit

    def parts(self, writer: int):
        if not (self.ctx.catalog_uri or "").startswith("http://"):
            raise A.EngineSpecError(f"the icefloe REST engine needs an http:// REST catalog URI, "
                                    f"not {self.ctx.catalog_uri!r}")
        if writer not in self.io:
            store = StoreRouter()
            self.io[writer] = store
            self.catalogs[writer] = RestPointer(self.ctx.catalog_uri, writer, store)
        return self.io[writer], self.catalogs[writer]

    def begin(self, writer: int, op: A.OpSpec):
        if op.kind not in CAPABILITIES.operations:
            raise A.EngineSpecError(f"the icefloe REST engine has no {op.kind!r} (see its capabilities)")
        return self.commit_class(super().begin(writer, op), self.parts(writer)[1])


class IcefloeRestEngine(IcefloeEngine):
    name = "icefloe-rest"
    capabilities = CAPABILITIES
    table_class = IcefloeRestTable

    def create_table(self, ctx: A.TableContext) -> IcefloeRestTable:
        return self.table_class(self, ctx)


class CleanupAfterUnknownTable(IcefloeRestTable):
    commit_class = CleanupAfterUnknownCommit


class CleanupAfterUnknownEngine(IcefloeRestEngine):
    name = "icefloe-rest-cleanup-after-unknown"
    table_class = CleanupAfterUnknownTable


def engine() -> IcefloeRestEngine:
    """`icefloe conform --engine icefloe.conformance.engines.icefloe_rest:engine`."""
    return IcefloeRestEngine()


def engine_cleanup_after_unknown() -> CleanupAfterUnknownEngine:
    """The negative control: deletes its files after a 5xx and reports a conflict."""
    return CleanupAfterUnknownEngine()
