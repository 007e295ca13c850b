"""Which table a Spark read or write names, and how to reach its files (docs/spark.md,
"Options").

A data source call names its table by its `path` (what `save()` / `load()` receive):

- `<catalog>.<namespace>.<table>`: the catalog is `catalog-type` (`sql`, the default, with
  `catalog-uri` = `sqlite:///...` or `postgresql://...`; or `s3`, whose pointer objects
  live under `warehouse` = `s3://bucket/prefix`). The first level names the catalog (the
  SQL catalog's `catalog_name` column), the last the table, the levels between the
  namespace.
- a table location (`s3://bucket/prefix/ns.db/t`): only the S3 catalog keeps the pointer
  inside the table location, so a location is read as `warehouse/<ns>.db/<table>`.
- a metadata JSON file (`.../metadata/00003-....metadata.json`): read-only, no catalog.

Every value is a string (Spark options are), so this resolves the same way in the driver,
in the commit worker and in each executor; the stores opened are cached per process.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from icefloe.impl.catalog.base import Catalog, TableIdentifier
from icefloe.impl.format.metadata import from_json
from icefloe.impl.io.locations import canonical_location
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.outcomes import IcefloeError

SQL, S3 = "sql", "s3"
S3_SCHEMES = ("s3://", "s3a://")


class SparkOptionError(IcefloeError):
    """A data source option that is missing, unknown or malformed."""


@dataclass(frozen=True)
class TableRef:
    """A resolved `path` plus options: a catalog table or a read-only metadata file."""
    options: tuple  # sorted (key, value) pairs, lower-case keys: hashable for the caches
    identifier: TableIdentifier | None
    catalog_name: str | None
    metadata_file: str | None = None

    def get(self, key: str, default: str | None = None) -> str | None:
        return dict(self.options).get(key, default)

    @property
    def read_only(self) -> bool:
        return self.metadata_file is not None


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in dict(options).items() if v is not None}


def table_ref(options: Mapping[str, str], path: str | None = None) -> TableRef:
    """Resolve `path` (default: the `path` option) against the catalog options."""
    opts = _lower(options)
    path = path if path is not None else opts.get("path")
    if not path:
        raise SparkOptionError("name the table: save('<catalog>.<namespace>.<table>') or a table location")
    kind = opts.get("catalog-type", S3 if opts.get("warehouse", "").startswith(S3_SCHEMES) and
                    "catalog-uri" not in opts else SQL)
    if kind not in (SQL, S3):
        raise SparkOptionError(f"catalog-type must be 'sql' or 's3', not {kind!r}")
    opts["catalog-type"] = kind
    if path.endswith(".metadata.json"):
        return TableRef(tuple(sorted(opts.items())), None, None, _location_of(path))
    if "/" in path:  # a table location: <warehouse>/<ns>.db/<table> (the S3 catalog's layout)
        if kind != S3:
            raise SparkOptionError(f"a table location ({path!r}) needs catalog-type=s3; the SQL "
                                   f"catalog finds tables by name")
        head, _, name = path.rstrip("/").rpartition("/")
        warehouse, _, ns = head.rpartition("/")
        if not ns.endswith(".db") or not name:
            raise SparkOptionError(f"{path!r} is not a table location <warehouse>/<namespace>.db/<table>")
        given = opts.get("warehouse")
        if given and given.rstrip("/") != warehouse:
            raise SparkOptionError(f"{path!r} is not under warehouse {given!r}")
        opts["warehouse"] = warehouse
        identifier = TableIdentifier(tuple(ns[:-3].split(".")), name)
        return TableRef(tuple(sorted(opts.items())), identifier, opts.get("catalog-name", S3))
    levels = path.split(".")
    if len(levels) < 3 or not all(levels):
        raise SparkOptionError(f"{path!r}: expected <catalog>.<namespace>.<table>")
    if kind == SQL and "catalog-uri" not in opts:
        raise SparkOptionError("catalog-type=sql needs the option catalog-uri (sqlite:///... or postgresql://...)")
    if kind == S3 and not opts.get("warehouse", "").startswith(S3_SCHEMES):
        raise SparkOptionError("catalog-type=s3 needs the option warehouse=s3://bucket/prefix")
    identifier = TableIdentifier(tuple(levels[1:-1]), levels[-1])
    return TableRef(tuple(sorted(opts.items())), identifier, levels[0])


def _location_of(path: str) -> str:
    if "://" in path or path.startswith("file:"):
        return path
    return Path(path).resolve().as_uri()


def warehouse_location(ref: TableRef) -> str:
    """Where new tables go: `<warehouse>/<ns>.db/<table>` (pyiceberg's default layout)."""
    warehouse = ref.get("warehouse")
    if not warehouse:
        raise SparkOptionError("creating a table needs the option warehouse (a directory or s3://bucket/prefix)")
    if "://" not in warehouse and not warehouse.startswith("file:"):
        warehouse = Path(warehouse).resolve().as_uri()
    if ref.identifier is None:
        raise SparkOptionError("creating a table needs a table identifier (namespace.table), not a path")
    return f"{warehouse.rstrip('/')}/{ref.identifier.namespace_str}.db/{ref.identifier.name}"


@functools.lru_cache(maxsize=16)
def _s3_store(endpoint: str | None, access_key: str, secret_key: str, region: str):
    from icefloe.impl.s3.store import S3Store
    return S3Store.from_config(endpoint, access_key, secret_key, region)


def s3_store(ref: TableRef):
    return _s3_store(ref.get("s3.endpoint"), ref.get("s3.access-key-id", "icefloe"),
                     ref.get("s3.secret-access-key", "icefloe"), ref.get("s3.region", "us-east-1"))


@functools.lru_cache(maxsize=16)
def _io(options: tuple):
    ref = dict(options)
    stores = {}
    if any(ref.get(k, "").startswith(S3_SCHEMES) for k in ("warehouse", "path")) or "s3.endpoint" in ref:
        store = _s3_store(ref.get("s3.endpoint"), ref.get("s3.access-key-id", "icefloe"),
                          ref.get("s3.secret-access-key", "icefloe"), ref.get("s3.region", "us-east-1"))
        stores = {"s3": store, "s3a": store}
    return StoreRouter(stores=stores)


def io_of(ref: TableRef):
    """One StoreRouter per distinct options in this process (file, s3)."""
    return _io(ref.options)


@functools.lru_cache(maxsize=16)
def _catalog(options: tuple, catalog_name: str) -> Catalog:
    ref = dict(options)
    if ref["catalog-type"] == S3:
        from icefloe.impl.catalog.s3 import S3Catalog
        store = _s3_store(ref.get("s3.endpoint"), ref.get("s3.access-key-id", "icefloe"),
                          ref.get("s3.secret-access-key", "icefloe"), ref.get("s3.region", "us-east-1"))
        return S3Catalog(store, ref["warehouse"], name=catalog_name)
    from icefloe.impl.catalog.sql import SqlCatalog
    return SqlCatalog(ref["catalog-uri"], name=catalog_name)


def catalog_of(ref: TableRef) -> Catalog:
    if ref.read_only:
        raise SparkOptionError(f"{ref.metadata_file} is a metadata file: read-only, no catalog")
    return _catalog(ref.options, ref.catalog_name)


def open_table(ref: TableRef):
    """A `Table` handle (catalog tables) or (io, metadata) for a metadata file."""
    from icefloe.impl.table.table import Table
    if ref.read_only:
        io = io_of(ref)
        location = canonical_location(ref.metadata_file)
        return io, from_json(io.get(location), location)
    return Table(catalog_of(ref), ref.identifier, io_of(ref))
