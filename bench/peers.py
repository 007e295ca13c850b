"""Shared set-up for the table benchmarks: one local warehouse and one SQLite catalog file
that icefloe and its peer, pyiceberg 0.12 (SqlCatalog "icefloe" on the same file), both
use, each with its storage requests counted.

How requests are counted:
- icefloe: its own instrumented LocalStore (`counts` by verb); `MeteredLocalStore` adds
  the bytes of every write.
- pyiceberg: `CountingFileIO`, a PyArrowFileIO subclass loaded through the catalog
  property `py-io-impl`, whose files count every `open` (a GET), `create` (a PUT, with the
  bytes written through it), `exists`/`len` (a HEAD: pyiceberg stats a file before
  creating it and after writing it) and `delete`. pyiceberg opens data files for a scan
  straight through pyarrow, not through FileIO, so only planning and writes are counted;
  the benchmarks count nothing else for either side. Catalog (SQL) calls are not storage
  requests and are not counted for either.
"""
from __future__ import annotations

import os
import statistics
import tempfile
import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pyiceberg.catalog.sql import SqlCatalog as PeerSqlCatalog
from pyiceberg.io.pyarrow import PyArrowFile, PyArrowFileIO

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.io.local import LocalStore

PEER = "pyiceberg 0.12.0"


# -- icefloe ---------------------------------------------------------------------------

class MeteredLocalStore(LocalStore):
    """icefloe's LocalStore, with the bytes and locations of its writes recorded too."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.bytes_written = 0
        self.written: list[tuple[str, int]] = []
        self._meter_lock = threading.Lock()

    def put_if_absent(self, location, data):
        info = super().put_if_absent(location, data)
        with self._meter_lock:
            self.bytes_written += len(data)
            self.written.append((location, len(data)))
        return info

    def compare_and_swap(self, location, data, expected_etag):
        info = super().compare_and_swap(location, data, expected_etag)
        with self._meter_lock:
            self.bytes_written += len(data)
            self.written.append((location, len(data)))
        return info

    def snapshot(self) -> tuple[Counter, int]:
        return Counter(self.counts), self.bytes_written


# -- pyiceberg ---------------------------------------------------------------------------

@dataclass
class Meter:
    """What every CountingFileIO of one process counted (pyiceberg makes a FileIO per
    table load, so the counter is shared)."""
    counts: Counter = field(default_factory=Counter)
    bytes_written: int = 0
    written: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, location: str | None = None, nbytes: int = 0) -> None:
        with self.lock:
            self.counts[kind] += 1
            if nbytes:
                self.bytes_written += nbytes
            if kind == "put" and location is not None:
                self.written.append(location)

    def reset(self) -> None:
        with self.lock:
            self.counts.clear()
            self.bytes_written = 0
            self.written.clear()

    def snapshot(self) -> tuple[Counter, int]:
        with self.lock:
            return Counter(self.counts), self.bytes_written


METER = Meter()


class _CountingStream:
    """An output stream that counts the bytes written through it."""

    def __init__(self, inner, location: str):
        self._inner, self._location, self._bytes = inner, location, 0

    def write(self, data) -> int:
        self._bytes += len(memoryview(data).cast("B"))
        return self._inner.write(data)

    def close(self) -> None:
        if not self._inner.closed:
            self._inner.close()
            METER.add("put", self._location, self._bytes)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getattr__(self, name):
        return getattr(self._inner, name)


class CountingFile(PyArrowFile):
    def __len__(self) -> int:
        METER.add("head")
        return super().__len__()

    def exists(self) -> bool:
        METER.add("head")
        return super().exists()

    def open(self, seekable: bool = True):
        METER.add("get")
        return super().open(seekable)

    def create(self, overwrite: bool = False):
        if not overwrite and self.exists():  # counted as a HEAD, as pyiceberg's own check
            raise FileExistsError(f"Cannot create file, already exists: {self.location}")
        return _CountingStream(super().create(overwrite=True), self.location)

    def to_input_file(self) -> "CountingFile":
        return self


class CountingFileIO(PyArrowFileIO):
    """pyiceberg's PyArrowFileIO with every request counted in METER."""

    def new_input(self, location: str) -> CountingFile:
        return self._counting(location)

    def new_output(self, location: str) -> CountingFile:
        return self._counting(location)

    def delete(self, location) -> None:
        METER.add("delete")
        super().delete(location)

    def _counting(self, location: str) -> CountingFile:
        scheme, netloc, path = self.parse_location(location, self.properties)
        return CountingFile(location=location, path=path, fs=self.fs_by_scheme(scheme, netloc))


class CountingPeerSqlCatalog(PeerSqlCatalog):
    """pyiceberg's SqlCatalog with its commit_table calls counted (one per attempt), and an
    optional hook run once right after the next metadata JSON is written, before the SQL
    swap (to land a rival commit exactly where icefloe's is landed: between the two)."""
    calls = 0
    failed = 0
    before_next_swap = None
    _lock = threading.Lock()

    def commit_table(self, table, requirements, updates):
        cls = CountingPeerSqlCatalog
        with cls._lock:
            cls.calls += 1
        try:
            return super().commit_table(table, requirements, updates)
        except Exception:
            with cls._lock:
                cls.failed += 1
            raise

    def _write_metadata(self, metadata, io, metadata_path):
        super()._write_metadata(metadata, io, metadata_path)
        cls = CountingPeerSqlCatalog
        with cls._lock:
            hook, cls.before_next_swap = cls.before_next_swap, None
        if hook is not None:
            hook()

    @classmethod
    def reset(cls) -> None:
        with cls._lock:
            cls.calls = cls.failed = 0
            cls.before_next_swap = None


# -- the shared warehouse ------------------------------------------------------------------

class Warehouse:
    """A temporary directory with `warehouse/` and `catalog.db`, and both catalogs on it."""

    def __init__(self, prefix: str = "icefloe-bench-"):
        self._tmp = tempfile.TemporaryDirectory(prefix=prefix)
        self.root = Path(self._tmp.name)
        self.uri = f"sqlite:///{self.root / 'catalog.db'}"
        self.store = MeteredLocalStore()
        self.catalog = SqlCatalog(self.uri)

    def location(self, name: str) -> str:
        return (self.root / "warehouse" / "db" / name).as_uri()

    def peer_catalog(self, **properties) -> PeerSqlCatalog:
        return CountingPeerSqlCatalog("icefloe", uri=self.uri, warehouse=(self.root / "warehouse").as_uri(),
                              **{"py-io-impl": f"{__name__}.CountingFileIO", **properties})

    def table_files(self, name: str) -> set[str]:
        base = self.root / "warehouse" / "db" / name
        return {str(p) for p in base.rglob("*") if p.is_file() and not p.name.startswith(".")}

    def left_behind(self, name: str) -> dict[str, int]:
        """Files under the table's directory that no retained snapshot reaches and that are
        not a metadata JSON of the current chain, by kind (read with icefloe's reader,
        which reads either side's tables)."""
        from icefloe.impl.io.local import LocalStore
        from icefloe.impl.table.table import Table
        table = Table(self.catalog, f"db.{name}", LocalStore())
        m = table.metadata
        live = {local_path(table.metadata_location)}
        live.update(local_path(e.metadata_file) for e in m.metadata_log)
        for snap in m.snapshots:
            live.update(local_path(x) for x in table.tree.reach(snap))
        out: Counter = Counter()
        for path in self.table_files(name) - live:
            out[_kind(path)] += 1
        return dict(out)

    def close(self) -> None:
        self.catalog.close()
        self._tmp.cleanup()


@contextmanager
def warehouse():
    w = Warehouse()
    try:
        yield w
    finally:
        w.close()


def _kind(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if name.endswith(".metadata.json"):
        return "metadata JSON"
    if name.endswith(".parquet"):
        return "data file"
    if name.startswith("snap-"):
        return "manifest list"
    if name.endswith(".avro"):
        return "manifest"
    return "other"


def kind_of(location: str) -> str:
    return _kind(location)


# -- reporting helpers -----------------------------------------------------------------------

def mean(values) -> float:
    values = list(values)
    return statistics.fmean(values) if values else float("nan")


def ratio(a: float, b: float) -> str:
    return "n/a" if not b else f"{a / b:.2f}x"


def local_path(uri_or_path: str) -> str:
    return uri_or_path.removeprefix("file://").removeprefix("file:") if uri_or_path.startswith("file:") \
        else uri_or_path


def request_text(counts: Counter, n: int = 1) -> str:
    """`3.0 get + 4.0 put` per operation."""
    kinds = [k for k in ("get", "head", "stat", "put", "put_if_absent", "compare_and_swap", "delete", "list")
             if counts.get(k)]
    return " + ".join(f"{counts[k] / n:.1f} {k}" for k in kinds) or "0"


def cpu_note() -> str:
    return f"{os.cpu_count()} cores shared with other work"
