"""Injected determinism and object names (spec/PROTOCOL.md 1.4 "Unique names", 1.5
"Identifiers", 6.2 "Backoff with full jitter").

Clock, sleep and randomness are parameters of every writer, so a test replays a run from
a seed. Names carry a UUID drawn from the injected random source; metadata files are
`<location>/metadata/<version:05d>-<uuid>.metadata.json`.
"""
from __future__ import annotations

import base64
import datetime as dt
import random
import re
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from typing import Callable

SNAPSHOT_ID_BITS = 63
METADATA_VERSION_DIGITS = 5
_VERSION_RE = re.compile(r"^(\d+)-")


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def _sleep_ms(ms: int) -> None:
    time.sleep(ms / 1000)


@dataclass
class Env:
    """What a writer takes from the world: a wall clock (timestamps written into
    metadata), a monotonic clock and a sleep (retry timing), and a random source (ids,
    names, jitter). One lock makes the shared random source safe across threads."""
    rng: random.Random = field(default_factory=random.Random)
    wall_ms: Callable[[], int] = _wall_ms
    monotonic_ms: Callable[[], int] = _monotonic_ms
    sleep_ms: Callable[[int], None] = _sleep_ms
    # Opt-in: pause the process's cyclic GC while manifests are decoded and scans planned
    # (files.gc_paused). Off by default: a library does not change the whole process.
    pause_gc_during_reads: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def seeded(cls, seed: int, **kwargs) -> "Env":
        return cls(rng=random.Random(seed), **kwargs)

    def uuid(self) -> str:
        with self._lock:
            bits = self.rng.getrandbits(128)
        return str(uuid.UUID(int=bits, version=4))

    def snapshot_id(self) -> int:
        """A positive 63-bit id (1.5)."""
        with self._lock:
            value = self.rng.getrandbits(SNAPSHOT_ID_BITS)
        return value or 1

    def uniform(self) -> float:
        with self._lock:
            return self.rng.random()


def backoff_wait_ms(env: Env, attempts_made: int, wait_ms_min: int, wait_ms_max: int) -> int:
    """Full jitter (6.2): before attempt k+1, wait in [min, min(max, min * 2^k)]."""
    assert attempts_made >= 1 and 0 <= wait_ms_min <= wait_ms_max
    cap = min(wait_ms_max, wait_ms_min * (2 ** min(attempts_made, 62)))
    wait = wait_ms_min + int(env.uniform() * (cap - wait_ms_min + 1))
    assert wait_ms_min <= wait <= max(cap, wait_ms_min), (wait, cap)
    return wait


# -- names ---------------------------------------------------------------------------------

def metadata_version(location: str) -> int | None:
    """The version number in a metadata file name (`00012-<uuid>.metadata.json`), if any."""
    match = _VERSION_RE.match(location.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else None


def metadata_file_location(table_location: str, version: int, name_uuid: str) -> str:
    return f"{table_location.rstrip('/')}/metadata/{version:0{METADATA_VERSION_DIGITS}d}-{name_uuid}.metadata.json"


def manifest_location(table_location: str, name_uuid: str, n: int) -> str:
    return f"{table_location.rstrip('/')}/metadata/{name_uuid}-m{n}.avro"


def manifest_list_location(table_location: str, snapshot_id: int, attempt: int, name_uuid: str) -> str:
    return f"{table_location.rstrip('/')}/metadata/snap-{snapshot_id}-{attempt}-{name_uuid}.avro"


def data_file_location(table_location: str, partition_path: str, name_uuid: str, suffix: str = "") -> str:
    middle = f"{partition_path}/" if partition_path else ""
    return f"{table_location.rstrip('/')}/data/{middle}{name_uuid}{suffix}.parquet"


def partition_path_of(spec, schema, values: tuple) -> str:
    """`name=value/...` with values written for people, as Iceberg-Java's
    PartitionSpec.partitionToPath and pyiceberg's partition_to_path do (each transform's
    human string: `ts_day=2024-01-02`, `ts_month=2024-01`, `ts_hour=2024-01-02-13`,
    `ts_year=2024`, dates and timestamps of identity fields in ISO-8601), each part
    URL-encoded as theirs are (a space is '+'), so any value makes one path segment."""
    parts = []
    for pf, value in zip(spec.fields, values):
        source = schema.field_by_id(pf.source_id)
        text = human_partition_value(str(pf.transform), None if source is None else source.type, value)
        parts.append(f"{urllib.parse.quote_plus(pf.name, safe='')}={urllib.parse.quote_plus(text, safe='')}")
    return "/".join(parts)


_EPOCH = dt.datetime(1970, 1, 1)


def human_partition_value(transform: str, source_type, value) -> str:
    """Java's Transform.toHumanString of a partition value in icefloe's internal form."""
    if value is None:
        return "null"
    try:
        if transform == "year":
            return f"{1970 + value:04d}"
        if transform == "month":
            year, month = divmod(value, 12)
            return f"{1970 + year:04d}-{month + 1:02d}"
        if transform == "day":
            return (_EPOCH + dt.timedelta(days=value)).date().isoformat()
        if transform == "hour":
            return (_EPOCH + dt.timedelta(hours=value)).strftime("%Y-%m-%d-%H")
        kind = getattr(source_type, "name", "")
        if transform == "identity" and kind == "date":
            return (_EPOCH + dt.timedelta(days=value)).date().isoformat()
        if transform == "identity" and kind in ("timestamp", "timestamptz"):
            text = (_EPOCH + dt.timedelta(microseconds=value)).isoformat()
            return text + ("+00:00" if kind == "timestamptz" else "")
        if transform == "identity" and kind == "time":
            return (_EPOCH + dt.timedelta(microseconds=value)).time().isoformat()
    except (OverflowError, ValueError):
        return str(value)                 # beyond Python's calendar: the number itself
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def partition_path(names: list[str], values: tuple) -> str:
    """`name=value/...`, quoted so that any value makes one path segment."""
    return "/".join(f"{urllib.parse.quote(n, safe='')}={urllib.parse.quote(str(v), safe='')}"
                    for n, v in zip(names, values))
