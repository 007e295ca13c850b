"""Operations that write only a metadata file (spec/PROTOCOL.md 5.2 last row, 7.3
"rollback / set-current" and "expire snapshots", 8 "Refs", 11 "Expiry"; model: ROLLBACK,
EXPIRE).

A set-ref is stricter than Java's rollback: on every attempt the ref must still be where
the operation read it, and the target must still be retained. Expiry re-plans retention
on every base and deletes files only after its own acknowledged swap (11.3, 11.4).
"""
from __future__ import annotations

from icefloe.impl.format.metadata import MAIN_BRANCH, TableMetadata
from icefloe.impl.table import updates as U
from icefloe.impl.table.commit import METADATA, PendingCommit
from icefloe.impl.table.validation import AssertRefSnapshotId, SnapshotRetained
from icefloe.impl.outcomes import require
from icefloe.impl.table.maintenance import Cleanup

MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 24 * 3600 * 1000  # Iceberg's history.expire.max-snapshot-age-ms


class _MetadataOnly:
    produces_snapshot = False
    restart_phase = METADATA

    def write_data(self, c):
        pass

    def write_manifests(self, c):
        pass

    def manifests(self, c):
        return []

    def summary(self, c):
        return {}

    def after_acknowledged(self, c, pre, post):
        pass


class SetRef(_MetadataOnly):
    """Point a branch or tag at a retained snapshot: rollback and set-current (on main),
    create or replace a branch or tag."""

    def __init__(self, name: str, snapshot_id: int, ref_type: str = "branch", *,
                 min_snapshots_to_keep: int | None = None, max_snapshot_age_ms: int | None = None,
                 max_ref_age_ms: int | None = None, must_be_ancestor: bool = False):
        require(ref_type in ("branch", "tag"), f"a ref is a branch or a tag, not {ref_type!r}")
        require(name != MAIN_BRANCH or ref_type == "branch", "main is a branch")
        self.ref, self.snapshot_id, self.ref_type = name, snapshot_id, ref_type
        self.retention = dict(min_snapshots_to_keep=min_snapshots_to_keep,
                              max_snapshot_age_ms=max_snapshot_age_ms, max_ref_age_ms=max_ref_age_ms)
        self.must_be_ancestor = must_be_ancestor
        self.expected: int | None = None

    def plan(self, c: PendingCommit) -> bool:
        self.expected = c.starting_snapshot_id
        if c.base.snapshot_by_id(self.snapshot_id) is None:
            raise ValueError(f"snapshot {self.snapshot_id} is not retained")
        if self.must_be_ancestor:
            line = [s.snapshot_id for s in c.base.ancestors_of(self.expected)]
            if self.snapshot_id not in line:
                raise ValueError(f"snapshot {self.snapshot_id} is not an ancestor of {self.ref!r}")
        old = c.base.refs.get(self.ref)
        if old is not None and old.type != self.ref_type:
            raise ValueError(f"ref {self.ref!r} is a {old.type}, not a {self.ref_type}")
        return self.expected != self.snapshot_id or any(v is not None for v in self.retention.values())

    def validations(self, c):
        return [AssertRefSnapshotId(self.ref, self.expected), SnapshotRetained(self.snapshot_id)]

    def updates(self, c, snapshot):
        return [U.set_ref(self.ref, self.snapshot_id, c.env.wall_ms(), self.ref_type, **self.retention)]


class RemoveRef(_MetadataOnly):
    def __init__(self, name: str):
        require(name != MAIN_BRANCH, "main cannot be removed")
        self.ref = name

    def plan(self, c):
        self.expected = c.starting_snapshot_id
        return self.expected is not None

    def validations(self, c):
        return [AssertRefSnapshotId(self.ref, self.expected)]

    def updates(self, c, snapshot):
        return [U.remove_ref(self.ref, c.env.wall_ms())]


class SetProperties(_MetadataOnly):
    ref = MAIN_BRANCH

    def __init__(self, updates: dict[str, str], removals=()):
        self.props, self.removals = dict(updates), tuple(removals)
        # Reserved: the version is the table's format, not a property (spec "Table Metadata
        # Fields"); stored as one it would silently say something the table is not.
        require("format-version" not in self.props and "format-version" not in self.removals,
                "format-version is not a table property: upgrade the table (upgrade_format_version)")

    def plan(self, c):
        return True

    def validations(self, c):
        return []

    def updates(self, c, snapshot):
        return [U.set_properties(self.props, self.removals, c.env.wall_ms())]


class UpgradeFormatVersion(_MetadataOnly):
    """Upgrade the table's format version by one (spec Appendix E): v1 -> v2, v2 -> v3. Only
    the metadata changes: files already written stay valid in the next version. Asked for
    the version the table has, nothing to do; a downgrade or a skip is refused up front."""
    ref = MAIN_BRANCH

    def __init__(self, format_version: int):
        from icefloe.impl.format.metadata import check_format_version
        self.format_version = check_format_version(format_version)

    def plan(self, c):
        from icefloe.impl.format.metadata import upgraded
        return upgraded(c.base, self.format_version) is not c.base  # raises on a downgrade or a skip

    def validations(self, c):
        return []

    def updates(self, c, snapshot):
        return [U.upgrade_format_version(self.format_version, c.env.wall_ms())]


def retained_snapshot_ids(m: TableMetadata, now_ms: int, older_than_ms: int | None = None,
                          retain_last: int | None = None) -> set[int]:
    """Retention (11.2): the head of every ref kept; each kept branch's ancestors kept by its
    min-snapshots-to-keep or while not older than its max-snapshot-age-ms; snapshots on no
    kept ref's line that are not older than the age cutoff."""
    return set(retention_reasons(m, now_ms, older_than_ms, retain_last))


# Rules of retention, as `retention_reasons` names them.
KEPT_BY_REF, KEPT_BY_RETAIN_LAST, KEPT_BY_AGE = "ref", "retain-last", "age"


def expired_refs(m: TableMetadata, now_ms: int) -> set[str]:
    """The refs an expiry at `now_ms` removes (Iceberg spec "Snapshot References"; PROTOCOL
    11.2.1): a branch or tag other than main whose snapshot is older than its
    max-ref-age-ms (else the table's history.expire.max-ref-age-ms; neither: kept forever),
    or whose snapshot the table no longer has. Main never expires."""
    default = m.properties.get("history.expire.max-ref-age-ms")
    default_ms = int(default) if default is not None else None
    by_id = {s.snapshot_id: s for s in m.snapshots}
    out = set()
    for name, ref in m.refs.items():
        if name == MAIN_BRANCH:
            continue
        head = by_id.get(ref.snapshot_id)
        max_age = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else default_ms
        if head is None or (max_age is not None and now_ms - head.timestamp_ms > max_age):
            out.add(name)
    return out


def retention_reasons(m: TableMetadata, now_ms: int, older_than_ms: int | None = None,
                      retain_last: int | None = None) -> dict[int, list[tuple[str, str]]]:
    """Every retained snapshot -> the rules that keep it, as (rule, detail): `ref` (the head
    of a branch or tag that does not expire), `retain-last` (one of a branch's last N), `age`
    (not older than the cutoff). A ref's own min-snapshots-to-keep / max-snapshot-age-ms
    win over the call's `retain_last` / `older_than_ms`, which replace the table's
    history.expire.* defaults (spec "Snapshot Retention Policy": ref-level settings
    override the table's; Iceberg-Java's RemoveSnapshots does the same). A branch's walk
    from its head stops at the first ancestor neither rule keeps. The model of this is
    icefloe.model.retention.expire (the conformance family ref-lifecycle judges by it)."""
    min_keep_default = int(m.properties.get("history.expire.min-snapshots-to-keep", MIN_SNAPSHOTS_TO_KEEP_DEFAULT))
    age_default = int(m.properties.get("history.expire.max-snapshot-age-ms", MAX_SNAPSHOT_AGE_MS_DEFAULT))
    if retain_last is not None:
        min_keep_default = retain_last
    cutoff_default = older_than_ms if older_than_ms is not None else now_ms - age_default
    keep: dict[int, list[tuple[str, str]]] = {}

    def kept(snapshot_id: int, rule: str, detail: str) -> None:
        reasons = keep.setdefault(snapshot_id, [])
        if (rule, detail) not in reasons:
            reasons.append((rule, detail))

    def age_detail(cutoff: int, ref_age_ms: int | None) -> str:
        if ref_age_ms is None and older_than_ms is not None:
            return f"not older than --older-than ({cutoff} ms)"
        return f"younger than {(ref_age_ms or age_default) // 3_600_000} h (max-snapshot-age-ms)"

    gone = expired_refs(m, now_ms)
    on_some_line: set[int] = set()
    for name, ref in sorted(m.refs.items()):
        if name in gone:
            continue
        kept(ref.snapshot_id, KEPT_BY_REF, f"head of {ref.type} {name}")
        on_some_line.add(ref.snapshot_id)
        if ref.type != "branch":
            continue
        min_keep = ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else min_keep_default
        cutoff = now_ms - ref.max_snapshot_age_ms if ref.max_snapshot_age_ms is not None else cutoff_default
        for i, s in enumerate(m.ancestors_of(ref.snapshot_id)):
            on_some_line.add(s.snapshot_id)
            if i == 0:
                continue
            if i < min_keep:
                kept(s.snapshot_id, KEPT_BY_RETAIN_LAST, f"one of the last {min_keep} of {name}")
            elif s.timestamp_ms >= cutoff:
                kept(s.snapshot_id, KEPT_BY_AGE, age_detail(cutoff, ref.max_snapshot_age_ms))
            else:
                break
    for s in m.snapshots:
        if s.snapshot_id not in on_some_line and s.timestamp_ms >= cutoff_default:
            kept(s.snapshot_id, KEPT_BY_AGE, age_detail(cutoff_default, None) + ", on no branch")
    assert all(r.snapshot_id in keep for n, r in m.refs.items() if n not in gone)
    return keep


class ExpireSnapshots(_MetadataOnly):
    """Drop snapshots outside retention; after the acknowledged swap, delete the objects
    only expired snapshots reached, within the table location (11.3)."""
    ref = MAIN_BRANCH

    def __init__(self, older_than_ms: int | None = None, retain_last: int | None = None,
                 snapshot_ids=None):
        self.older_than_ms, self.retain_last = older_than_ms, retain_last
        self.snapshot_ids = None if snapshot_ids is None else frozenset(snapshot_ids)
        self.deleted_files = Cleanup()
        self.kept: dict[int, list[tuple[str, str]]] = {}

    def _expired(self, m: TableMetadata, now_ms: int) -> set[int]:
        # The reasons of the last base planned on are kept for the caller's report.
        self.kept = retention_reasons(m, now_ms, self.older_than_ms, self.retain_last)
        keep = set(self.kept)
        if self.snapshot_ids is not None:
            referenced = {r.snapshot_id for r in m.refs.values()}
            return {s.snapshot_id for s in m.snapshots if s.snapshot_id in self.snapshot_ids} - referenced
        return {s.snapshot_id for s in m.snapshots} - keep

    def plan(self, c):
        # One clock reading per attempt: what plan() decided is what updates() removes.
        now = c.env.wall_ms()
        self._planned = (c.base, now, sorted(expired_refs(c.base, now)), self._expired(c.base, now))
        return bool(self._planned[2]) or bool(self._planned[3])

    def validations(self, c):
        return []

    def updates(self, c, snapshot):
        base, now, refs, snapshots = getattr(self, "_planned", (None, 0, [], set()))
        if base is not c.base:  # not planned on this base (a caller that skips plan())
            now = c.env.wall_ms()
            refs, snapshots = sorted(expired_refs(c.base, now)), self._expired(c.base, now)
        return [*(U.remove_ref(name, now) for name in refs), U.remove_snapshots(snapshots, now)]

    def after_acknowledged(self, c, pre, post):
        from icefloe.impl.table.confinement import Confinement
        from icefloe.impl.table.maintenance import expire_cleanup
        # The root the catalog vouched for when the operation read the table (9.x: the
        # pointer, never the metadata file's own location field).
        self.deleted_files = expire_cleanup(c.io, c.tree, pre, post,
                                            Confinement.for_metadata(c.first_base_location, c.io))
