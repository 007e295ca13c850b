"""Confinement: nothing outside a table's own location is ever deleted, and no table lives
inside another (spec/PROTOCOL.md 11.3 "Deleting files", 12 "Orphan removal"; issue 14).

The table's root is what the catalog says, never what a metadata file says: the catalog
names the current metadata file, and icefloe (like pyiceberg and Iceberg-Java) keeps
metadata files in `<root>/metadata/`. So
- `table_root_of(metadata_location)` is the root the catalog vouches for (None for a
  metadata file elsewhere: such a table gets no deletes at all);
- `check_metadata_location` refuses, as CorruptMetadata, a metadata file whose `location`
  field disagrees with that root (a commit would otherwise write its next metadata file
  wherever the field points, and cleanup would delete there: ../shared/repro bug2);
- `Confinement.allows(location)` is the gate of every delete: the location must parse,
  lie under the root, and, on a local disk, still lie under the root once every symbolic
  link on its way is resolved (bug1: a symlinked directory inside the table);
- `check_no_overlap` refuses a new table location equal to, inside, or around another
  table's (bug3: orphan removal of `db.t` destroyed `db.t.x`, which lived inside it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from icefloe.impl.catalog.base import NoSuchTable
from icefloe.impl.format.integrity import CorruptMetadata
from icefloe.impl.format.metadata import TableMetadata
from icefloe.impl.io.locations import InvalidLocation, canonical_location
from icefloe.impl.outcomes import InvalidArgument

METADATA_DIR = "/metadata/"


class TableLocationOverlap(InvalidArgument):
    """A new table's location is, or is inside, or contains another table's location."""


def table_root_of(metadata_location: str) -> str | None:
    """`<root>` of `<root>/metadata/<file>`, canonical, or None when the file is not in a
    metadata directory of its table."""
    try:
        c = canonical_location(metadata_location)
    except InvalidLocation:
        return None
    head, sep, tail = c.rpartition(METADATA_DIR)
    if not sep or not head or "/" in tail or not tail:
        return None
    return head


def check_metadata_location(metadata: TableMetadata, metadata_location: str) -> None:
    """CorruptMetadata if the file's `location` field is not the root the catalog vouches
    for. A file outside any metadata directory (read by path, say) is not checked here; it
    gets no deletes (`Confinement.for_metadata` returns None for it)."""
    root = table_root_of(metadata_location)
    if root is None:
        return
    try:
        claimed = canonical_location(metadata.location).rstrip("/")
    except InvalidLocation:
        claimed = None
    if claimed != root:
        raise CorruptMetadata(metadata_location, f"its location field names {metadata.location!r}, but the "
                                                 f"catalog keeps this table at {root!r}")


def _within(location: str, root: str) -> bool:
    return location == root or location.startswith(root.rstrip("/") + "/")


@dataclass
class Confinement:
    """The deletion gate of one table. `resolve(location)` is the store's own view of a
    location with every link resolved (a local disk's realpath); stores without links
    return it unchanged."""
    root: str
    resolve: object = None
    refused: list = field(default_factory=list)

    @classmethod
    def for_metadata(cls, metadata_location: str | None, io) -> "Confinement | None":
        root = None if metadata_location is None else table_root_of(metadata_location)
        if root is None:
            return None
        return cls(root, getattr(io, "resolve", None))

    def allows(self, location: str) -> bool:
        """Whether `location` may be deleted; a refusal is remembered in `refused`."""
        try:
            c = canonical_location(location)
            inside = _within(c, self.root) and c != self.root
            if inside and self.resolve is not None:
                inside = _within(canonical_location(self.resolve(c)), canonical_location(self.resolve(self.root)))
        except (InvalidLocation, OSError):
            inside = False
        if not inside:
            self.refused.append(location)
        return inside


def catalog_tables(catalog) -> dict:
    """Every table the catalog holds -> its current metadata location (the catalog's own
    `table_locations()` when it has one, else namespace by namespace)."""
    own = getattr(catalog, "table_locations", None)
    if own is not None:
        return own()
    if not hasattr(catalog, "list_namespaces"):
        return {}                    # a catalog that cannot list its tables: nothing to compare with
    out = {}
    for namespace in catalog.list_namespaces():
        for identifier in catalog.list_tables(namespace):
            try:
                out[str(identifier)] = catalog.load(identifier)
            except NoSuchTable:
                continue              # dropped meanwhile
    return out


def check_no_overlap(new_location: str, existing: dict) -> None:
    """TableLocationOverlap if `new_location` equals, is inside, or contains the root of
    another table (`existing`: identifier -> its current metadata location)."""
    try:
        new = canonical_location(new_location).rstrip("/")
    except InvalidLocation as e:
        raise InvalidArgument(f"not a table location: {new_location!r}: {e}") from None
    for identifier, metadata_location in sorted(existing.items(), key=lambda kv: str(kv[0])):
        root = table_root_of(metadata_location)
        if root is None:
            continue
        if _within(new, root) or _within(root, new):
            how = "is" if new == root else ("is inside" if _within(new, root) else "contains")
            raise TableLocationOverlap(f"{new_location} {how} the location of table {identifier} ({root}); "
                                       "a table's files must not mix with another table's")
