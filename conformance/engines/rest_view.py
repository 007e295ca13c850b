"""What a black-box adapter reads of the REST catalog its engine commits through: the
adapter's bookkeeping, never the engine's own reads (those stay the engine's: `read_at`).
The table as the server holds it (load-table), its snapshot ids, the current snapshot, the
history walked back through the metadata log (adapter.history_from_metadata_log), and the
outcome of a commit told from the snapshots before and after it. DuckDB, Sail and
ClickHouse share it; each adapter supplies `read_at` and, where its reads cannot name the
files they touched, `files_of`."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

from icefloe.conformance import adapter as A
from icefloe.conformance.engines.metadata_json import read_metadata

REST_TIMEOUT_S = 30


class RestCatalogView:
    """Mixed into a TableHandle that has `ctx` (its catalog_uri, writer 0's token),
    `namespace`, `name` and `read_at(snapshot_id)`."""

    NO_FILES: frozenset | None = frozenset()   # read_current's files before the first snapshot

    def _request(self, path: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.ctx.catalog_uri.rstrip('/')}/v1/{path}", data=data, headers={
            "Authorization": f"Bearer {self.ctx.access_key(0)}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=REST_TIMEOUT_S) as answer:
            return json.load(answer)

    def _ensure_namespace(self) -> None:
        try:
            self._request("namespaces", {"namespace": [self.namespace]})
        except urllib.error.HTTPError as e:
            if e.code != 409:                      # 409: it exists already
                raise

    def _load(self) -> dict:
        """The catalog's load-table answer (its metadata location and metadata)."""
        return self._request(f"namespaces/{self.namespace}/tables/{self.name}")

    def catalog_snapshot_ids(self) -> list:
        """The table's snapshots as the catalog lists them, oldest first."""
        return [s["snapshot-id"] for s in self._load()["metadata"].get("snapshots", [])]

    def current_snapshot_id(self) -> int | None:
        sid = self._load()["metadata"].get("current-snapshot-id")
        return None if sid == -1 else sid

    def read_current(self) -> A.ReadResult:
        sid = self.current_snapshot_id()
        if sid is None:
            return A.ReadResult(None, (), self.NO_FILES)
        return self.read_at(sid)

    def files_of(self, snapshot, loaded: dict) -> frozenset | None:
        """The data files live in `snapshot` (a read_metadata snapshot; `loaded` the catalog's
        answer the history walks from): by default what the engine's read of it touched."""
        return self.read_at(snapshot.snapshot_id).files

    def history(self) -> A.TableHistory:
        loaded = self._load()
        location = loaded["metadata-location"]

        def record(s):
            return A.SnapshotRecord(s.snapshot_id, s.parent_snapshot_id, s.summary.get("operation", ""),
                                    self.files_of(s, loaded))
        return A.history_from_metadata_log(location, read_metadata(location), read_metadata, record)


def committed_since(before, after: list) -> A.Committed:
    """A statement that returned: the newest snapshot among `after` (oldest first) that was not
    in `before`, in one attempt; none: nothing to commit (no snapshot, no attempt)."""
    new = [sid for sid in after if sid not in before]
    return A.Committed(new[-1], 1) if new else A.Committed(None, 0)
