"""An in-memory object store (spec/PROTOCOL.md, "Storage"; the model's
`Write*` actions are put_if_absent calls).

One lock guards the whole map, so every verb is atomic and linearizable; last_modified
comes from an injected clock so a test or simulation replays exactly. Locations are
opaque keys here (no normalisation): the router sends `memory:` locations.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Iterator

from icefloe.impl.io.base import (
    AlreadyExists,
    CountingMixin,
    NotFound,
    ObjectInfo,
    PreconditionFailed,
    content_etag,
)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class MemoryStore(CountingMixin):
    def __init__(self, now_ms: Callable[[], int] = wall_clock_ms):
        self._init_counts()
        self._now_ms = now_ms
        self._lock = threading.Lock()
        self._objects: dict[str, tuple[bytes, ObjectInfo]] = {}

    def get(self, location: str) -> bytes:
        self._count("get")
        with self._lock:
            entry = self._objects.get(location)
        if entry is None:
            raise NotFound(location, "no such object")
        return entry[0]

    def stat(self, location: str) -> ObjectInfo:
        self._count("stat")
        with self._lock:
            entry = self._objects.get(location)
        if entry is None:
            raise NotFound(location, "no such object")
        return entry[1]

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """For orphan cleanup only. A snapshot taken under the lock, sorted by location."""
        self._count("list")
        with self._lock:
            infos = [info for loc, (_, info) in self._objects.items() if loc.startswith(prefix)]
        return iter(sorted(infos, key=lambda info: info.location))

    def put_if_absent(self, location: str, data: bytes) -> ObjectInfo:
        self._count("put_if_absent")
        data = bytes(data)
        with self._lock:
            if location in self._objects:
                raise AlreadyExists(location, "object exists")
            info = ObjectInfo(location, len(data), content_etag(data), self._now_ms())
            self._objects[location] = (data, info)
        return info

    def compare_and_swap(self, location: str, data: bytes, expected_etag: str) -> ObjectInfo:
        self._count("compare_and_swap")
        data = bytes(data)
        with self._lock:
            entry = self._objects.get(location)
            if entry is None:
                raise NotFound(location, "no such object")
            if entry[1].etag != expected_etag:
                raise PreconditionFailed(location, f"etag is {entry[1].etag}, expected {expected_etag}")
            info = ObjectInfo(location, len(data), content_etag(data), self._now_ms())
            self._objects[location] = (data, info)
        return info

    def delete(self, location: str) -> None:
        self._count("delete")
        with self._lock:
            self._objects.pop(location, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)
