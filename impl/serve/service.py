"""The REST catalog's operations, independent of HTTP (REST spec: the Catalog API's
namespace and table routes; spec/PROTOCOL.md 3 for create and drop).

A `Response` is a status and a JSON body (None for 204). Errors are RestErrors
(errors.py). Metadata files are written by icefloe's own format code (metadata.to_json,
env.metadata_file_location) into the table's location, through one StoreRouter, so a
table `icefloe serve` created is one `icefloe scan` or pyiceberg's SqlCatalog reads on the
same catalog. Commits and transactions are commit.py; replay of Idempotency-Keys is
idempotency.py.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from icefloe.impl.catalog.base import (
    CatalogError, CatalogUnavailable, InvalidIdentifier, NamespaceAlreadyExists, NoSuchTable, TableIdentifier,
)
from icefloe.impl.format.metadata import (
    FORMAT_VERSION_DEFAULT, MetadataError, TableMetadata, new_table_metadata, to_json,
)
from icefloe.impl.format.transforms import (
    UNSORTED, PartitionSpec, partition_spec_from_json, sort_order_from_json,
)
from icefloe.impl.format.types import FormatError, schema_from_json
from icefloe.impl.io.base import NotFound, StoreError
from icefloe.impl.io.locations import scheme_of
from icefloe.impl.outcomes import InvalidArgument, SwapRejected, SwapUnknown, Swapped
from icefloe.impl.serve import errors as E
from icefloe.impl.serve.confine import LocationPolicy, check_levels, check_namespace_length
from icefloe.impl.serve.records import TableChange
from icefloe.impl.serve.store import Store
from icefloe.impl.table.commit import read_metadata
from icefloe.impl.table.confinement import TableLocationOverlap, catalog_tables, check_no_overlap, table_root_of
from icefloe.impl.table.drop import PurgeRefused, drop_table, remove_empty_directories
from icefloe.impl.table.env import Env, metadata_file_location

NAMESPACE_SEPARATOR = "\x1f"


@dataclass(frozen=True)
class Response:
    status: int
    body: dict | None = None


def namespace_of(text: str) -> tuple[str, ...]:
    """A namespace path parameter: levels separated by 0x1F (the spec's default separator)."""
    levels = tuple(text.split(NAMESPACE_SEPARATOR))
    if not all(level.strip() for level in levels) or any(level in (".", "..") or "/" in level for level in levels):
        raise E.bad_request(f"Malformed namespace {text!r}")
    check_levels(levels, "namespace")
    check_namespace_length(levels)
    return levels


def identifier(namespace: tuple[str, ...], name: str) -> TableIdentifier:
    """The table identifier of a path or a body, by one rule wherever it comes from (a
    commit, a rename, a transaction, a register): 400 for what the catalog cannot hold."""
    try:
        ident = TableIdentifier(tuple(namespace), name)
    except InvalidIdentifier as e:
        raise E.bad_request(f"Malformed table identifier: {e}") from None
    check_levels((*ident.namespace, ident.name), "table identifier")
    check_namespace_length(ident.namespace)
    return ident


def warehouse_root(warehouse: str) -> str:
    """The warehouse as a location: s3:// and memory:// as given, a local directory resolved."""
    if warehouse.startswith(("s3://", "s3a://", "memory://")):
        return warehouse.rstrip("/")
    if "://" in warehouse and scheme_of(warehouse) != "file":
        raise E.bad_request(f"warehouse {warehouse}: a local directory, memory:// or s3://bucket/prefix")
    return "file://" + str(Path(warehouse.removeprefix("file://")).resolve())


def table_location(warehouse: str, ident: TableIdentifier) -> str:
    """Where a table without a requested location lives: <warehouse>/<namespace...>/<name>
    (impl/cli.py's convention, so the CLI and the server agree)."""
    if warehouse.startswith(("s3://", "s3a://", "memory://")):
        return "/".join([warehouse.rstrip("/"), *ident.namespace, ident.name])
    if "://" in warehouse and scheme_of(warehouse) != "file":
        raise E.bad_request(f"warehouse {warehouse}: a local directory, memory:// or s3://bucket/prefix")
    return "file://" + str(Path(warehouse.removeprefix("file://")).resolve().joinpath(*ident.namespace, ident.name))


class CatalogService:
    """`allowed_locations`: roots besides the warehouse where a client may put a table
    (confine.py); nothing else is ever written, registered or purged."""

    def __init__(self, catalog, store: Store, io, warehouse: str, env: Env | None = None,
                 allowed_locations: tuple[str, ...] = ()):
        self.catalog, self.store, self.io, self.warehouse = catalog, store, io, warehouse
        self.env = env or Env()
        self.locations = LocationPolicy(warehouse_root(warehouse), tuple(allowed_locations))

    # -- reading tables -----------------------------------------------------------------

    def location_of(self, ident: TableIdentifier) -> str | None:
        try:
            return self.catalog.load(ident)
        except NoSuchTable:
            return None
        except CatalogUnavailable as e:
            raise E.unavailable(str(e)) from None

    def read(self, location: str) -> TableMetadata:
        try:
            return read_metadata(self.io, location)
        except (MetadataError, FormatError, StoreError) as e:
            raise E.RestError(500, "InternalServerError", f"cannot read table metadata {location}: {e}") from None

    def load_result(self, location: str) -> dict:
        """LoadTableResult / CommitTableResponse: the file's own JSON, as committed."""
        try:
            document = json.loads(self.io.get(location))
        except (StoreError, ValueError) as e:
            raise E.RestError(500, "InternalServerError", f"cannot read table metadata {location}: {e}") from None
        return {"metadata-location": location, "metadata": document, "config": {}}

    def load_table(self, ident: TableIdentifier) -> Response:
        location = self.location_of(ident)
        if location is None:
            raise E.no_such_table(str(ident))
        return Response(200, self.load_result(location))

    def table_exists(self, ident: TableIdentifier) -> Response:
        if self.location_of(ident) is None:
            raise E.no_such_table(str(ident))
        return Response(204)

    def list_tables(self, namespace: tuple[str, ...]) -> Response:
        self._require_namespace(namespace)
        tables = self._catalog_call(lambda: self.catalog.list_tables(namespace))
        return Response(200, {"identifiers": [{"namespace": list(t.namespace), "name": t.name} for t in tables]})

    # -- namespaces -------------------------------------------------------------------------

    def _catalog_call(self, fn):
        try:
            return fn()
        except CatalogUnavailable as e:
            raise E.unavailable(str(e)) from None
        except InvalidArgument as e:
            raise E.bad_request(str(e)) from None

    def _require_namespace(self, namespace: tuple[str, ...]) -> None:
        if not self._catalog_call(lambda: self.store.namespace_exists(namespace)):
            raise E.no_such_namespace(".".join(namespace))

    def list_namespaces(self, parent: tuple[str, ...] | None) -> Response:
        if parent:
            self._require_namespace(parent)
        found = self._catalog_call(lambda: self.store.list_namespaces(parent))
        return Response(200, {"namespaces": [list(ns) for ns in found]})

    def create_namespace(self, namespace: tuple[str, ...], properties: dict) -> Response:
        try:
            self._catalog_call(lambda: self.store.create_namespace(namespace, properties))
        except NamespaceAlreadyExists:
            raise E.namespace_exists(".".join(namespace)) from None
        return Response(200, {"namespace": list(namespace), "properties": properties})

    def load_namespace(self, namespace: tuple[str, ...]) -> Response:
        props = self._catalog_call(lambda: self.store.namespace_properties(namespace))
        return Response(200, {"namespace": list(namespace), "properties": props})

    def namespace_exists(self, namespace: tuple[str, ...]) -> Response:
        self._require_namespace(namespace)
        return Response(204)

    def drop_namespace(self, namespace: tuple[str, ...]) -> Response:
        self._catalog_call(lambda: self.store.drop_namespace(namespace))
        return Response(204)

    def update_namespace_properties(self, namespace, updates: dict, removals: list) -> Response:
        both = sorted(set(updates) & set(removals))
        if both:
            raise E.RestError(E.UNPROCESSABLE, "UnprocessableEntityException",
                              f"Properties both updated and removed: {', '.join(both)}")
        updated, removed, missing = self._catalog_call(
            lambda: self.store.update_namespace_properties(namespace, updates, removals))
        return Response(200, {"updated": updated, "removed": removed, "missing": missing or None})

    # -- creating, registering, dropping, renaming ----------------------------------------------

    def new_metadata(self, ident: TableIdentifier, request) -> TableMetadata:
        """The metadata of a table a CreateTableRequest describes (400 for a bad schema,
        spec or sort order; 409 for a location that overlaps another table's)."""
        try:
            schema = schema_from_json(request.schema_, "schema")
            spec = (partition_spec_from_json(request.partition_spec, "partition-spec")
                    if request.partition_spec else PartitionSpec(0, ()))
            order = sort_order_from_json(request.write_order, "write-order") if request.write_order else UNSORTED
            if order.fields and order.order_id == 0:
                order = type(order)(1, order.fields)
            location = (request.location or table_location(self.warehouse, ident)).rstrip("/")
        except (FormatError, InvalidArgument) as e:
            raise E.bad_request(f"Malformed CreateTableRequest: {e}") from None
        self.check_new_location(location, ident)
        try:
            # `format-version` is the table's version, not a property (as Iceberg's catalogs take it)
            properties = dict(request.properties or {})
            version = properties.pop("format-version", FORMAT_VERSION_DEFAULT)
            return new_table_metadata(schema, location, self.env.uuid(), self.env.wall_ms(), spec, order,
                                      properties, format_version=version)
        except (FormatError, InvalidArgument) as e:
            raise E.bad_request(f"Malformed CreateTableRequest: {e}") from None

    def check_new_location(self, location: str, ident: TableIdentifier | None = None) -> None:
        """A new table's or view's (or a registered one's) root: inside the warehouse or an
        allowed root (403), and overlapping no other table's or view's (409; create's rule,
        confinement.py; `ident`'s own entry is not another table)."""
        self.locations.check(location)
        others = dict(self._catalog_call(lambda: catalog_tables(self.catalog)))
        views = getattr(self.store, "view_locations", None)       # a view's files must not mix either
        if views is not None:
            others.update(self._catalog_call(views))
        others = {k: v for k, v in others.items() if ident is None or str(k) != str(ident)}
        try:
            check_no_overlap(location, others)
        except TableLocationOverlap as e:
            raise E.RestError(E.CONFLICT, "AlreadyExistsException", str(e)) from None
        except InvalidArgument as e:
            raise E.bad_request(str(e)) from None

    def write_metadata(self, metadata: TableMetadata, version: int) -> str:
        location = metadata_file_location(metadata.location, version, self.env.uuid())
        try:
            self.io.put_if_absent(location, to_json(metadata))
        except StoreError as e:
            if _name_too_long(e):
                raise E.bad_request(f"Malformed table location: the store cannot hold {location}: {e}") from None
            raise E.unavailable(f"cannot write {location}: {e}") from None
        return location

    def delete_quietly(self, location: str) -> None:
        """A metadata file this server wrote for a change the catalog definitely refused."""
        try:
            self.io.delete(location)
        except (StoreError, NotFound):
            pass  # an orphan at worst: orphan removal finds it

    def register_change(self, ident: TableIdentifier, location: str, key) -> Response:
        """Create the catalog row for `location` (with the request's key, atomically)."""
        result = self.store.commit([TableChange(ident, None, location)], key)
        if isinstance(result, Swapped):
            return Response(200, self.load_result(location))
        if isinstance(result, SwapUnknown):
            raise E.RestError(500, "CommitStateUnknownException", f"create {ident}: outcome unknown: {result.reason}")
        if result.unavailable:
            raise E.unavailable(f"create {ident}: {result.reason}")
        raise E.table_exists(str(ident))

    def register_table(self, namespace, request, key) -> Response:
        ident = identifier(namespace, request.name)
        self._require_namespace(namespace)
        root = table_root_of(request.metadata_location)
        if root is None:
            raise E.bad_request(f"Cannot register {request.metadata_location}: not a metadata file in the "
                                "metadata directory of its table (<location>/metadata/<file>)")
        self.locations.check(root)
        self.check_new_location(root, ident if request.overwrite else None)
        try:
            read_metadata(self.io, request.metadata_location)
        except (MetadataError, FormatError, StoreError) as e:
            raise E.bad_request(f"Cannot register {request.metadata_location}: {e}") from None
        current = self.location_of(ident)
        if current is not None and request.overwrite:
            result = self.store.commit([TableChange(ident, current, request.metadata_location)], key)
            if isinstance(result, Swapped):
                return Response(200, self.load_result(request.metadata_location))
            raise E.RestError(409 if isinstance(result, SwapRejected) and not result.unavailable else 500,
                              "CommitFailedException" if isinstance(result, SwapRejected) else
                              "CommitStateUnknownException", f"register {ident}: {result.reason}")
        return self.register_change(ident, request.metadata_location, key)

    def drop_table(self, ident: TableIdentifier, purge: bool) -> Response:
        """Drop, and with `purge` delete what the table's metadata reaches inside its
        location, by the CLI's own rule (impl/table/drop.py): never a listing of its root."""
        location = self.location_of(ident)
        if location is None:
            raise E.no_such_table(str(ident))
        try:
            drop_table(self.catalog, ident, self.io, purge=purge)
        except NoSuchTable:
            raise E.no_such_table(str(ident)) from None
        except PurgeRefused as e:
            raise E.bad_request(f"purge {ident}: {e}") from None
        except CatalogError as e:
            raise E.unavailable(f"drop {ident}: {e}") from None
        root = table_root_of(location) if purge else None
        if root is not None:
            remove_empty_directories(root)
        return Response(204)

    def rename_table(self, source: TableIdentifier, destination: TableIdentifier) -> Response:
        self._catalog_call(lambda: self.store.rename(source, destination))
        return Response(204)


def _name_too_long(e: Exception) -> bool:
    """A store's failure that is the name's fault (ENAMETOOLONG), not the store's."""
    import errno
    cause = e
    for _ in range(4):   # the chain a store error wraps (bounded)
        if isinstance(cause, OSError) and cause.errno == errno.ENAMETOOLONG:
            return True
        cause = cause.__cause__ or cause.__context__
        if cause is None:
            return False
    return False
