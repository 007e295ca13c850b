"""Shared helpers of the rest suite: a table created through the REST API, and commits
that add a snapshot on main (the server never reads the manifest list a snapshot names,
so the probes need no data files)."""
from __future__ import annotations

import os

SCHEMA = {"type": "struct", "schema-id": 0,
          "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def make_table(client, namespace="db", name="t"):
    assert client.create_namespace(namespace).status in (200, 409)
    answer = client.create_table(namespace, name, SCHEMA)
    assert answer.status == 200, answer
    return answer.body


def head(client, namespace="db", name="t"):
    metadata = client.load(namespace, name).body["metadata"]
    return metadata.get("refs", {}).get("main", {}).get("snapshot-id"), metadata


def append(client, snapshot_id, namespace="db", name="t", key=None, expect_parent="current"):
    """Add snapshot `snapshot_id` on main's head (as read now), asserting that head."""
    parent, metadata = head(client, namespace, name)
    if expect_parent != "current":
        parent = expect_parent
    seq = metadata["last-sequence-number"] + 1
    location = metadata["location"]
    snapshot = {"snapshot-id": snapshot_id, "sequence-number": seq, "timestamp-ms": 1_700_000_000_000 + seq,
                "manifest-list": f"{location}/metadata/snap-{snapshot_id}-1-probe.avro",
                "summary": {"operation": "append"}, "schema-id": 0}
    if parent is not None:
        snapshot["parent-snapshot-id"] = parent
    requirements = [{"type": "assert-table-uuid", "uuid": metadata["table-uuid"]},
                    {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}]
    updates = [{"action": "add-snapshot", "snapshot": snapshot},
               {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}]
    return client.commit(namespace, name, requirements, updates, key=key)


def main_ancestry(client, namespace="db", name="t") -> list:
    """Snapshot ids from main's head back to the first, newest first."""
    sid, metadata = head(client, namespace, name)
    by_id = {s["snapshot-id"]: s for s in metadata.get("snapshots", [])}
    out = []
    while sid is not None and sid in by_id:
        out.append(sid)
        sid = by_id[sid].get("parent-snapshot-id")
    return out


def metadata_files(warehouse, namespace="db", name="t") -> list:
    d = os.path.join(warehouse, namespace, name, "metadata")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []
