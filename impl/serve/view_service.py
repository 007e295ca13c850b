"""The REST catalog's view operations (REST spec: listViews, createView, loadView,
replaceView, dropView, renameView, viewExists, registerView; Iceberg view spec for the
metadata files), independent of HTTP, over a CatalogService and its store.

A view is a catalog row of kind VIEW naming its current view metadata file, written by
this server into `<view location>/metadata/` (views.py builds the document). A replace is
one compare-and-swap of that row from the version the request was checked against:
there is no server-side retry, since a view commit's only requirement (assert-view-uuid)
says nothing of the version the client read; a concurrent replace that landed first makes
this one 409 CommitFailedException, and the client decides again (spec/PROTOCOL.md 3, the
catalog's swap; 9 for the 409 / 500 / 503 split, as commit.py). Views need a store that
keeps them (the SQL catalog's v1 schema); other stores answer 406.
"""
from __future__ import annotations

import json

from icefloe.impl.io.base import StoreError
from icefloe.impl.outcomes import SwapRejected, Swapped
from icefloe.impl.serve import errors as E
from icefloe.impl.serve import views as V
from icefloe.impl.serve.records import VIEW, KeyRecord, TableChange
from icefloe.impl.serve.service import CatalogService, Response, table_location
from icefloe.impl.table.confinement import table_root_of
from icefloe.impl.table.env import metadata_file_location, metadata_version


class ViewService:
    def __init__(self, service: CatalogService):
        self.service = service

    def require(self) -> None:
        """406 unless this catalog's store keeps views."""
        self.store  # noqa: B018 - the property refuses

    @property
    def store(self):
        store = self.service.store
        if not hasattr(store, "view_location"):
            raise E.unsupported(f"views are not kept by the {type(store).__name__} store (the SQL catalog keeps them)")
        store.require_views()
        return store

    def _call(self, fn):
        return self.service._catalog_call(fn)

    def location_of(self, ident) -> str | None:
        store = self.store
        return self._call(lambda: store.view_location(ident))

    def _read(self, location: str) -> dict:
        try:
            return V.check_document(json.loads(self.service.io.get(location)), location)
        except (StoreError, ValueError) as e:
            raise E.RestError(500, "InternalServerError", f"cannot read view metadata {location}: {e}") from None

    def _result(self, location: str, view: dict | None = None) -> dict:
        return {"metadata-location": location, "metadata": view if view is not None else self._read(location),
                "config": {}}

    def _write(self, view: dict, version: int) -> str:
        location = metadata_file_location(view["location"], version, self.service.env.uuid())
        try:
            self.service.io.put_if_absent(location, json.dumps(view, indent=2).encode())
        except StoreError as e:
            raise E.unavailable(f"cannot write {location}: {e}") from None
        return location

    @staticmethod
    def _key(draft, location: str) -> KeyRecord | None:
        if draft is None:
            return None
        return KeyRecord(draft.key, draft.operation, 200, json.dumps({"kind": "load", "metadata-location": location}),
                         draft.created_at_ms)

    # -- the endpoints ---------------------------------------------------------------------

    def list_views(self, namespace) -> Response:
        self.service._require_namespace(namespace)
        store = self.store
        views = self._call(lambda: store.list_views(namespace))
        return Response(200, {"identifiers": [{"namespace": list(v.namespace), "name": v.name} for v in views]})

    def load_view(self, ident) -> Response:
        location = self.location_of(ident)
        if location is None:
            raise E.no_such_view(str(ident))
        return Response(200, self._result(location))

    def view_exists(self, ident) -> Response:
        if self.location_of(ident) is None:
            raise E.no_such_view(str(ident))
        return Response(204)

    def create_view(self, ident, request: dict, draft) -> Response:
        """CreateViewRequest: name, location?, schema, view-version, properties?."""
        s = self.service
        self.require()
        s._require_namespace(ident.namespace)
        location = request.get("location") or table_location(s.warehouse, ident)
        if not isinstance(location, str):
            raise E.bad_request("Malformed CreateViewRequest: location: a string")
        location = location.rstrip("/")
        properties = request.get("properties") or {}
        if not isinstance(properties, dict) or not all(isinstance(v, str) for v in properties.values()):
            raise E.bad_request("Malformed CreateViewRequest: properties: a map of strings")
        try:
            view = V.new_view(s.env.uuid(), location, request.get("schema"), request.get("view-version"), properties,
                              s.env.wall_ms())
        except V.ViewError as e:
            raise E.bad_request(f"Malformed CreateViewRequest: {e}") from None
        if self.location_of(ident) is not None:
            raise E.view_exists(str(ident))
        s.check_new_location(location)
        return self._create_row(ident, view, draft)

    def _create_row(self, ident, view: dict, draft, metadata_location: str | None = None) -> Response:
        s = self.service
        written = metadata_location is None
        location = self._write(view, 0) if written else metadata_location
        result = s.store.commit([TableChange(ident, None, location, VIEW)], self._key(draft, location))
        if isinstance(result, Swapped):
            return Response(200, self._result(location, view))
        if isinstance(result, SwapRejected):
            if written:
                s.delete_quietly(location)
            if result.unavailable:
                raise E.unavailable(f"create view {ident}: {result.reason}")
            raise E.view_exists(str(ident))            # a table or a view of that name
        raise E.commit_state_unknown(f"create view {ident}: outcome unknown: {result.reason}")

    def register_view(self, ident, request: dict, draft) -> Response:
        """RegisterViewRequest: name, metadata-location (a view metadata file of ours to adopt)."""
        s = self.service
        self.require()
        s._require_namespace(ident.namespace)
        metadata_location = request.get("metadata-location")
        root = table_root_of(metadata_location) if isinstance(metadata_location, str) else None
        if root is None:
            raise E.bad_request("Malformed RegisterViewRequest: metadata-location: <view location>/metadata/<file>")
        s.locations.check(root)
        s.check_new_location(root)
        try:
            view = V.check_document(json.loads(s.io.get(metadata_location)), metadata_location)
        except (StoreError, ValueError) as e:
            raise E.bad_request(f"Cannot register view {metadata_location}: {e}") from None
        if view["location"].rstrip("/") != root.rstrip("/"):
            raise E.bad_request(f"Cannot register view {metadata_location}: its location field names "
                                f"{view['location']!r}, not {root!r}")
        return self._create_row(ident, view, draft, metadata_location)

    def replace_view(self, ident, request: dict, draft) -> Response:
        """CommitViewRequest: requirements (assert-view-uuid) and updates, one swap."""
        s = self.service
        base_location = self.location_of(ident)
        if base_location is None:
            raise E.no_such_view(str(ident))
        base = self._read(base_location)
        try:
            failure = V.first_failure(request.get("requirements", []), base)
            if failure is not None:
                raise E.commit_failed(failure)
            new = V.apply_updates(base, request.get("updates", []), s.env.wall_ms())
        except V.ViewError as e:
            raise E.bad_request(f"Cannot apply the updates to view {ident}: {e}") from None
        if new == base:
            return Response(200, self._result(base_location, base))
        location = self._write(new, (metadata_version(base_location) or 0) + 1)
        result = s.store.commit([TableChange(ident, base_location, location, VIEW)], self._key(draft, location))
        if isinstance(result, Swapped):
            return Response(200, self._result(location, new))
        if isinstance(result, SwapRejected):
            s.delete_quietly(location)                   # definitely not applied: ours to delete
            if result.unavailable:
                raise E.unavailable(f"the catalog could not take the view commit: {result.reason}")
            raise E.commit_failed(f"view {ident} changed since this request read it (a concurrent replace "
                                  "landed first); nothing applied")
        raise E.commit_state_unknown(f"Commit state unknown: {result.reason}")

    def drop_view(self, ident) -> Response:
        store = self.store
        if not self._call(lambda: store.drop_view(ident)):
            raise E.no_such_view(str(ident))
        return Response(204)

    def rename_view(self, source, destination) -> Response:
        store = self.store
        self._call(lambda: store.rename(source, destination, VIEW))
        return Response(204)
