"""A file-system table on an object store without conditional writes (negative controls
`rename-commit` and `blind-put-commit`; spec/PROTOCOL.md 14 "Flawed variants"; model:
the `rename-commit` variant and its RENAME step; apache/iceberg #970, #1014, #864 and
delta-io/delta #1410).

There is no catalog: the current version is the highest `v<N>.metadata.json` a LIST of
the table's `metadata/` finds, and a commit writes version N+1 with a plain PUT, which
overwrites whatever is there. Two ways to decide that N+1 is free:

- `check="list"` (Hadoop tables on S3, iceberg #970/#1014): LIST when the writer writes its
  metadata file, PUT at the swap. Between the two another writer can do the same; the
  later PUT overwrites the earlier, acknowledged, version.
- `check="none"` (a log whose put-if-absent is missing, delta #1410): no check at all; a
  writer whose base is stale writes over the version another writer committed.

`hint=True` adds Hadoop's `version-hint.text`, written after the version file and read
instead of listing (iceberg #864): when the hint write fails after the rename, the
commit stands but every reader and writer that trusts the hint misses it.

Everything else is the reference commit loop (`PendingCommit`) unchanged, so the
writer's phases are the protocol's: the check happens in the metadata phase, the PUT in
the swap phase.
"""
from __future__ import annotations

import re

from icefloe.impl.catalog.base import NoSuchTable, TableAlreadyExists, TableIdentifier
from icefloe.impl.io.base import NotFound, StoreError
from dataclasses import replace

from icefloe.impl.outcomes import Committed, SwapRejected, Swapped
from icefloe.impl.table.commit import PendingCommit
from icefloe.conformance.engines.flawed_commit import blind_put

VERSION_DIGITS = 5
HINT_NAME = "version-hint.text"
_VERSION_RE = re.compile(r"/v(\d+)\.metadata\.json$")


def version_location(table_location: str, version: int) -> str:
    return f"{table_location.rstrip('/')}/metadata/v{version:0{VERSION_DIGITS}d}.metadata.json"


def version_of(location: str) -> int | None:
    m = _VERSION_RE.search(location)
    return None if m is None else int(m.group(1))


def table_location_of(metadata_location: str) -> str:
    head, sep, _ = metadata_location.rpartition("/metadata/")
    assert sep, f"not a metadata location: {metadata_location!r}"
    return head


class ListingCatalog:
    """The Catalog protocol over LIST and plain PUT (no atomic step anywhere)."""

    def __init__(self, io, *, check: str = "list", hint: bool = False, name: str = "listing"):
        assert check in ("list", "none"), check
        self.io, self.check, self.hint, self.name = io, check, hint, name
        self._tables: dict[TableIdentifier, str] = {}     # identifier -> table location
        self._checked: dict[str, str | None] = {}         # new metadata location -> free version file
        self.renamed: dict[str, str] = {}                 # new metadata location -> version file written

    # -- finding the current version ----------------------------------------------------

    def _latest_listed(self, table_location: str) -> str | None:
        best = None
        for info in self.io.list(f"{table_location.rstrip('/')}/metadata/v"):
            v = version_of(info.location)
            if v is not None and (best is None or v > version_of(best)):
                best = info.location
        return best

    def load(self, identifier: TableIdentifier) -> str:
        table_location = self._tables.get(identifier)
        if table_location is None:
            raise NoSuchTable(str(identifier))
        if self.hint:
            try:
                version = int(self.io.get(f"{table_location}/metadata/{HINT_NAME}").decode())
                return version_location(table_location, version)
            except (NotFound, ValueError):
                pass  # no hint yet: list
        found = self._latest_listed(table_location)
        if found is None:
            raise NoSuchTable(str(identifier))
        return found

    def create(self, identifier: TableIdentifier, metadata_location: str) -> None:
        if identifier in self._tables:
            raise TableAlreadyExists(str(identifier))
        table_location = table_location_of(metadata_location)
        self._tables[identifier] = table_location
        self._rename(table_location, metadata_location, version_location(table_location, 0))

    def list_tables(self, namespace):
        return sorted(i for i in self._tables if i.namespace == tuple(namespace))

    def drop(self, identifier):
        if self._tables.pop(identifier, None) is None:
            raise NoSuchTable(str(identifier))

    # -- committing ------------------------------------------------------------------------

    def _next(self, table_location: str, expected_location: str) -> str:
        base = version_of(expected_location)
        assert base is not None, f"not a version file: {expected_location!r}"
        return version_location(table_location, base + 1)

    def check_next_free(self, identifier: TableIdentifier, expected_location: str, new_location: str) -> None:
        """The first half of check-then-rename: is version N+1 free now (by LIST)? Remembered
        for the swap of `new_location`."""
        table_location = self._tables[identifier]
        target = self._next(table_location, expected_location)
        if self.check == "list":
            latest = self._latest_listed(table_location)
            free = latest is not None and version_of(latest) < version_of(target)
            self._checked[new_location] = target if free else None
        else:
            self._checked[new_location] = target

    def swap(self, identifier: TableIdentifier, expected_location: str, new_location: str):
        """The second half: PUT version N+1 over whatever is there."""
        table_location = self._tables.get(identifier)
        if table_location is None:
            return SwapRejected(expected_location, None, "no such table")
        if new_location not in self._checked:  # called without the metadata-phase check
            self.check_next_free(identifier, expected_location, new_location)
        target = self._checked.pop(new_location)
        if target is None:
            return SwapRejected(expected_location, None, "the next version file exists")
        self._rename(table_location, new_location, target)
        self.renamed[new_location] = target
        return Swapped(new_location)

    def _rename(self, table_location: str, source: str, target: str) -> None:
        blind_put(self.io, target, self.io.get(source))
        if self.hint:
            try:
                blind_put(self.io, f"{table_location}/metadata/{HINT_NAME}", str(version_of(target)).encode())
            except StoreError:
                pass  # the hint is advisory (HadoopTableOperations logs and goes on)


class RenameCommit(PendingCommit):
    """The reference commit loop whose metadata phase also checks that the next version
    file is free, and whose swap is the catalog's plain PUT."""

    def __init__(self, listing: ListingCatalog, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.listing = listing

    def write_metadata(self) -> None:
        super().write_metadata()
        self.listing.check_next_free(self.identifier, self.base_location, self.new_metadata_location)

    def swap(self) -> None:
        super().swap()
        if isinstance(self.outcome, Committed):
            # The committed version is the file the rename wrote (the one the chain names),
            # not the temporary file it was copied from.
            target = self.listing.renamed.get(self.new_metadata_location)
            if target is not None:
                self.outcome = replace(self.outcome, metadata_location=target)
