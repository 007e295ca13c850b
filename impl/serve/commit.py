"""The commit endpoint `POST /v1/namespaces/{ns}/tables/{t}` and the multi-table
`POST /v1/transactions/commit` (REST spec: CommitTableRequest, CommitTransactionRequest;
spec/PROTOCOL.md 3 "The catalog's swap", 9 "Commit outcomes"; TLA+ `TryCommit` + `Swap`).

One server-side attempt: read the table's current metadata (the base), check every
requirement against it, apply the updates (icefloe's metadata code), write the new
metadata file next to the base's, and swap the catalog's pointer from the base to it
with the request's Idempotency-Key in the same catalog transaction (store.py). The
requirements are checked against the very version the swap replaces, so the check and
the swap are atomic: a concurrent commit that lands in between makes the swap fail, and
the next attempt re-reads and re-checks (a server-side retry, bounded by
SERVER_ATTEMPTS_MAX, as Iceberg-Java's CatalogHandlers do).

The answer follows what is known of the outcome, never more:
- a failed requirement, a snapshot numbered for an older version (a commit landed since,
  apache/iceberg #15001), a snapshot removed that a ref points at now (an expiry planned
  before a ref moved there), or every attempt lost its race: 409 CommitFailedException (not
  applied; the attempt's own metadata file is deleted);
- an update that cannot apply, a malformed body: 400, nothing written;
- the catalog could not take the request (its database unreachable before COMMIT): 503;
- the swap's outcome is unknown (an error on COMMIT): 500 CommitStateUnknownException,
  and nothing is deleted.
"""
from __future__ import annotations

import json

from icefloe.impl.format.metadata import TableMetadata
from icefloe.impl.format.transforms import UNSORTED, PartitionSpec
from icefloe.impl.format.types import FormatError, Schema
from icefloe.impl.outcomes import InvalidArgument, SwapRejected, Swapped
from icefloe.impl.serve import errors as E
from icefloe.impl.serve import requirements as R
from icefloe.impl.serve import updates as U
from icefloe.impl.serve.service import CatalogService, Response, identifier, table_location
from icefloe.impl.serve.records import KeyRecord, TableChange
from icefloe.impl.table.env import metadata_version

SERVER_ATTEMPTS_MAX = 8
PLACEHOLDER_ID = -1  # the schema and spec of a staged create's empty base, dropped once replaced


def _placeholder(ident, warehouse: str, service: CatalogService) -> TableMetadata:
    """The empty base a create transaction (`assert-create`) applies its updates to:
    the table's own updates add its schema, spec, sort order, location and properties."""
    from icefloe.impl.format.metadata import new_table_metadata
    base = new_table_metadata(Schema((), PLACEHOLDER_ID), table_location(warehouse, ident), service.env.uuid(),
                              service.env.wall_ms(), PartitionSpec(PLACEHOLDER_ID, ()), UNSORTED)
    return base


def _without_placeholders(m: TableMetadata) -> TableMetadata:
    """The created table without its empty base's parts: the placeholder schema and spec,
    and the base's unsorted order unless it is the default (a direct create of a sorted
    table has sort orders [1], and so has a staged one; Iceberg-Java's builder alike)."""
    from dataclasses import replace
    if m.current_schema_id == PLACEHOLDER_ID or m.default_spec_id == PLACEHOLDER_ID:
        raise E.bad_request("a create transaction must add and set the table's schema and partition spec")
    orders = m.sort_orders if m.default_sort_order_id == UNSORTED.order_id else \
        tuple(o for o in m.sort_orders if o.order_id != UNSORTED.order_id)
    return replace(m, schemas=tuple(s for s in m.schemas if s.schema_id != PLACEHOLDER_ID),
                   partition_specs=tuple(s for s in m.partition_specs if s.spec_id != PLACEHOLDER_ID),
                   sort_orders=orders)


class Planned:
    """One table's change in one attempt: its base and the new version, written."""

    def __init__(self, ident, base_location: str | None, new_location: str | None, metadata: TableMetadata):
        self.ident, self.base_location, self.new_location, self.metadata = ident, base_location, new_location, metadata


class Committer:
    def __init__(self, service: CatalogService):
        self.service = service

    # -- one table's attempt ----------------------------------------------------------------

    def plan(self, ident, requirements, updates) -> Planned:
        """Read, check, apply and write one table's next version (a no-op writes nothing)."""
        s = self.service
        base_location = s.location_of(ident)
        creating = any(r.creates for r in requirements)
        if base_location is None and not creating:
            raise E.no_such_table(str(ident))
        base = s.read(base_location) if base_location is not None else None
        failure = R.first_failure(requirements, base)
        if failure is not None:
            raise E.commit_failed(failure)
        try:
            start = base if base is not None else _placeholder(ident, s.warehouse, s)
            new = U.apply_all(start, updates, base_location, s.env.wall_ms(), creating=base is None)
            if base is None:
                new = _without_placeholders(new)
        except (U.StaleSequenceNumber, U.SnapshotStillReferenced) as e:
            raise E.commit_failed(f"{ident} changed since the request was built: {e}") from None
        except (InvalidArgument, FormatError) as e:
            raise E.bad_request(f"Cannot apply the updates to {ident}: {e}") from None
        if base is None:               # a staged create: where it lives is the client's, confined
            s.check_new_location(new.location)
        if base is not None and new == U.apply_all(base, [], base_location, new.last_updated_ms):
            return Planned(ident, base_location, None, base)          # nothing to change
        version = 0 if base_location is None else (metadata_version(base_location) or 0) + 1
        return Planned(ident, base_location, s.write_metadata(new, version), new)

    # -- the endpoints ------------------------------------------------------------------------------

    def commit_table(self, namespace, name, request, key: KeyRecord | None) -> Response:
        ident = identifier(namespace, name)
        if request.identifier is not None and (tuple(request.identifier.namespace), request.identifier.name) != \
                (ident.namespace, ident.name):
            raise E.bad_request(f"the body names {request.identifier.namespace}.{request.identifier.name}, "
                                f"the path {ident}")
        requirements, updates = R.parse_all(request.requirements), U.parse_all(request.updates)
        return self._commit([(ident, requirements, updates)], key, single=True)

    def commit_transaction(self, request, key: KeyRecord | None) -> Response:
        changes, seen = [], set()
        for change in request.table_changes:
            if change.identifier is None:
                raise E.bad_request("every table change of a transaction names its table (identifier)")
            ident = identifier(tuple(change.identifier.namespace), change.identifier.name)
            if ident in seen:
                raise E.bad_request(f"table {ident} appears twice in one transaction")
            seen.add(ident)
            changes.append((ident, R.parse_all(change.requirements), U.parse_all(change.updates)))
        if not changes:
            raise E.bad_request("a transaction without table changes")
        return self._commit(changes, key, single=False)

    def _commit(self, changes, key: KeyRecord | None, single: bool) -> Response:
        s = self.service
        for attempt in range(1, SERVER_ATTEMPTS_MAX + 1):
            planned: list[Planned] = []
            try:
                for ident, requirements, updates in changes:
                    planned.append(self.plan(ident, requirements, updates))
            except E.RestError as e:
                self._discard(planned)
                if key is not None and e.status == E.CONFLICT and s.store.lookup_key(key.key) is not None:
                    raise _Replay(key.key) from None   # a twin with this key landed while we read
                raise
            moves = [p for p in planned if p.new_location is not None]
            if not moves:                                  # every table already as asked
                return self._answer(planned, single, None)
            stored = None if key is None else KeyRecord(key.key, key.operation, 200 if single else 204,
                                                        self._record(planned, single), key.created_at_ms)
            result = self.swap(moves, stored)
            if isinstance(result, Swapped):
                return self._answer(planned, single, result)
            if isinstance(result, SwapRejected):
                self._discard(moves)                        # definitely not applied: ours to delete
                if result.unavailable:
                    raise E.unavailable(f"the catalog could not take the commit: {result.reason}")
                if key is not None and s.store.lookup_key(key.key) is not None:
                    raise _Replay(key.key)                   # a twin with this key landed first
                continue                                    # lost a race: re-read and re-check
            raise self.unknown(result)
        raise E.commit_failed(f"the commit lost the race for the catalog {SERVER_ATTEMPTS_MAX} times in a row")

    def swap(self, moves: list[Planned], stored: KeyRecord | None):
        """Every move from the base its requirements were checked against, with the key."""
        return self.service.store.commit([TableChange(p.ident, p.base_location, p.new_location) for p in moves],
                                         stored)

    def unknown(self, result) -> E.RestError:
        """The answer for a swap whose outcome is unknown: never a 4xx."""
        return E.commit_state_unknown(f"Commit state unknown: {result.reason}")

    def _discard(self, planned: list[Planned]) -> None:
        for p in planned:
            if p.new_location is not None:
                self.service.delete_quietly(p.new_location)

    @staticmethod
    def _record(planned: list[Planned], single: bool) -> str:
        """What a replay answers: the metadata locations this commit made current."""
        return json.dumps({"kind": "commit" if single else "transaction", "table": str(planned[0].ident),
                           "metadata-location": planned[0].new_location or planned[0].base_location})

    def _answer(self, planned: list[Planned], single: bool, result) -> Response:
        if not single:
            return Response(204)
        p = planned[0]
        location = p.new_location or p.base_location
        body = self.service.load_result(location)
        body.pop("config", None)
        return Response(200, body)


class _Replay(Exception):
    """The request's Idempotency-Key was recorded by a twin request meanwhile: answer as
    it was answered (idempotency.py catches this)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key
