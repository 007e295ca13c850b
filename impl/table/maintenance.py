"""Deleting files (spec/PROTOCOL.md 11.3 "Deleting files" after an acknowledged expiry,
12 "Orphan removal"; model: `expire_cleanup`, `remove_orphans`).

Expiry deletes exactly `reach(expired) - reach(retained over every ref)`, never a
metadata file (the chain walk reads them, 9.7). Orphan removal is the only caller of
`list` (2.4); its safety rests on the age threshold alone (12.2), whose default is
Iceberg's 3 days. Every delete passes the table's Confinement (confinement.py): under the
root the catalog vouches for, symbolic links resolved; never what a metadata file claims.

Cleanup runs after a commit landed, so it never raises for one file: a location it may
not touch is `refused`, a delete that fails is `failed`, and the caller reports
"committed; cleanup incomplete" naming them (orphan removal finds the rest later).
"""
from __future__ import annotations

from icefloe.impl.format.integrity import CorruptMetadata
from icefloe.impl.format.metadata import TableMetadata
from icefloe.impl.io.base import ObjectStore, StoreError
from icefloe.impl.io.locations import InvalidLocation, canonical_location
from icefloe.impl.table.confinement import Confinement
from icefloe.impl.table.files import TreeReader

ORPHAN_AGE_MS_DEFAULT = 3 * 24 * 3600 * 1000
_PROTECTED_SUFFIXES = (".metadata.json", "version-hint.text", "pointer.json")
_READ_ERRORS = (StoreError, CorruptMetadata, InvalidLocation)


class Cleanup(list):
    """The locations deleted (a list, as before), plus what was not: `refused` (outside the
    table, or not a location), `failed` ((location or snapshot, why): a delete or a read
    that failed)."""

    def __init__(self, deleted=()):
        super().__init__(deleted)
        self.refused: list[str] = []
        self.failed: list[tuple[str, str]] = []

    @property
    def complete(self) -> bool:
        return not self.refused and not self.failed

    def summary(self) -> str:
        """One line for a command's output."""
        parts = [f"deleted {len(self)} file(s)"]
        if self.refused:
            parts.append(f"refused {len(self.refused)} outside the table: {', '.join(self.refused[:5])}")
        if self.failed:
            parts.append(f"{len(self.failed)} failed: {', '.join(f'{x} ({why})' for x, why in self.failed[:5])}")
        return "; ".join(parts)


def reachable(tree: TreeReader, metadata: TableMetadata) -> set[str]:
    """Canonical locations of every object a retained snapshot of any ref reaches."""
    out: set[str] = set()
    for s in metadata.snapshots:
        out |= {canonical_location(x) for x in tree.reach(s)}
    return out


def delete_confined(io: ObjectStore, locations, confinement: Confinement | None, out: Cleanup,
                    dry_run: bool = False) -> Cleanup:
    """Delete `locations` in the order given, each only if the table's confinement allows it
    (else `refused`); a delete that fails is `failed`, and the rest go on."""
    for x in locations:
        if confinement is None or not confinement.allows(x):
            out.refused.append(x)
            continue
        if not dry_run:
            try:
                io.delete(x)
            except StoreError as e:
                out.failed.append((x, str(e)))
                continue
        out.append(x)
    return out


def expire_cleanup(io: ObjectStore, tree: TreeReader, pre: TableMetadata, post: TableMetadata,
                   confinement: Confinement | None) -> Cleanup:
    """After an acknowledged expiry: delete what only the expired snapshots reached."""
    out = Cleanup()
    retained = {s.snapshot_id for s in post.snapshots}
    expired = [s for s in pre.snapshots if s.snapshot_id not in retained]
    try:
        keep = reachable(tree, post)
    except _READ_ERRORS as e:            # what is retained cannot be told: delete nothing
        out.failed.append(("retained snapshots", f"cannot be read: {e}"))
        return out
    gone: dict[str, str] = {}
    for s in expired:
        try:
            reached = tree.reach(s)
        except _READ_ERRORS as e:
            out.failed.append((f"snapshot {s.snapshot_id}", f"cannot be read: {e}"))
            continue
        for x in reached:
            try:
                c = canonical_location(x)
            except InvalidLocation:
                out.refused.append(x)
                continue
            if c not in keep and not x.endswith(_PROTECTED_SUFFIXES):
                gone[c] = x
    return delete_confined(io, sorted(gone.values()), confinement, out)


def remove_orphan_files(io: ObjectStore, metadata: TableMetadata, older_than_ms: int,
                        tree: TreeReader | None = None, *, confinement: Confinement | None,
                        dry_run: bool = False) -> Cleanup:
    """Delete data files, manifests and manifest lists under the table's root that no
    retained snapshot reaches and that were last modified before `older_than_ms`, and the
    temporary files writers that died left behind (a store that has them: local disks).
    Without a confinement (no root the catalog vouches for) nothing is deleted."""
    out = Cleanup()
    if confinement is None:
        out.refused.append(metadata.location)
        return out
    tree = tree or TreeReader(io)
    keep = reachable(tree, metadata)
    gone: dict[str, str] = {}
    for info in io.list(confinement.root.rstrip("/") + "/"):
        if info.location.endswith(_PROTECTED_SUFFIXES) or info.last_modified_ms >= older_than_ms:
            continue
        if canonical_location(info.location) in keep:
            continue
        gone[canonical_location(info.location)] = info.location
    delete_confined(io, sorted(gone.values()), confinement, out, dry_run)
    stale = getattr(io, "stale_temporaries", None)
    if stale is not None:
        temporaries = set(stale(confinement.root.rstrip("/") + "/", older_than_ms))
        delete_confined(io, sorted(temporaries), confinement, out, dry_run)
    return out
