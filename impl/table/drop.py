"""Dropping a table, and purging its files (Iceberg-Java `dropTable(id, purge)`, Spark
`DROP TABLE ... PURGE`; spec/PROTOCOL.md 11.3 for what may be deleted).

The catalog entry goes first: once the catalog no longer names the table, no reader can
open it half-deleted. A purge then deletes what the table's metadata reaches (data and
delete files, manifests and manifest lists of every retained snapshot) and its metadata
files (the current one and those in its metadata log), each through the table's
Confinement: under the root the catalog vouched for, links resolved, never elsewhere.
What a purge cannot read it refuses before dropping anything, so a table is never left
dropped with its files unknown. A commit racing with the drop may leave files behind in
the table's directory (no catalog names them any more; nothing else lives there).
"""
from __future__ import annotations

from icefloe.impl.catalog.base import Catalog, TableIdentifier
from icefloe.impl.format.integrity import CorruptMetadata
from icefloe.impl.format.metadata import MetadataError
from icefloe.impl.io.base import ObjectStore, StoreError
from icefloe.impl.io.locations import InvalidLocation, canonical_location
from icefloe.impl.outcomes import IcefloeError
from icefloe.impl.table.commit import read_metadata
from icefloe.impl.table.confinement import Confinement
from icefloe.impl.table.files import TreeReader
from icefloe.impl.table.maintenance import Cleanup, delete_confined, reachable


class PurgeRefused(IcefloeError):
    """The table's files cannot be told (unreadable metadata or manifests): nothing dropped."""


def purge_plan(io: ObjectStore, metadata_location: str) -> list[str]:
    """Every object a purge of the table at `metadata_location` deletes, metadata files last."""
    try:
        metadata = read_metadata(io, metadata_location)
        files = sorted(reachable(TreeReader(io), metadata))
    except (StoreError, MetadataError, CorruptMetadata, InvalidLocation) as e:
        raise PurgeRefused(f"cannot tell the table's files ({e}); nothing dropped: "
                           "drop without --purge to remove it from the catalog only") from None
    metadata_files = [e.metadata_file for e in metadata.metadata_log] + [metadata_location]
    seen = set(files)
    for location in metadata_files:
        c = canonical_location(location)
        if c not in seen:
            seen.add(c)
            files.append(location)
    return files


def drop_table(catalog: Catalog, identifier: TableIdentifier, io: ObjectStore, *, purge: bool = False) -> Cleanup:
    """Remove the table from the catalog; with `purge`, then delete its files (the cleanup
    lists what was deleted, refused as outside the table, or failed)."""
    metadata_location = catalog.load(identifier)
    plan = purge_plan(io, metadata_location) if purge else []
    catalog.drop(identifier)
    out = Cleanup()
    if not purge:
        return out
    return delete_confined(io, plan, Confinement.for_metadata(metadata_location, io), out)


def remove_empty_directories(root: str) -> int:
    """On a local disk, the directories a purge left empty under (and including) `root`,
    removed bottom-up (rmdir removes only empty directories); the number removed."""
    import os
    from icefloe.impl.io.locations import local_path, scheme_of
    if scheme_of(root) != "file":
        return 0
    top = local_path(root)
    if not os.path.isdir(top) or os.path.islink(top):
        return 0
    removed = 0
    for here, _dirs, _files in os.walk(top, topdown=False, followlinks=False):
        try:
            os.rmdir(here)
            removed += 1
        except OSError:
            pass                      # not empty (or not ours to remove): kept
    return removed
