"""Deleting files (spec/PROTOCOL.md 11.3 "Deleting files" after an acknowledged expiry,
12 "Orphan removal"; model: `expire_cleanup`, `remove_orphans`).

Expiry deletes exactly `reach(expired) - reach(retained over every ref)`, never outside
the table location, never a metadata file (the chain walk reads them, 9.7). Orphan
removal is the only caller of `list` (2.4); its safety rests on the age threshold alone
(12.2), whose default is Iceberg's 3 days.
"""
from __future__ import annotations

from icefloe.impl.format.metadata import TableMetadata
from icefloe.impl.io.base import ObjectStore
from icefloe.impl.io.locations import canonical_location
from icefloe.impl.table.files import TreeReader

ORPHAN_AGE_MS_DEFAULT = 3 * 24 * 3600 * 1000
_PROTECTED_SUFFIXES = (".metadata.json", "version-hint.text", "pointer.json")


def _under(location: str, table_location: str) -> bool:
    prefix = canonical_location(table_location).rstrip("/") + "/"
    return canonical_location(location).startswith(prefix)


def reachable(tree: TreeReader, metadata: TableMetadata) -> set[str]:
    """Canonical locations of every object a retained snapshot of any ref reaches."""
    out: set[str] = set()
    for s in metadata.snapshots:
        out |= {canonical_location(x) for x in tree.reach(s)}
    return out


def expire_cleanup(io: ObjectStore, tree: TreeReader, pre: TableMetadata, post: TableMetadata) -> list[str]:
    retained = {s.snapshot_id for s in post.snapshots}
    expired = [s for s in pre.snapshots if s.snapshot_id not in retained]
    keep = reachable(tree, post)
    gone: dict[str, str] = {}
    for s in expired:
        for x in tree.reach(s):
            c = canonical_location(x)
            if c not in keep and _under(x, post.location) and not x.endswith(_PROTECTED_SUFFIXES):
                gone[c] = x
    for x in sorted(gone.values()):
        io.delete(x)
    return sorted(gone.values())


def remove_orphan_files(io: ObjectStore, metadata: TableMetadata, older_than_ms: int,
                        tree: TreeReader | None = None) -> list[str]:
    """Delete data files, manifests and manifest lists under the table location that no
    retained snapshot reaches and that were last modified before `older_than_ms`."""
    tree = tree or TreeReader(io)
    keep = reachable(tree, metadata)
    deleted = []
    for info in io.list(metadata.location.rstrip("/") + "/"):
        if info.location.endswith(_PROTECTED_SUFFIXES) or info.last_modified_ms >= older_than_ms:
            continue
        if canonical_location(info.location) in keep:
            continue
        io.delete(info.location)
        deleted.append(info.location)
    return deleted
