"""A Hudi-style timeline writer on an icefloe object store (negative control `hudi-timeline`;
model: `icefloe.model.hudi`, TLA+ `tla/HudiTimeline.tla`, docs/variants.md "Hudi";
REGRESSIONS.md rows 11 and 12).

Not Iceberg: there is no pointer. The table is a timeline of instants under `.hoodie/`,
each named by the writer's millisecond clock (`<instant>.inflight`, then `<instant>.commit`
when it completes), and data files tied to their commit by name only:
`data/<file group>_<write token>_<instant>.parquet`. A reader LISTs the data files, keeps
those whose instant has a `.commit`, and per file group reads the latest slice
(copy-on-write: a slice holds the whole group). What this reproduces:

- instant collision: two writers read the same millisecond; when one completes, the
  other's files carry a completed instant and are live before that writer finishes
  (or even though it never does);
- keys: an insert looks the key up in the index (the visible files) when it begins and
  writes a new file group when the key is absent; optimistic concurrency control checks
  file groups only, so two concurrent inserts of one new key both commit (hudi #9831);
- out-of-order completion: an incremental consumer takes the instants completed above
  its watermark, then moves the watermark to the largest completed instant; an instant
  that began earlier and completes later lies below it and is never read.

Steps of a write, as the suite's stepping writers see them: `plan` (draw the instant,
write `.inflight`, look keys up), `data` (write one slice per file group), then `swap`
(the completion: the concurrency check, then `.commit`); `manifests`, `list` and
`metadata` are empty steps, since a timeline has none of those files.
"""
from __future__ import annotations

import io as _io
import json
import re
from dataclasses import dataclass
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.impl.io.base import StoreError
from icefloe.conformance.engines.flawed_commit import blind_put

INSTANT_DIGITS = 13
ROW_SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False)])
_FILE_RE = re.compile(r"/data/([^/_]+)_([^/_]+)_(\d+)\.parquet$")
_INSTANT_RE = re.compile(r"/\.hoodie/(\d+)\.(inflight|commit)$")
CC_NONE, CC_OPTIMISTIC = "none", "optimistic"
PLAN, DATA, MANIFESTS, LIST, METADATA, SWAP, DONE = (
    "plan", "data", "manifests", "list", "metadata", "swap", "done")


@dataclass(frozen=True)
class DataFileName:
    group: str
    token: str
    instant: int
    location: str


def parse_data_file(location: str) -> DataFileName | None:
    m = _FILE_RE.search(location)
    return None if m is None else DataFileName(m.group(1), m.group(2), int(m.group(3)), location)


@dataclass(frozen=True)
class HudiOutcome:
    status: str          # "committed" | "conflict"
    instant: int
    reason: str = ""


class HudiTable:
    def __init__(self, io, location: str, *, cc: str = CC_OPTIMISTIC):
        assert cc in (CC_NONE, CC_OPTIMISTIC), cc
        self.io, self.location, self.cc = io, location.rstrip("/"), cc

    # -- the timeline ----------------------------------------------------------------------

    def instant_location(self, instant: int, state: str) -> str:
        return f"{self.location}/.hoodie/{instant:0{INSTANT_DIGITS}d}.{state}"

    def completed(self) -> dict[int, dict]:
        """instant -> its commit metadata, for every completed instant."""
        out = {}
        for info in self.io.list(f"{self.location}/.hoodie/"):
            m = _INSTANT_RE.search(info.location)
            if m and m.group(2) == "commit":
                out[int(m.group(1))] = json.loads(self.io.get(info.location))
        return out

    # -- reading -----------------------------------------------------------------------------

    def data_files(self) -> list[DataFileName]:
        return [f for f in (parse_data_file(i.location) for i in self.io.list(f"{self.location}/data/")) if f]

    def visible_files(self) -> list[DataFileName]:
        """Per file group, every file of its latest completed instant (the snapshot view)."""
        done = set(self.completed())
        latest: dict[str, int] = {}
        files = [f for f in self.data_files() if f.instant in done]
        for f in files:
            latest[f.group] = max(latest.get(f.group, -1), f.instant)
        return sorted((f for f in files if f.instant == latest[f.group]), key=lambda f: f.location)

    def read_file(self, location: str) -> list[str]:
        return pq.read_table(_io.BytesIO(self.io.get(location))).column("id").to_pylist()

    def read(self) -> list[str]:
        return sorted(r for f in self.visible_files() for r in self.read_file(f.location))

    def groups_of_keys(self) -> dict[str, str]:
        """The index: key -> file group, from the visible files."""
        return {k: f.group for f in self.visible_files() for k in self.read_file(f.location)}

    def new_write(self, writer: int, rows, clock_ms: Callable[[], int], new_id: Callable[[], str]) -> "HudiWrite":
        return HudiWrite(self, writer, tuple(rows), clock_ms, new_id)


class HudiWrite:
    """One upsert of `rows` (keys) by one writer, stepped phase by phase."""

    def __init__(self, table: HudiTable, writer: int, rows: tuple, clock_ms, new_id):
        self.table, self.writer, self.rows = table, writer, rows
        self.clock_ms, self.new_id = clock_ms, new_id
        self.phase = PLAN
        self.instant: int | None = None
        self.token = f"w{writer}{new_id()[:8]}"
        self.slices: dict[str, list[str]] = {}   # file group -> rows of its new slice
        self.seen_completed: set[int] = set()
        self.written: list[str] = []
        self.outcome: HudiOutcome | None = None

    @property
    def done(self) -> bool:
        return self.phase == DONE

    def step(self) -> str:
        assert not self.done
        if self.phase == PLAN:
            self._begin()
            self.phase = DATA
        elif self.phase == DATA:
            for group, rows in sorted(self.slices.items()):
                self._write_slice(group, rows)
            self.phase = MANIFESTS
        elif self.phase in (MANIFESTS, LIST, METADATA):
            self.phase = {MANIFESTS: LIST, LIST: METADATA, METADATA: SWAP}[self.phase]
        elif self.phase == SWAP:
            self._complete()
            self.phase = DONE
        return self.phase

    def run(self) -> HudiOutcome:
        for _ in range(8):
            if self.done:
                break
            self.step()
        assert self.done
        return self.outcome

    def _begin(self) -> None:
        t = self.table
        self.instant = self.clock_ms()
        self.seen_completed = set(t.completed())
        blind_put(t.io, t.instant_location(self.instant, "inflight"), b"{}")
        index = t.groups_of_keys()
        current = {f.group: t.read_file(f.location) for f in t.visible_files()}
        for key in self.rows:
            group = index.get(key)
            if group is None:
                group = self.new_id()[:8]          # a new file group for a new key
                self.slices.setdefault(group, [])
            else:
                self.slices.setdefault(group, list(current[group]))
            if key not in self.slices[group]:
                self.slices[group].append(key)

    def _write_slice(self, group: str, rows: list[str]) -> None:
        location = f"{self.table.location}/data/{group}_{self.token}_{self.instant:0{INSTANT_DIGITS}d}.parquet"
        out = _io.BytesIO()
        pq.write_table(pa.Table.from_pylist([{"id": r} for r in sorted(rows)], schema=ROW_SCHEMA), out)
        self.table.io.put_if_absent(location, out.getvalue())
        self.written.append(location)

    def _complete(self) -> None:
        t = self.table
        if t.cc == CC_OPTIMISTIC:
            for instant, meta in sorted(t.completed().items()):
                if instant not in self.seen_completed and set(meta["groups"]) & set(self.slices):
                    self._rollback(f"instant {instant} completed since we began and wrote one of our file groups")
                    return
        meta = {"groups": sorted(self.slices), "files": self.written, "writer": self.writer}
        blind_put(t.io, t.instant_location(self.instant, "commit"), json.dumps(meta).encode())
        self.outcome = HudiOutcome("committed", self.instant)

    def _rollback(self, reason: str) -> None:
        """Hudi's rollback deletes the data files named with the instant, whoever wrote them."""
        for f in self.table.data_files():
            if f.instant == self.instant:
                try:
                    self.table.io.delete(f.location)
                except StoreError:
                    pass
        self.outcome = HudiOutcome("conflict", self.instant, reason)


class IncrementalConsumer:
    """Hudi's incremental query: instants completed above the watermark, then the watermark
    moves to the largest completed instant."""

    def __init__(self, table: HudiTable):
        self.table, self.watermark = table, -1
        self.consumed: list[str] = []

    def poll(self) -> list[str]:
        done = self.table.completed()
        new = []
        for instant in sorted(i for i in done if i > self.watermark):
            for location in done[instant]["files"]:
                new.extend(self.table.read_file(location))
        if done:
            self.watermark = max(self.watermark, max(done))
        self.consumed.extend(new)
        return sorted(new)
