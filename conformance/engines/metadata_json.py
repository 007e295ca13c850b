"""A table metadata file read as the spec writes it (spec: "Table Metadata"), for adapters
of engines whose own API does not hand back the metadata chain (Iceberg-Java through Spark,
DuckDB): just the fields `adapter.history_from_metadata_log` walks. Local files only: the
engines that need it here write their tables on this machine's disk."""
from __future__ import annotations

import json
from urllib.parse import urlparse

from icefloe.conformance import adapter as A


class UnsupportedLocation(A.EngineSpecError):
    """A location these adapters cannot reach (they have no S3 client)."""


class _Fields:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def local_path(location: str) -> str:
    """A warehouse or file location on this machine's disk."""
    parsed = urlparse(location)
    if parsed.scheme not in ("", "file"):
        raise UnsupportedLocation(f"a local file location is needed (no S3 client in this engine), not {location!r}")
    return parsed.path if parsed.scheme else location


def read_metadata(location: str):
    """current_snapshot_id, snapshots (snapshot_id, parent_snapshot_id, summary) and
    metadata_log (metadata_file) of one metadata file."""
    with open(local_path(location), encoding="utf-8") as f:
        raw = json.load(f)
    snapshots = [_Fields(snapshot_id=s["snapshot-id"], parent_snapshot_id=s.get("parent-snapshot-id"),
                         summary=s.get("summary", {})) for s in raw.get("snapshots", [])]
    current = raw.get("current-snapshot-id")
    return _Fields(current_snapshot_id=None if current in (None, -1) else current, snapshots=snapshots,
                   metadata_log=[_Fields(metadata_file=e["metadata-file"]) for e in raw.get("metadata-log", [])])
