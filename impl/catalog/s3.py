"""A catalog with no database: the S3 pointer object (spec/PROTOCOL.md 4.2, "S3 pointer
object", and 3.2, "The swap contract"; model and TLA+ `Swap`, its faults `AckLost` and
`SwapDelayed` seen from the client, 13.1).

Layout under the warehouse prefix (`s3://bucket/<warehouse>`):

    <ns>.db/<table>/metadata/pointer.json     one per table: the pointer
    _catalog/namespaces.json                  the namespaces that have had a table
    _catalog/<ns>.tables.json                 the tables of one namespace

`<ns>` is the namespace's levels joined with "." (pyiceberg's default table location
is `<warehouse>/<ns>.db/<table>` too). The pointer holds
`{"format": 1, "metadata-location": ..., "previous-metadata-location": ..., "entry-uuid": ...}`.
`entry-uuid` is drawn once per `create` (injected `new_uuid`): a table dropped and
created again at the same metadata location still gets pointer bytes, hence an etag,
that never occurred before, so no-ABA (3.3) holds for the pointer object across
incarnations as well.

Requests (no LIST on any of them):
- `load`: one GET of the pointer (a reader then GETs the metadata JSON: two in all).
  The etag of the bytes read is remembered with the location they name.
- `create`: PUT If-None-Match: * of the pointer, then the two index objects.
- `swap(expected, new)`: one PUT If-Match: <etag of the pointer naming `expected`>.
  The etag comes from the `load`, `create` or `swap` that last saw `expected`; only if
  this catalog object never saw it is the pointer read first (+1 GET).

Outcome of a swap (what `S3Store.compare_and_swap` reports, then at most one GET):
- acknowledged -> Swapped.
- 412 / 404 with no earlier ambiguous attempt -> definitely not applied; the pointer
  is read once for the actual location -> SwapRejected. (If it still names
  `expected` under another etag, the remembered etag was stale, e.g. the table was
  re-created: one more PUT with the fresh etag, `STALE_ETAG_REFRESHES_MAX`.)
- nothing sent, or every attempt refused before it could apply -> SwapRejected.
- a lost response, a timeout or a 5xx after sending (StoreOutcomeUnknown) -> the
  request may have landed, or may still land: reconcile by reading the pointer once.
  Our PUT carried If-Match on the etag of the content naming `expected`; that content
  never comes back (no-ABA), so once the pointer has left `expected` our request can
  never land any more (3.4 a). Whether it already landed is another question:
  - it names `new` -> Swapped (only our request ever writes `new`);
  - it names `expected` -> SwapUnknown: the request may still be in flight and land;
  - it names another location whose previous is `expected` -> SwapRejected: that
    swap went from `expected`, so the pointer was still at `expected` when it landed;
    ours had not landed then (the pointer never returns to `expected`) and cannot
    land afterwards;
  - it names another location whose previous is `new` -> Swapped: ours landed and a
    later swap was built on it;
  - it names a location two or more swaps on, or the pointer is gone -> SwapUnknown:
    ours can no longer land but may have landed in between; S3 without versioning
    cannot tell, and the writer's `reconcile` (9.3) decides by walking the chain.
  Reporting SwapRejected whenever the pointer names something else would be the
  pointer status check of apache/iceberg #3717 (negative control 14.4).

The list operations read the index objects (one GET each). They are maintained with
conditional writes on `create` and `drop` only, never on `swap`, and are a listing aid:
`load` and `swap` never read them. A creator that crashes between the pointer and the
index leaves a loadable table that is not listed; a dropper that crashes after
deleting the pointer leaves a listed table that does not load.
"""
from __future__ import annotations

import json
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from icefloe.impl.catalog.base import (
    CatalogUnavailable,
    InvalidIdentifier,
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    TableAlreadyExists,
    TableIdentifier,
)
from icefloe.impl.io.base import (
    AlreadyExists,
    NotFound,
    PreconditionFailed,
    StoreError,
    StoreOutcomeUnknown,
    StoreUnavailable,
)
from icefloe.impl.outcomes import SwapRejected, SwapResult, Swapped, SwapUnknown, require
from icefloe.impl.s3.store import NoSuchBucket, S3Store

POINTER_FORMAT = 1
INDEX_FORMAT = 1
STALE_ETAG_REFRESHES_MAX = 1  # a stale remembered etag costs one more PUT, never a loop
INDEX_UPDATE_ATTEMPTS_MAX = 64  # read-modify-CAS rounds on an index object under contention
REMEMBERED_ETAGS_MAX = 4096  # (table, location) -> etag entries kept, least recently used out


@dataclass(frozen=True)
class Pointer:
    metadata_location: str
    previous_metadata_location: str | None
    entry_uuid: str

    def encode(self) -> bytes:
        return json.dumps({"format": POINTER_FORMAT, "metadata-location": self.metadata_location,
                           "previous-metadata-location": self.previous_metadata_location,
                           "entry-uuid": self.entry_uuid}, sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes, where: str) -> "Pointer":
        try:
            obj = json.loads(data)
            if obj["format"] != POINTER_FORMAT:
                raise ValueError(f"pointer format {obj['format']!r}")
            location = obj["metadata-location"]
            if not isinstance(location, str) or not location:
                raise ValueError("no metadata-location")
            return cls(location, obj.get("previous-metadata-location"), str(obj["entry-uuid"]))
        except (ValueError, KeyError, TypeError, RecursionError) as e:  # nested past json's depth
            raise CatalogUnavailable(f"{where}: unreadable pointer: {e}") from None


@dataclass(frozen=True)
class _Seen:
    """A pointer content and the etag S3 gave it."""
    pointer: Pointer
    etag: str


class S3Catalog:
    """The Catalog protocol over an S3 store with conditional writes."""

    def __init__(self, store: S3Store, warehouse: str, *, name: str = "s3",
                 new_uuid: Callable[[], str] = lambda: str(uuid.uuid4())):
        require(warehouse.startswith(("s3://", "s3a://")), f"not an s3 warehouse: {warehouse!r}")
        self.name = name
        self.store = store
        self.warehouse = warehouse.rstrip("/")
        self._new_uuid = new_uuid
        self._lock = threading.Lock()
        self._seen: OrderedDict[tuple[TableIdentifier, str], _Seen] = OrderedDict()

    # -- layout -------------------------------------------------------------------------

    @staticmethod
    def _check(identifier: TableIdentifier) -> None:
        for part in (*identifier.namespace, identifier.name):
            if not part or "/" in part or "." in part:
                raise InvalidIdentifier(f"levels must be non-empty, without '/' or '.': {identifier}")
        if not identifier.namespace:
            raise InvalidIdentifier(f"no namespace: {identifier}")

    def table_location(self, identifier: TableIdentifier) -> str:
        self._check(identifier)
        return f"{self.warehouse}/{identifier.namespace_str}.db/{identifier.name}"

    def pointer_location(self, identifier: TableIdentifier) -> str:
        return f"{self.table_location(identifier)}/metadata/pointer.json"

    def _namespaces_location(self) -> str:
        return f"{self.warehouse}/_catalog/namespaces.json"

    def _tables_location(self, namespace: tuple[str, ...]) -> str:
        return f"{self.warehouse}/_catalog/{'.'.join(namespace)}.tables.json"

    # -- remembered etags ---------------------------------------------------------------

    def _remember(self, identifier: TableIdentifier, seen: _Seen) -> None:
        key = (identifier, seen.pointer.metadata_location)
        with self._lock:
            self._seen[key] = seen
            self._seen.move_to_end(key)
            while len(self._seen) > REMEMBERED_ETAGS_MAX:
                self._seen.popitem(last=False)

    def _recall(self, identifier: TableIdentifier, location: str) -> _Seen | None:
        with self._lock:
            return self._seen.get((identifier, location))

    def _forget(self, identifier: TableIdentifier) -> None:
        with self._lock:
            for key in [k for k in self._seen if k[0] == identifier]:
                del self._seen[key]

    def _read_pointer(self, identifier: TableIdentifier) -> _Seen:
        """One GET; raises NotFound or StoreError."""
        where = self.pointer_location(identifier)
        # S3Store's GET answer carries the etag of exactly the bytes read; `get` drops it,
        # and `stat` then `get` would not tie the etag to the content.
        data, info = self.store._get(where)
        seen = _Seen(Pointer.decode(data, where), info.etag)
        self._remember(identifier, seen)
        return seen

    # -- the Catalog protocol -----------------------------------------------------------

    def load(self, identifier: TableIdentifier) -> str:
        try:
            return self._read_pointer(identifier).pointer.metadata_location
        except NotFound:
            raise NoSuchTable(str(identifier)) from None
        except NoSuchBucket:
            raise  # a misconfigured warehouse, not an absent table
        except StoreError as e:
            raise CatalogUnavailable(f"load {identifier}: {e}") from e

    def create(self, identifier: TableIdentifier, metadata_location: str) -> None:
        self._check(identifier)
        pointer = Pointer(metadata_location, None, self._new_uuid())
        self._update_index(self._namespaces_location(), "namespaces", list(identifier.namespace), add=True)
        try:
            info = self.store.put_if_absent(self.pointer_location(identifier), pointer.encode())
        except AlreadyExists:
            raise TableAlreadyExists(str(identifier)) from None
        except NoSuchBucket:
            raise
        except StoreError as e:
            raise CatalogUnavailable(f"create {identifier}: {e}") from e
        if not info.etag:
            raise CatalogUnavailable(f"{self.pointer_location(identifier)}: S3 acknowledged the pointer without an etag")
        self._remember(identifier, _Seen(pointer, info.etag))
        self._update_index(self._tables_location(identifier.namespace), "tables", identifier.name, add=True)

    def drop(self, identifier: TableIdentifier) -> None:
        where = self.pointer_location(identifier)
        try:
            self.store.stat(where)
            self.store.delete(where)
        except NotFound:
            raise NoSuchTable(str(identifier)) from None
        except NoSuchBucket:
            raise
        except StoreError as e:
            raise CatalogUnavailable(f"drop {identifier}: {e}") from e
        finally:
            self._forget(identifier)
        self._update_index(self._tables_location(identifier.namespace), "tables", identifier.name, add=False)

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]:
        names = self._read_index(self._tables_location(tuple(namespace)), "tables")[0]
        return sorted(TableIdentifier(tuple(namespace), n) for n in names)

    def create_namespace(self, namespace: tuple[str, ...]) -> None:
        require(bool(namespace) and all(namespace), f"not a namespace: {namespace!r}")
        if tuple(namespace) in self.list_namespaces():
            raise NamespaceAlreadyExists(".".join(namespace))
        self._update_index(self._namespaces_location(), "namespaces", list(namespace), add=True)

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        """Remove an empty namespace from the index; NamespaceNotEmpty while it holds tables."""
        namespace = tuple(namespace)
        if namespace not in self.list_namespaces():
            raise NoSuchNamespace(".".join(namespace))
        if self.list_tables(namespace):
            raise NamespaceNotEmpty(f"namespace {'.'.join(namespace)} holds tables: drop them first")
        self._update_index(self._namespaces_location(), "namespaces", list(namespace), add=False)

    def list_namespaces(self) -> list[tuple[str, ...]]:
        return sorted(tuple(ns) for ns in self._read_index(self._namespaces_location(), "namespaces")[0])

    def swap(self, identifier: TableIdentifier, expected_location: str, new_location: str) -> SwapResult:
        require(expected_location != new_location, "a swap must move the pointer")
        seen = self._recall(identifier, expected_location)
        if seen is None:  # never saw `expected`: find its etag (+1 GET, nothing sent yet)
            try:
                seen = self._read_pointer(identifier)
            except NotFound:
                return SwapRejected(expected_location, None, "no such table")
            except (StoreError, CatalogUnavailable) as e:
                return SwapRejected(expected_location, None, f"pointer unreadable, nothing sent: {e}",
                                    unavailable=True)
            if seen.pointer.metadata_location != expected_location:
                return SwapRejected(expected_location, seen.pointer.metadata_location,
                                    "metadata location changed")
        for _ in range(STALE_ETAG_REFRESHES_MAX + 1):
            pointer = Pointer(new_location, expected_location, seen.pointer.entry_uuid)
            try:
                info = self.store.compare_and_swap(self.pointer_location(identifier), pointer.encode(), seen.etag)
            except (PreconditionFailed, NotFound):
                rejected = self._after_refusal(identifier, expected_location, seen)
                if isinstance(rejected, _Seen):
                    seen = rejected  # the remembered etag was stale; `expected` is current
                    continue
                return rejected
            except StoreOutcomeUnknown as e:
                return self._reconcile(identifier, expected_location, new_location, str(e))
            except StoreError as e:  # StoreUnavailable and other definite errors: not applied
                return SwapRejected(expected_location, None, f"not applied: {e}", unavailable=True)
            if info.etag and info.etag != seen.etag:     # else: a store that breaks If-Match's
                self._remember(identifier, _Seen(pointer, info.etag))   # contract; read it again next time
            return Swapped(new_location)
        return SwapRejected(expected_location, expected_location,
                            f"refused {STALE_ETAG_REFRESHES_MAX + 1} times under the current etag")

    # -- swap outcomes ------------------------------------------------------------------

    def _after_refusal(self, identifier: TableIdentifier, expected_location: str,
                       sent: _Seen) -> SwapRejected | _Seen:
        """A definite 412/404: not applied. One GET names the actual location."""
        try:
            current = self._read_pointer(identifier)
        except NotFound:
            return SwapRejected(expected_location, None, "no such table")
        except (StoreError, CatalogUnavailable) as e:
            return SwapRejected(expected_location, None, f"refused (412); pointer unreadable: {e}")
        if current.pointer.metadata_location == expected_location and current.etag != sent.etag:
            return current
        return SwapRejected(expected_location, current.pointer.metadata_location, "metadata location changed")

    def _reconcile(self, identifier: TableIdentifier, expected_location: str, new_location: str,
                   why: str) -> SwapResult:
        """The request may have landed or may still land: one GET of the pointer decides
        what it can (module docstring)."""
        try:
            current = self._read_pointer(identifier).pointer
        except NotFound:
            return SwapUnknown(expected_location, new_location, f"{why}; reconcile: pointer absent")
        except (StoreError, CatalogUnavailable) as e:
            return SwapUnknown(expected_location, new_location, f"{why}; reconcile: pointer unreadable: {e}")
        if current.metadata_location == new_location:
            return Swapped(new_location)  # `new` is ours alone (a fresh name): our request landed
        if current.previous_metadata_location == current.metadata_location:
            return SwapUnknown(expected_location, new_location,
                               f"{why}; reconcile: the pointer names itself as its previous version")
        if current.metadata_location == expected_location:
            return SwapUnknown(expected_location, new_location,
                               f"{why}; reconcile: pointer still at expected, the request may land later")
        if current.previous_metadata_location == expected_location:
            return SwapRejected(expected_location, current.metadata_location,
                                "another swap from the same base landed; ours can never apply")
        if current.previous_metadata_location == new_location:
            return Swapped(new_location)  # ours landed and the next swap was built on it
        return SwapUnknown(expected_location, new_location,
                           f"{why}; reconcile: pointer moved on to {current.metadata_location}; "
                           "ours can no longer land but may have landed")

    # -- index objects ------------------------------------------------------------------

    def _read_index(self, where: str, field: str) -> tuple[list[Any], str | None]:
        """The index's entries and etag; ([], None) when it does not exist yet."""
        try:
            data, info = self.store._get(where)  # the etag of exactly these bytes (see _read_pointer)
        except NotFound:
            return [], None
        except NoSuchBucket:
            raise
        except StoreError as e:
            raise CatalogUnavailable(f"{where}: {e}") from e
        try:
            obj = json.loads(data)
            if obj["format"] != INDEX_FORMAT:
                raise ValueError(f"index format {obj['format']!r}")
            return list(obj[field]), info.etag
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            raise CatalogUnavailable(f"{where}: unreadable index: {e!r}") from None

    def _update_index(self, where: str, field: str, entry: Any, *, add: bool) -> None:
        """Add or remove one entry with read-modify-CAS, bounded. Idempotent, so a write
        of unknown outcome is simply re-read and retried."""
        for _ in range(INDEX_UPDATE_ATTEMPTS_MAX):
            entries, etag = self._read_index(where, field)
            if (entry in entries) == add:
                return
            entries = sorted(entries + [entry]) if add else [e for e in entries if e != entry]
            data = json.dumps({"format": INDEX_FORMAT, field: entries}, sort_keys=True).encode()
            try:
                if etag is None:
                    self.store.put_if_absent(where, data)
                else:
                    self.store.compare_and_swap(where, data, etag)
                return
            except (AlreadyExists, PreconditionFailed, NotFound, StoreOutcomeUnknown, StoreUnavailable):
                continue  # raced with another writer, or unsure: read again
            except NoSuchBucket:
                raise
            except StoreError as e:
                raise CatalogUnavailable(f"{where}: {e}") from e
        raise CatalogUnavailable(f"{where}: index update raced {INDEX_UPDATE_ATTEMPTS_MAX} times")
