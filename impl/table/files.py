"""Reading the tree of a snapshot (spec/PROTOCOL.md 1.2 "The table as a tree of immutable
files", 7.2 "Where validations look"): manifest lists, manifests, live files, reach.

Every object is immutable (1.3), so reads are cached by location for the life of one
operation or one scan. Nothing here lists a prefix (2.4).
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Callable

from icefloe.impl.format import integrity
from icefloe.impl.format.manifest import (
    DataFileContent, ManifestContent, ManifestEntry, ManifestEntryStatus, ManifestFile,
)
from icefloe.impl.format.manifest_reader import ManifestReader, Projection, read_manifest_list
from icefloe.impl.format.metadata import Snapshot, TableMetadata
from icefloe.impl.io.base import ObjectStore

LIVE = (ManifestEntryStatus.ADDED, ManifestEntryStatus.EXISTING)

_gc_lock = threading.Lock()
_gc_pausers = 0
_gc_was_enabled = False


@contextmanager
def gc_paused():
    """Pause Python's cyclic garbage collector: used only when the application opts in
    (Env.pause_gc_during_reads), as it affects the whole process. Decoding manifests and
    planning build tens of thousands of small long-lived objects; the full collection
    they trigger traverses every object of the process (about a third of a fresh plan's
    CPU in bench/bench_scan.py's process; docs/benchmarks.md). Nested and concurrent
    uses are counted; the last one out restores the collector, and a collector the
    application had disabled stays disabled. Nothing here creates cycles."""
    global _gc_pausers, _gc_was_enabled
    with _gc_lock:
        if _gc_pausers == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pausers += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausers -= 1
            assert _gc_pausers >= 0, "more resumes than pauses"
            if _gc_pausers == 0 and _gc_was_enabled:
                gc.enable()


class TreeReader:
    """Cached reads of manifest lists and manifests through `io`: one cache of lists and
    one of opened manifests (manifest_reader.ManifestReader), by location. Every first
    read is cross-checked (impl/format/integrity.py): a list against its snapshot's
    summary totals, a manifest against its list entry; a mismatch raises CorruptMetadata."""

    def __init__(self, io: ObjectStore, *, pause_gc: bool = False):
        self.io = io
        self.pause_gc = pause_gc  # the application's opt-in (Env.pause_gc_during_reads)
        self._lists: dict[str, list[ManifestFile]] = {}
        self._manifests: dict[str, ManifestReader] = {}
        self._lock = threading.Lock()

    def manifests(self, snapshot: Snapshot | None) -> list[ManifestFile]:
        if snapshot is None:
            return []
        location = snapshot.manifest_list
        with self._lock:
            cached = self._lists.get(location)
        if cached is None:
            cached = read_manifest_list(self.io.get(location), location)
            integrity.check_manifest_list(cached, snapshot.summary, location, snapshot.snapshot_id)
            with self._lock:
                self._lists[location] = cached
        return cached

    def remember_manifest_list(self, location: str, manifests: list[ManifestFile]) -> None:
        """Cache a manifest list this process wrote: `manifests` as `read_manifest_list`
        would read them back (`manifest.listed_manifests`), so no decoding is needed."""
        with self._lock:
            self._lists[location] = list(manifests)

    def entries(self, manifest: ManifestFile, projection: Projection = Projection.ALL,
                keep: Callable[[ManifestEntry], bool] | None = None) -> list[ManifestEntry]:
        """The manifest's entries in `projection`, only those `keep` keeps (see
        ManifestReader.read_entries): a scan plan with no column predicate needs no column
        statistics, and a plan pruning by partition needs them for the survivors only."""
        reader = self._reader(manifest)
        with self.reading():
            return reader.read_entries(projection, keep)

    def matching_entries(self, manifest: ManifestFile, may_match: Callable[[tuple], bool]) -> list[ManifestEntry]:
        """The manifest's live entries whose partition tuple `may_match` keeps, with every
        field (ManifestReader.read_matching): a filtered plan decodes no other entry."""
        reader = self._reader(manifest)
        with self.reading():
            return reader.read_matching(may_match)

    def _reader(self, manifest: ManifestFile) -> ManifestReader:
        location = manifest.manifest_path
        # v3: one manifest may be listed without a first_row_id (before an upgrade) and with
        # one (after), or with different ones on two branches; its files inherit from the
        # listing they are read through, so a reader is kept per (manifest, first_row_id).
        key = location if manifest.first_row_id is None else (location, manifest.first_row_id)
        with self._lock:
            reader = self._manifests.get(key)
        if reader is None:
            reader = ManifestReader(self.io.get(location), manifest, location)
            with self._lock:
                reader = self._manifests.setdefault(key, reader)
        return reader

    def reading(self):
        """A context for a read that builds many objects: the GC is paused only if the
        application opted in."""
        return gc_paused() if self.pause_gc else nullcontext()

    def live_entries(self, snapshot: Snapshot | None, content: ManifestContent | None = None
                     ) -> list[tuple[ManifestFile, ManifestEntry]]:
        """(manifest, entry) for every live file of the snapshot (of one content kind)."""
        out = []
        for m in self.manifests(snapshot):
            if content is not None and m.content != content:
                continue
            out.extend((m, e) for e in self.entries(m) if e.status in LIVE)
        return out

    def live_data_paths(self, snapshot: Snapshot | None) -> set[str]:
        return {e.data_file.file_path for _, e in self.live_entries(snapshot, ManifestContent.DATA)}

    def changes(self, snapshot: Snapshot) -> "Changes":
        """What `snapshot` itself added and removed: entries of the manifests it wrote
        whose snapshot id is its own (Iceberg's per-snapshot change set)."""
        added_data, removed_data, added_deletes = [], [], []
        for m in self.manifests(snapshot):
            if m.added_snapshot_id != snapshot.snapshot_id:
                continue
            for e in self.entries(m):
                if e.snapshot_id != snapshot.snapshot_id:
                    continue
                f = e.data_file
                if e.status == ManifestEntryStatus.ADDED:
                    (added_data if f.content == DataFileContent.DATA else added_deletes).append(e)
                elif e.status == ManifestEntryStatus.DELETED and f.content == DataFileContent.DATA:
                    removed_data.append(e)
        return Changes(tuple(added_data), tuple(removed_data), tuple(added_deletes))

    def reach(self, snapshot: Snapshot) -> set[str]:
        """Every object a reader of `snapshot` may open: its manifest list, its manifests
        and every file they list as live."""
        out = {snapshot.manifest_list}
        for m in self.manifests(snapshot):
            out.add(m.manifest_path)
            out.update(e.data_file.file_path for e in self.entries(m) if e.status in LIVE)
        return out


@dataclass(frozen=True)
class Changes:
    added_data: tuple[ManifestEntry, ...]
    removed_data: tuple[ManifestEntry, ...]
    added_deletes: tuple[ManifestEntry, ...]


def snapshots_between(metadata: TableMetadata, ref: str, start_id: int | None) -> list[Snapshot] | None:
    """The snapshots on the ancestry of `ref`'s head in `metadata`, newest first, back to
    but excluding `start_id`; None when `start_id` is not on that ancestry (rolled back
    past or expired). A missing ref has no ancestry."""
    head = metadata.refs.get(ref)
    line = list(metadata.ancestors_of(head.snapshot_id)) if head is not None else []
    if start_id is None:
        return line
    ids = [s.snapshot_id for s in line]
    if start_id not in ids:
        return None
    return line[: ids.index(start_id)]
