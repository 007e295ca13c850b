"""Route a location to the store of its scheme (spec/PROTOCOL.md, "Storage").

Table metadata holds absolute locations (`file:///w/t/metadata/...`, `s3://b/t/...`), so a
reader needs one object that accepts any of them, like Iceberg's FileIO. Schemes are
registered openly through `register_scheme(scheme, factory)`: `file`, `memory`, and
`s3`/`s3a` here (an `S3Store` configured from the router's properties or the environment,
`S3Store.from_properties`; one store serves both spellings). A router builds at most one store per scheme,
lazily, so its `counts` are the sum over the stores it used.
"""
from __future__ import annotations

import threading
from collections import Counter
from typing import Callable, Iterator, Mapping

from icefloe.impl.io.base import ObjectInfo, ObjectStore
from icefloe.impl.io.local import LocalStore
from icefloe.impl.io.locations import InvalidLocation, scheme_of
from icefloe.impl.io.memory import MemoryStore

StoreFactory = Callable[[Mapping[str, str]], ObjectStore]

_factories: dict[str, StoreFactory] = {}
_factories_lock = threading.Lock()


class UnknownScheme(InvalidLocation):
    pass


def register_scheme(scheme: str, factory: StoreFactory, *, replace: bool = False) -> None:
    """Make routers build stores for `scheme` with `factory(properties)`."""
    scheme = scheme.lower()
    with _factories_lock:
        if scheme in _factories and not replace and _factories[scheme] is not factory:
            raise ValueError(f"scheme {scheme!r} is already registered")
        _factories[scheme] = factory


def unregister_scheme(scheme: str) -> None:
    with _factories_lock:
        _factories.pop(scheme.lower(), None)


def _registered_items() -> list[tuple[str, StoreFactory]]:
    with _factories_lock:
        return list(_factories.items())


def registered_schemes() -> frozenset[str]:
    with _factories_lock:
        return frozenset(_factories)


register_scheme("file", lambda properties: LocalStore())
register_scheme("memory", lambda properties: MemoryStore())


def _s3_store(properties: Mapping[str, str]) -> ObjectStore:
    from icefloe.impl.s3.store import S3Store  # boto3 loads only when an s3 location is used
    return S3Store.from_properties(properties)


register_scheme("s3", _s3_store)
register_scheme("s3a", _s3_store)


class StoreRouter:
    """An ObjectStore that delegates each call to the store for the location's scheme.

    `stores` pins a given store to a scheme (a test's MemoryStore, a fault-injecting
    wrapper); other schemes are built from the registry with `properties`.
    """

    def __init__(self, properties: Mapping[str, str] | None = None,
                 stores: Mapping[str, ObjectStore] | None = None):
        self.properties = dict(properties or {})
        self._stores: dict[str, ObjectStore] = {k.lower(): v for k, v in (stores or {}).items()}
        self._lock = threading.Lock()

    def store_for(self, location: str) -> ObjectStore:
        scheme = scheme_of(location)
        with self._lock:
            store = self._stores.get(scheme)
            if store is None:
                with _factories_lock:
                    factory = _factories.get(scheme)
                if factory is None:
                    raise UnknownScheme(f"no store registered for scheme {scheme!r} ({location!r})")
                # A factory registered for several schemes (s3, s3a) builds one store for all.
                store = next((self._stores[other] for other, f in _registered_items()
                              if f is factory and other in self._stores), None)
                if store is None:
                    store = factory(self.properties)
                self._stores[scheme] = store
            return store

    @property
    def counts(self) -> Counter:
        """Requests by kind, summed over the distinct stores this router has used."""
        with self._lock:
            distinct = {id(s): s for s in self._stores.values()}
        total: Counter = Counter()
        for store in distinct.values():
            total.update(store.counts)
        return total

    def get(self, location: str) -> bytes:
        return self.store_for(location).get(location)

    def stat(self, location: str) -> ObjectInfo:
        return self.store_for(location).stat(location)

    def put_if_absent(self, location: str, data: bytes) -> ObjectInfo:
        return self.store_for(location).put_if_absent(location, data)

    def compare_and_swap(self, location: str, data: bytes, expected_etag: str) -> ObjectInfo:
        return self.store_for(location).compare_and_swap(location, data, expected_etag)

    def delete(self, location: str) -> None:
        self.store_for(location).delete(location)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        return self.store_for(prefix).list(prefix)

    def resolve(self, location: str) -> str:
        """The store's view of `location` with links resolved (stores without links:
        unchanged); see LocalStore.resolve."""
        resolve = getattr(self.store_for(location), "resolve", None)
        return location if resolve is None else resolve(location)

    def stale_temporaries(self, prefix: str, older_than_ms: int) -> list[str]:
        stale = getattr(self.store_for(prefix), "stale_temporaries", None)
        return [] if stale is None else stale(prefix, older_than_ms)
