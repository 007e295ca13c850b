"""Creating and dropping refs strictly, and cherry-pick (spec/PROTOCOL.md 7.3, 8 "Refs";
Iceberg-Java `ManageSnapshots.createBranch/createTag/removeBranch/removeTag`,
`cherrypick`).

`Table.create_branch` also replaces (Java's `replaceBranch`); the command line's
`branch create` must not move a branch someone else made, so `CreateRef` requires the
name to be free on every attempt, and `DropRef` that the ref still is of the kind named.

Cherry-pick applies an append snapshot from anywhere in the table's history (a branch, a
staged write, a snapshot a rollback left behind) to a branch. Where the model allows it:
an append only (its rows are added again, nothing is removed, so no validation beyond
"not picked yet" is needed); when the snapshot's parent is the branch's head the branch
simply moves to it (a fast-forward, no new snapshot), as Java does. Anything else (an
overwrite, a delete, a rewrite) is refused: replaying it on another base needs the
conflict checks of the operation itself, which the model does not define for picks.
"""
from __future__ import annotations

from dataclasses import dataclass

from icefloe.impl.format.manifest import ManifestEntry, ManifestEntryStatus
from icefloe.impl.format.metadata import MAIN_BRANCH
from icefloe.impl.outcomes import InvalidArgument, require
from icefloe.impl.table import producer as P
from icefloe.impl.table.operations import RemoveRef, SetRef
from icefloe.impl.table.validation import SnapshotRetained

SOURCE_SNAPSHOT_ID = "source-snapshot-id"   # Java's SnapshotSummary.SOURCE_SNAPSHOT_ID_PROP


class RefExists(InvalidArgument):
    """`branch create` / `tag create` of a name already taken."""


class NoSuchRef(InvalidArgument):
    pass


class CherryPickRefused(InvalidArgument):
    """A snapshot that cannot be cherry-picked (not an append, already picked, ...)."""


class CreateRef(SetRef):
    """A new branch or tag; RefExists if the name is taken when planned. Every attempt
    requires the name to be still free (AssertRefSnapshotId(name, None))."""

    def plan(self, c) -> bool:
        existing = c.base.refs.get(self.ref)
        if existing is not None:
            raise RefExists(f"{self.ref!r} exists already (a {existing.type} at {existing.snapshot_id})")
        super().plan(c)
        return True


class DropRef(RemoveRef):
    """Remove a branch or a tag, refusing a ref of the other kind (`tag drop main`)."""

    def __init__(self, name: str, ref_type: str):
        require(ref_type in ("branch", "tag"), f"a ref is a branch or a tag, not {ref_type!r}")
        super().__init__(name)
        self.ref_type = ref_type

    def plan(self, c) -> bool:
        existing = c.base.refs.get(self.ref)
        if existing is None:
            raise NoSuchRef(f"no {self.ref_type} {self.ref!r}")
        if existing.type != self.ref_type:
            raise InvalidArgument(f"{self.ref!r} is a {existing.type}, not a {self.ref_type}")
        return super().plan(c)


@dataclass(frozen=True)
class NotPickedYet:
    """Neither the source snapshot nor a pick of it is on the branch's ancestry."""
    ref: str
    source_id: int

    def check(self, base, starting_snapshot_id, tree):
        head = base.refs.get(self.ref)
        for s in base.ancestors_of(head.snapshot_id if head else None):
            if s.snapshot_id == self.source_id or s.summary.get(SOURCE_SNAPSHOT_ID) == str(self.source_id):
                return f"snapshot {self.source_id} is already on {self.ref!r} (as {s.snapshot_id})"
        return None


class CherryPick(P.FastAppend):
    """A new snapshot on `ref` adding the data files the append snapshot `source_id`
    added (summary: source-snapshot-id). Retries as a fast append does."""

    def __init__(self, source_id: int, ref: str = MAIN_BRANCH):
        super().__init__(None, ref)
        self.source_id = source_id

    def plan(self, c) -> bool:
        source = c.base.snapshot_by_id(self.source_id)
        if source is None:
            raise CherryPickRefused(f"snapshot {self.source_id} is not retained")
        if source.operation != "append":
            raise CherryPickRefused(f"snapshot {self.source_id} is an {source.operation}: only append snapshots "
                                    "can be cherry-picked (their rows are added again; nothing is removed)")
        problem = NotPickedYet(self.ref, self.source_id).check(c.base, None, c.tree)
        if problem is not None:
            raise CherryPickRefused(problem)
        changes = c.tree.changes(source)
        if changes.added_deletes:
            raise CherryPickRefused(f"snapshot {self.source_id} added delete files: not a plain append")
        self.files = [e.data_file for e in changes.added_data]
        return bool(self.files)

    def validations(self, c):
        return [NotPickedYet(self.ref, self.source_id), SnapshotRetained(self.source_id)]

    def write_data(self, c):
        pass                                  # the files exist: the source snapshot wrote them

    def write_manifests(self, c):
        assert self.manifest is None and c.attempt == 1, "a pick writes its manifest once (5.2)"
        entries = [ManifestEntry(ManifestEntryStatus.ADDED, f) for f in self.files]
        self.manifest = P._write_manifest(c, entries, c.base.default_spec_id)

    def summary(self, c):
        out = P._summary(c, "append", self.files, [])
        out[SOURCE_SNAPSHOT_ID] = str(self.source_id)
        return out


def fast_forward_target(metadata, source_id: int, ref: str) -> bool:
    """Whether picking `source_id` onto `ref` is a fast-forward: its parent is the head."""
    head = metadata.refs.get(ref)
    source = metadata.snapshot_by_id(source_id)
    return source is not None and head is not None and source.parent_snapshot_id == head.snapshot_id


def fast_forward(name: str, source_id: int) -> SetRef:
    """Move branch `name` to `source_id` (whose parent is its head), checked on every attempt."""
    return SetRef(name, source_id, "branch", must_be_ancestor=False)


__all__ = ["CreateRef", "DropRef", "CherryPick", "RefExists", "NoSuchRef", "CherryPickRefused",
           "NotPickedYet", "fast_forward", "fast_forward_target"]
