"""Manifest merging (Iceberg's `commit.manifest-merge.*` table properties; spec/PROTOCOL.md
5.2 "What an attempt reuses"): a snapshot-producing operation that rewrites the manifest
list (overwrite, delete, compaction, row delta) may also merge small manifests into one, as
Iceberg-Java's merging producers do, so that a table's manifest count stays bounded.

Merging changes no file's life, only where its entry is written:
- an entry this snapshot added stays ADDED, one it deleted stays DELETED;
- every other live entry is carried as EXISTING, with its snapshot id and both sequence
  numbers kept explicit (only ADDED entries inherit: spec "Sequence Number Inheritance");
- a DELETED entry of an older snapshot is dropped (it was recorded when it happened).

Manifests are grouped by partition spec and content, packed into bins of at most
`target_size_bytes` from the end of the list (so the bin left under-filled is the newest,
merged next time), and a bin is merged when it holds more than one manifest, unless it
holds the operation's first manifest and fewer than `min_count_to_merge` (Java's rule: a
bin of older manifests merges whatever its count). A merge is remembered per bin, so a
retry whose bin did not change writes nothing new.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from icefloe.impl.format.manifest import ManifestContent, ManifestEntry, ManifestEntryStatus, ManifestFile
from icefloe.impl.outcomes import InvalidArgument, require

MERGE_ENABLED = "commit.manifest-merge.enabled"
MIN_COUNT_TO_MERGE = "commit.manifest.min-count-to-merge"
TARGET_SIZE_BYTES = "commit.manifest.target-size-bytes"
MERGE_ENABLED_DEFAULT = True
MIN_COUNT_TO_MERGE_DEFAULT = 100
TARGET_SIZE_BYTES_DEFAULT = 8 * 1024 * 1024


@dataclass(frozen=True)
class MergePolicy:
    enabled: bool = MERGE_ENABLED_DEFAULT
    min_count_to_merge: int = MIN_COUNT_TO_MERGE_DEFAULT
    target_size_bytes: int = TARGET_SIZE_BYTES_DEFAULT

    @classmethod
    def from_properties(cls, props) -> "MergePolicy":
        enabled = str(props.get(MERGE_ENABLED, "true")).strip().lower()
        if enabled not in ("true", "false"):
            raise InvalidArgument(f"table property {MERGE_ENABLED} is true or false, not {props.get(MERGE_ENABLED)!r}")

        def whole(key, default):
            try:
                return int(props.get(key, default))
            except (TypeError, ValueError):
                raise InvalidArgument(f"table property {key} is not a whole number: {props.get(key)!r}") from None
        policy = cls(enabled == "true", whole(MIN_COUNT_TO_MERGE, MIN_COUNT_TO_MERGE_DEFAULT),
                     whole(TARGET_SIZE_BYTES, TARGET_SIZE_BYTES_DEFAULT))
        require(policy.min_count_to_merge >= 0 and policy.target_size_bytes > 0,
                f"commit.manifest.* out of range: {policy}")
        return policy


def pack_end(manifests: list[ManifestFile], target_size_bytes: int) -> list[list[ManifestFile]]:
    """Bins of consecutive manifests of at most `target_size_bytes` each (a manifest larger
    than that is a bin of its own), packed from the end of the list; order is kept."""
    bins: list[list[ManifestFile]] = []
    current: list[ManifestFile] = []
    size = 0
    for m in reversed(manifests):
        if current and size + m.manifest_length > target_size_bytes:
            bins.append(current)
            current, size = [], 0
        current.append(m)
        size += m.manifest_length
    if current:
        bins.append(current)
    return [list(reversed(b)) for b in reversed(bins)]


def merged_entries(entries_of, bin_: list[ManifestFile], snapshot_id: int) -> list[ManifestEntry]:
    """The entries of one merged manifest (the rules in the module docstring). An entry of
    this commit's own new manifests has no snapshot id yet (it inherits the list's)."""
    out = []
    for m in bin_:
        for e in entries_of(m):
            ours = e.snapshot_id in (None, snapshot_id)
            if e.status == ManifestEntryStatus.DELETED:
                if ours:
                    out.append(e)
            elif e.status == ManifestEntryStatus.ADDED and ours:
                out.append(e)
            else:
                assert e.snapshot_id is not None and e.sequence_number is not None, \
                    f"a carried entry has resolved numbers: {e.data_file.file_path}"
                out.append(replace(e, status=ManifestEntryStatus.EXISTING))
    return out


def merge_manifests(manifests: list[ManifestFile], policy: MergePolicy, merge_bin) -> list[ManifestFile]:
    """`manifests` (this operation's new ones first) with bins merged by `merge_bin(bin) ->
    ManifestFile`; data manifests first, then delete manifests, each group of one content
    in descending spec id order (as Java lists them)."""
    if not policy.enabled or len(manifests) < 2:
        return list(manifests)
    out: list[ManifestFile] = []
    for content in (ManifestContent.DATA, ManifestContent.DELETES):
        group = [m for m in manifests if m.content == content]
        if not group:
            continue
        first = group[0]
        for spec_id in sorted({m.partition_spec_id for m in group}, reverse=True):
            for bin_ in pack_end([m for m in group if m.partition_spec_id == spec_id], policy.target_size_bytes):
                if len(bin_) == 1 or (first in bin_ and len(bin_) < policy.min_count_to_merge):
                    out.extend(bin_)
                else:
                    out.append(merge_bin(bin_))
    assert len(out) <= len(manifests)
    return out


__all__ = ["MERGE_ENABLED", "MIN_COUNT_TO_MERGE", "TARGET_SIZE_BYTES", "MergePolicy", "merge_manifests",
           "merged_entries", "pack_end"]
