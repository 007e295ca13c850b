"""The object-store interface (spec/PROTOCOL.md, "Storage"): a handful of verbs.

get, put_if_absent, compare_and_swap, delete; list exists only for orphan removal
and must never be called on a read or commit path. Every store counts its calls
by kind (`counts`) so tests and benchmarks can count storage requests.

Verb semantics shared by every store (S3's conditional writes are the reference):
- put_if_absent creates the object only if no object exists at the location;
- compare_and_swap replaces an existing object only if its etag is `expected_etag`
  (NotFound if there is no object, PreconditionFailed if the etag differs);
- delete is idempotent: deleting a missing object is not an error (S3 cannot tell
  the two apart either, so no caller may depend on the difference);
- an etag is an opaque string that changes whenever the content changes.

Errors are typed and say whether the request could have had an effect:
- NotFound, AlreadyExists, PreconditionFailed: definite answers from the store;
- StoreUnavailable: definitely not applied (rejected before any effect);
- StoreOutcomeUnknown: may or may not have been applied.
"""
from __future__ import annotations

import hashlib
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Iterator, Protocol

from icefloe.impl.outcomes import IcefloeError


@dataclass(frozen=True)
class ObjectInfo:
    location: str
    size: int
    etag: str
    last_modified_ms: int


class StoreError(IcefloeError):
    def __init__(self, location: str, message: str):
        super().__init__(f"{location}: {message}")
        self.location = location


class NotFound(StoreError):
    pass


class AlreadyExists(StoreError):
    pass


class PreconditionFailed(StoreError):
    pass


class StoreUnavailable(StoreError):
    """Definitely not applied."""


class StoreOutcomeUnknown(StoreError):
    """May or may not have been applied."""


class ObjectStore(Protocol):
    counts: Counter

    def get(self, location: str) -> bytes: ...
    def stat(self, location: str) -> ObjectInfo: ...
    def put_if_absent(self, location: str, data: bytes) -> ObjectInfo: ...
    def compare_and_swap(self, location: str, data: bytes, expected_etag: str) -> ObjectInfo: ...
    def delete(self, location: str) -> None: ...
    def list(self, prefix: str) -> Iterator[ObjectInfo]: ...


# Request kinds as counted in `counts` and matched by fault rules.
READ_KINDS = frozenset({"get", "stat", "list"})
WRITE_KINDS = frozenset({"put_if_absent", "compare_and_swap", "delete"})
ALL_KINDS = READ_KINDS | WRITE_KINDS


def content_etag(data: bytes) -> str:
    """The etag of a content: a hash, so equal content has equal etags (as S3's MD5 etag)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class CountingMixin:
    """Thread-safe per-kind request counter shared by every store."""

    def _init_counts(self) -> None:
        self.counts: Counter = Counter()
        self._counts_lock = threading.Lock()

    def _count(self, kind: str) -> None:
        with self._counts_lock:
            self.counts[kind] += 1
