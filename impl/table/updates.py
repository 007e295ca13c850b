"""Actions (spec/PROTOCOL.md 7.1, 7.3 "actions"; model: `iceberg.apply_actions`): pure
functions TableMetadata -> TableMetadata. A commit applies its actions to the refreshed
base of every attempt; nothing here reads storage or a clock (timestamps are arguments).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable, Mapping

from icefloe.impl.format.metadata import (
    MAIN_BRANCH, FrozenMap, MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotRef, TableMetadata,
    snapshot_sequence_number, upgraded,
)
from icefloe.impl.outcomes import InvalidArgument, require

Update = Callable[[TableMetadata], TableMetadata]
PREVIOUS_VERSIONS_MAX_DEFAULT = 100  # Iceberg's write.metadata.previous-versions-max


class InvalidUpdate(InvalidArgument):
    """An update that cannot apply to the metadata it is given (a REST client's commit, or
    an operation's plan against a base it did not expect)."""


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise InvalidUpdate(message)


def _move_ref(m: TableMetadata, name: str, ref: SnapshotRef, timestamp_ms: int,
              **changes) -> TableMetadata:
    """One `replace`: the metadata invariants (main == current-snapshot-id) hold between
    whole actions, not between their fields."""
    refs = dict(m.refs)
    refs[name] = ref
    changes.update(refs=FrozenMap(refs), last_updated_ms=max(m.last_updated_ms, timestamp_ms))
    if name == MAIN_BRANCH:
        _check(ref.type == "branch", "main must be a branch")
        log = m.snapshot_log
        if m.current_snapshot_id != ref.snapshot_id:
            log = log + (SnapshotLogEntry(timestamp_ms, ref.snapshot_id),)
        changes.update(current_snapshot_id=ref.snapshot_id, snapshot_log=log)
    return replace(m, **changes)


def add_snapshot(snapshot: Snapshot, ref: str = MAIN_BRANCH) -> Update:
    """Add `snapshot` and make it the head of branch `ref` (creating the branch). In v1 the
    snapshot has no sequence number (0, and last-sequence-number stays 0); in v3 its
    first-row-id must be the table's next-row-id, which then advances by its added-rows,
    whichever branch it heads (spec "Snapshot Row IDs", "Table Metadata Fields")."""
    def apply(m: TableMetadata) -> TableMetadata:
        _check(m.snapshot_by_id(snapshot.snapshot_id) is None, f"snapshot id {snapshot.snapshot_id} exists already")
        expected = snapshot_sequence_number(m)
        _check(snapshot.sequence_number == expected,
               f"sequence number {snapshot.sequence_number}: the next one is {expected}")
        lineage = {}
        if m.format_version >= 3:
            _check(snapshot.first_row_id == m.next_row_id and snapshot.added_rows is not None
                   and snapshot.added_rows >= 0,
                   f"a v3 snapshot starts at next-row-id {m.next_row_id} with its added-rows, got "
                   f"first-row-id {snapshot.first_row_id}, added-rows {snapshot.added_rows}")
            lineage["next_row_id"] = m.next_row_id + snapshot.added_rows
        else:
            _check(snapshot.first_row_id is None and snapshot.added_rows is None,
                   f"row lineage is v3; this table is v{m.format_version}")
        head = m.refs.get(ref)
        _check((head.snapshot_id if head else None) == snapshot.parent_snapshot_id,
               f"parent {snapshot.parent_snapshot_id} is not the head of {ref!r}")
        _check(head is None or head.type == "branch", f"cannot commit to tag {ref!r}")
        old = m.refs.get(ref)
        new_ref = replace(old, snapshot_id=snapshot.snapshot_id) if old else SnapshotRef(snapshot.snapshot_id)
        return _move_ref(m, ref, new_ref, snapshot.timestamp_ms, snapshots=m.snapshots + (snapshot,),
                         last_sequence_number=max(m.last_sequence_number, snapshot.sequence_number), **lineage)
    return apply


def upgrade_format_version(format_version: int, timestamp_ms: int) -> Update:
    """Upgrade the table one format version (spec Appendix E); the same version is no
    change; a downgrade or a skipped version raises UnsupportedFormatVersion."""
    def apply(m: TableMetadata) -> TableMetadata:
        out = upgraded(m, format_version)
        return out if out is m else replace(out, last_updated_ms=max(m.last_updated_ms, timestamp_ms))
    return apply


def set_ref(name: str, snapshot_id: int, timestamp_ms: int, ref_type: str = "branch", *,
            min_snapshots_to_keep: int | None = None, max_snapshot_age_ms: int | None = None,
            max_ref_age_ms: int | None = None) -> Update:
    """Point ref `name` at a retained snapshot (rollback, set-current, branch, tag)."""
    def apply(m: TableMetadata) -> TableMetadata:
        _check(m.snapshot_by_id(snapshot_id) is not None, f"snapshot {snapshot_id} is not retained")
        old = m.refs.get(name)
        _check(old is None or old.type == ref_type, f"ref {name!r} is a {old.type if old else None}")
        ref = SnapshotRef(snapshot_id, ref_type, min_snapshots_to_keep, max_snapshot_age_ms, max_ref_age_ms)
        if old is not None and min_snapshots_to_keep is None and max_snapshot_age_ms is None and max_ref_age_ms is None:
            ref = replace(old, snapshot_id=snapshot_id)
        return _move_ref(m, name, ref, timestamp_ms)
    return apply


def remove_ref(name: str, timestamp_ms: int) -> Update:
    def apply(m: TableMetadata) -> TableMetadata:
        _check(name != MAIN_BRANCH, "main cannot be removed")
        refs = {k: v for k, v in m.refs.items() if k != name}
        return replace(m, refs=FrozenMap(refs), last_updated_ms=max(m.last_updated_ms, timestamp_ms))
    return apply


def remove_snapshots(snapshot_ids: Iterable[int], timestamp_ms: int) -> Update:
    """Drop snapshots (expiry). No ref may point at one of them (11.2)."""
    ids = frozenset(snapshot_ids)

    def apply(m: TableMetadata) -> TableMetadata:
        _check(not any(r.snapshot_id in ids for r in m.refs.values()), "the head of every ref is retained")
        return replace(m, snapshots=tuple(s for s in m.snapshots if s.snapshot_id not in ids),
                       snapshot_log=tuple(e for e in m.snapshot_log if e.snapshot_id not in ids),
                       last_updated_ms=max(m.last_updated_ms, timestamp_ms))
    return apply


def set_properties(updates: Mapping[str, str], removals: Iterable[str] = (), timestamp_ms: int = 0) -> Update:
    def apply(m: TableMetadata) -> TableMetadata:
        props = {k: v for k, v in m.properties.items() if k not in set(removals)}
        props.update(updates)
        return replace(m, properties=FrozenMap(props), last_updated_ms=max(m.last_updated_ms, timestamp_ms))
    return apply


def succeed(base: TableMetadata, base_location: str, timestamp_ms: int) -> TableMetadata:
    """The new version names the version it was built on (1.7): `base_location` becomes
    the last metadata-log entry, the log trimmed to write.metadata.previous-versions-max."""
    keep = int(base.properties.get("write.metadata.previous-versions-max", PREVIOUS_VERSIONS_MAX_DEFAULT))
    require(keep >= 1, f"write.metadata.previous-versions-max must be at least 1, not {keep}")
    log = base.metadata_log + (MetadataLogEntry(base.last_updated_ms, base_location),)
    return replace(base, metadata_log=log[-keep:], last_updated_ms=max(base.last_updated_ms, timestamp_ms))


def apply_all(base: TableMetadata, updates: Iterable[Update]) -> TableMetadata:
    out = base
    for u in updates:
        out = u(out)
    return out
