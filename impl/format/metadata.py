"""Iceberg table metadata JSON, format v1, v2 and v3 (Iceberg spec: "Table Metadata" ->
"Table Metadata Fields", "Snapshots", "Snapshot Row IDs", "Snapshot References", "Appendix
C: JSON serialization" -> "Table Metadata and Snapshots", "Appendix E: Format version
changes").

Each version is read and written as itself: a v1 file keeps `schema` and `partition-spec`
beside the lists, and has no sequence numbers; a v3 file carries `next-row-id` and each new
snapshot's `first-row-id` / `added-rows` (row lineage). A version moves only by an explicit
upgrade, one step at a time (`upgrade_format_version`), never down.

Metadata is an immutable value (frozen dataclasses, tuples, FrozenMap), so a commit's
actions are pure functions old-metadata -> new-metadata (TLA+ `TryCommit` builds the new
version from the version it read). Every invariant below is checked when a value is built,
whether parsed or produced by an action.

Reading is lenient where the spec is (optional fields may be absent or null) and strict
where it is not: bad input is a MetadataError naming the file and the field, never a bare
KeyError/TypeError. Writing emits every field. Without a current snapshot we write
`"current-snapshot-id": null`: the spec makes the field optional, Java (1.x) writes null
and reads null or -1, pyiceberg omits it and reads null, -1 or absence. On read, -1 is
taken as "no current snapshot" too.
"""
from __future__ import annotations

import json
import uuid as uuid_module
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from icefloe.impl.format.transforms import (
    PARTITION_FIELD_ID_START, PartitionSpec, SortOrder, UNSORTED, partition_spec_from_json,
    partition_spec_to_json, sort_order_from_json, sort_order_to_json,
)
from icefloe.impl.format.defaults import check_schema_defaults
from icefloe.impl.outcomes import InvalidArgument
from icefloe.impl.format.types import (
    FormatError, Schema, json_get, schema_from_json, schema_to_json,
)

__all__ = ["MetadataError", "FrozenMap", "Snapshot", "SnapshotRef", "SnapshotLogEntry",
           "MetadataLogEntry", "TableMetadata", "to_json", "from_json", "new_table_metadata",
           "MAIN_BRANCH", "SUPPORTED_FORMAT_VERSIONS", "FORMAT_VERSION_DEFAULT",
           "UnsupportedFormatVersion", "check_format_version", "snapshot_sequence_number"]

MAIN_BRANCH = "main"
SUPPORTED_FORMAT_VERSIONS = (1, 2, 3)
FORMAT_VERSION_DEFAULT = 2
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


class MetadataError(FormatError):
    """A table metadata file (at `location`) is invalid at `field` (a JSON path such as
    `snapshots[2].summary`; None when the whole document is unreadable)."""

    def __init__(self, location: str | None, field: str | None, message: str):
        super().__init__(message, field)
        where = ": ".join(p for p in (location, field) if p)
        self.args = (f"{where}: {message}" if where else message,)
        self.location = location


class UnsupportedFormatVersion(MetadataError, InvalidArgument):
    """A format version icefloe does not read or write, or a change of version it does not
    make (a downgrade, a skipped version): a caller's mistake, named (never a silent v2)."""

    def __init__(self, message: str):
        super().__init__(None, "format-version", message)


def check_format_version(version: Any) -> int:
    """`version` as a supported format version, else UnsupportedFormatVersion."""
    if isinstance(version, str) and version.strip().isdigit():
        version = int(version)
    if isinstance(version, bool) or not isinstance(version, int) or version not in SUPPORTED_FORMAT_VERSIONS:
        raise UnsupportedFormatVersion(
            f"format version {version!r} is not supported: icefloe reads and writes "
            f"{', '.join(f'v{v}' for v in SUPPORTED_FORMAT_VERSIONS)}")
    return version


def snapshot_sequence_number(base: "TableMetadata") -> int:
    """The sequence number of the next snapshot on `base`: 0 in v1, which has none (spec
    Appendix E "Writing v1 metadata"), else last-sequence-number + 1."""
    return 0 if base.format_version == 1 else base.last_sequence_number + 1


class FrozenMap(Mapping):
    """An immutable, hashable mapping (properties, summaries, refs)."""
    __slots__ = ("_items",)

    def __init__(self, items: Mapping | Any = ()):
        object.__setattr__(self, "_items", dict(items))

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    # The dict's own views and lookups (the Mapping mixins go through __iter__/__getitem__
    # per key, which made checking every snapshot's summary the cost of a commit).
    def items(self):
        return self._items.items()

    def keys(self):
        return self._items.keys()

    def values(self):
        return self._items.values()

    def get(self, key, default=None):
        return self._items.get(key, default)

    def __contains__(self, key) -> bool:
        return key in self._items

    def __eq__(self, other):
        if isinstance(other, FrozenMap):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __setattr__(self, name, value):
        raise AttributeError("FrozenMap is immutable")

    def __repr__(self) -> str:
        return f"FrozenMap({self._items!r})"


def _frozen_map(value: Any) -> FrozenMap:
    return value if isinstance(value, FrozenMap) else FrozenMap(value)


def _invalid(field_path: str, message: str) -> MetadataError:
    return MetadataError(None, field_path, message)


# -- snapshots and refs --------------------------------------------------------------------

@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    parent_snapshot_id: int | None
    sequence_number: int
    timestamp_ms: int
    manifest_list: str
    summary: FrozenMap = field(default_factory=FrozenMap)
    schema_id: int | None = None
    # v3 row lineage ("Snapshot Row IDs"): the table's next-row-id when the snapshot was
    # committed, and the row ids its manifest list assigned. None before v3 / an upgrade.
    first_row_id: int | None = None
    added_rows: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "summary", _frozen_map(self.summary))

    @property
    def operation(self) -> str | None:
        return self.summary.get("operation")


@dataclass(frozen=True)
class SnapshotRef:
    snapshot_id: int
    type: str = "branch"
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    def __post_init__(self):
        if self.type not in ("branch", "tag"):
            raise _invalid("type", f"ref type must be branch or tag, got {self.type!r}")
        if self.type == "tag" and (self.min_snapshots_to_keep is not None
                                   or self.max_snapshot_age_ms is not None):
            raise _invalid("type", "min-snapshots-to-keep and max-snapshot-age-ms are for branches")


@dataclass(frozen=True)
class SnapshotLogEntry:
    timestamp_ms: int
    snapshot_id: int


@dataclass(frozen=True)
class MetadataLogEntry:
    timestamp_ms: int
    metadata_file: str


# -- table metadata ------------------------------------------------------------------------

@dataclass(frozen=True)
class TableMetadata:
    format_version: int
    table_uuid: str | None
    location: str
    last_sequence_number: int
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    sort_orders: tuple[SortOrder, ...] = (UNSORTED,)
    default_sort_order_id: int = 0
    properties: FrozenMap = field(default_factory=FrozenMap)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    refs: FrozenMap = field(default_factory=FrozenMap)
    next_row_id: int | None = None  # v3 ("Row Lineage"): required there, absent before
    # Top-level fields icefloe does not model (statistics, partition-statistics, ...), kept
    # as canonical JSON text so that a rewrite loses nothing another writer stored.
    extras: FrozenMap = field(default_factory=FrozenMap)

    def __post_init__(self):
        for name in ("schemas", "partition_specs", "sort_orders", "snapshots", "snapshot_log",
                     "metadata_log"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in ("properties", "refs", "extras"):
            object.__setattr__(self, name, _frozen_map(getattr(self, name)))
        # An index, not a field: lookups by id are constant time (ancestry walks, commits).
        object.__setattr__(self, "_snapshots_by_id", {s.snapshot_id: s for s in self.snapshots})
        _check_invariants(self)

    # -- lookups ---------------------------------------------------------------------------

    def snapshot_by_id(self, snapshot_id: int | None) -> Snapshot | None:
        return self._snapshots_by_id.get(snapshot_id)

    def current_snapshot(self) -> Snapshot | None:
        return self.snapshot_by_id(self.current_snapshot_id)

    def ref_head(self, name: str = MAIN_BRANCH) -> Snapshot | None:
        """The snapshot ref `name` points at; None if there is no such ref."""
        ref = self.refs.get(name)
        return None if ref is None else self.snapshot_by_id(ref.snapshot_id)

    def ancestors_of(self, snapshot_id: int | None) -> Iterator[Snapshot]:
        """The snapshot and its ancestors, newest first, until a parent is missing (expired).
        Bounded by the snapshot count: the invariants exclude parent cycles."""
        current = self.snapshot_by_id(snapshot_id)
        for _ in range(len(self.snapshots)):
            if current is None:
                return
            yield current
            current = self.snapshot_by_id(current.parent_snapshot_id)
        assert current is None, "parent cycle survived the invariant check"

    def snapshot_as_of(self, timestamp_ms: int) -> Snapshot | None:
        """The snapshot that was current at `timestamp_ms`, from the snapshot log (the
        history of the current snapshot), or None if none was or it has been expired."""
        entry = None
        for e in self.snapshot_log:
            if e.timestamp_ms <= timestamp_ms:
                entry = e
        return None if entry is None else self.snapshot_by_id(entry.snapshot_id)

    def schema(self) -> Schema:
        return self.schema_by_id(self.current_schema_id)

    def schema_by_id(self, schema_id: int) -> Schema | None:
        return next((s for s in self.schemas if s.schema_id == schema_id), None)

    def spec(self) -> PartitionSpec:
        return self.spec_by_id(self.default_spec_id)

    def spec_by_id(self, spec_id: int) -> PartitionSpec | None:
        return next((s for s in self.partition_specs if s.spec_id == spec_id), None)

    def sort_order(self) -> SortOrder:
        return next(o for o in self.sort_orders if o.order_id == self.default_sort_order_id)


def _check_unique(ids: list, path: str) -> None:
    if len(ids) != len(set(ids)):
        raise _invalid(path, f"duplicate ids {sorted(i for i in set(ids) if ids.count(i) > 1)}")


def _check_no_parent_cycle(snapshots, by_id: dict) -> None:
    """Parent links form no cycle, in linear time: each walk up from a snapshot stops at a
    snapshot already known to lead to no cycle, so every snapshot is walked over once."""
    acyclic: set[int] = set()
    for i, s in enumerate(snapshots):
        path, node = [], s.snapshot_id
        on_path: set[int] = set()
        while node in by_id and node not in acyclic:  # at most len(by_id) steps: new nodes only
            if node in on_path:
                raise _invalid(f"snapshots[{i}].parent-snapshot-id", "parent snapshots form a cycle")
            on_path.add(node)
            path.append(node)
            node = by_id[node].parent_snapshot_id
        acyclic.update(path)


def _check_invariants(m: TableMetadata) -> None:
    """What every valid table satisfies (spec "Table Metadata Fields", "Snapshot References")."""
    if m.format_version not in SUPPORTED_FORMAT_VERSIONS:
        raise _invalid("format-version", f"unsupported format version {m.format_version}")
    if m.table_uuid is None and m.format_version > 1:
        raise _invalid("table-uuid", f"required in format v{m.format_version}")
    if (m.next_row_id is not None) != (m.format_version >= 3):
        raise _invalid("next-row-id", f"required in v3 and absent before, got {m.next_row_id!r} "
                       f"in v{m.format_version}")
    if m.next_row_id is not None and m.next_row_id < 0:
        raise _invalid("next-row-id", f"must not be negative, got {m.next_row_id}")
    # A snapshot (and its FrozenMap summary) is immutable, so its summary is checked once,
    # in the first metadata that holds it, not again in every later version.
    unchecked = [(i, s) for i, s in enumerate(m.snapshots) if not s.__dict__.get("_summary_checked")]
    for name, mapping in [("properties", m.properties)] + [
            (f"snapshots[{i}].summary", s.summary) for i, s in unchecked]:
        for k, v in mapping.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise _invalid(f"{name}.{k}", "keys and values must be strings")
    for _, s in unchecked:
        object.__setattr__(s, "_summary_checked", True)
    _check_unique([s.schema_id for s in m.schemas], "schemas")
    if m.schema_by_id(m.current_schema_id) is None:
        raise _invalid("current-schema-id", f"no schema with id {m.current_schema_id}")
    if m.format_version > 1:  # v1 writers predate these fields' guarantees; v2 ones keep them
        highest = max(s.highest_field_id for s in m.schemas)
        if m.last_column_id < highest:
            raise _invalid("last-column-id", f"{m.last_column_id} is below the highest field id {highest}")
        highest = max(s.last_assigned_field_id for s in m.partition_specs) if m.partition_specs else 0
        if m.last_partition_id < highest:
            raise _invalid("last-partition-id",
                           f"{m.last_partition_id} is below the highest partition field id {highest}")
    _check_unique([s.spec_id for s in m.partition_specs], "partition-specs")
    if m.spec_by_id(m.default_spec_id) is None:
        raise _invalid("default-spec-id", f"no partition spec with id {m.default_spec_id}")
    _check_unique([o.order_id for o in m.sort_orders], "sort-orders")
    if m.default_sort_order_id not in [o.order_id for o in m.sort_orders]:
        raise _invalid("default-sort-order-id", f"no sort order with id {m.default_sort_order_id}")
    by_id = {s.snapshot_id: s for s in m.snapshots}
    _check_unique([s.snapshot_id for s in m.snapshots], "snapshots")
    for i, s in enumerate(m.snapshots):
        if s.snapshot_id == -1:  # Java and pyiceberg read current-snapshot-id -1 as "none"
            raise _invalid(f"snapshots[{i}].snapshot-id", "-1 is reserved for 'no snapshot'")
        if m.format_version > 1 and s.sequence_number > m.last_sequence_number:
            raise _invalid(f"snapshots[{i}].sequence-number",
                           f"{s.sequence_number} is above last-sequence-number {m.last_sequence_number}")
        if m.format_version > 1 and s.operation is None:
            raise _invalid(f"snapshots[{i}].summary", "missing operation")
        if s.first_row_id is not None and m.format_version < 3:
            raise _invalid(f"snapshots[{i}].first-row-id", f"row lineage is v3, this table is v{m.format_version}")
        if s.first_row_id is not None and (s.added_rows is None or s.added_rows < 0
                                           or s.first_row_id + s.added_rows > m.next_row_id):
            raise _invalid(f"snapshots[{i}].added-rows", f"first-row-id {s.first_row_id} + added-rows "
                           f"{s.added_rows} is above next-row-id {m.next_row_id}")
    _check_no_parent_cycle(m.snapshots, by_id)
    if m.current_snapshot_id is not None and m.current_snapshot_id not in by_id:
        raise _invalid("current-snapshot-id", f"no snapshot with id {m.current_snapshot_id}")
    for name, ref in m.refs.items():
        if ref.snapshot_id not in by_id:
            raise _invalid(f"refs.{name}.snapshot-id", f"no snapshot with id {ref.snapshot_id}")
    main = m.refs.get(MAIN_BRANCH)
    if (main.snapshot_id if main else None) != m.current_snapshot_id:
        raise _invalid(f"refs.{MAIN_BRANCH}", f"main branch ({main and main.snapshot_id}) and "
                       f"current-snapshot-id ({m.current_snapshot_id}) disagree")
    if main is not None and main.type != "branch":
        raise _invalid(f"refs.{MAIN_BRANCH}.type", "main must be a branch")


def new_table_metadata(schema: Schema, location: str, table_uuid: str, timestamp_ms: int,
                       spec: PartitionSpec = PartitionSpec(0, ()), sort_order: SortOrder = UNSORTED,
                       properties: Mapping[str, str] | None = None,
                       format_version: int = FORMAT_VERSION_DEFAULT) -> TableMetadata:
    """The metadata of a new, empty table of `format_version` (default v2). Ids and the
    clock are parameters (determinism is injected). What the version cannot hold (a v3
    type or default in v1/v2, a v1 spec whose field ids are not 1000, 1001, ...) is refused."""
    format_version = check_format_version(format_version)
    check_schema_for_version(schema, format_version)
    check_spec_for_version(spec, format_version)
    return TableMetadata(
        format_version=format_version, table_uuid=table_uuid, location=location, last_sequence_number=0,
        last_updated_ms=timestamp_ms, last_column_id=schema.highest_field_id, schemas=(schema,),
        current_schema_id=schema.schema_id, partition_specs=(spec,), default_spec_id=spec.spec_id,
        last_partition_id=spec.last_assigned_field_id, sort_orders=(sort_order,),
        default_sort_order_id=sort_order.order_id, properties=FrozenMap(properties or {}),
        next_row_id=0 if format_version >= 3 else None)


FIELD_ID_MAX = 2147483447  # spec "Reserved Field IDs": ids above are metadata columns' (_row_id, _file, ...)


def check_schema_for_version(schema: Schema, format_version: int) -> None:
    """UnsupportedFormatVersion naming a type or default `format_version` cannot hold (v3
    types and default values are v3 only: spec "Primitive Types", "Default values");
    InvalidArgument naming a column whose field id is in the reserved range (a reader
    would take the column for the metadata column of that id, e.g. row lineage's)."""
    from icefloe.impl.format.types import walk_fields
    for f, path in walk_fields(schema):
        if f.field_id > FIELD_ID_MAX:
            raise InvalidArgument(f"column {path!r} has field id {f.field_id}: ids above {FIELD_ID_MAX} are "
                                  f"reserved for metadata columns (spec \"Reserved Field IDs\")")
    check_schema_defaults(schema)
    if format_version >= 3:
        return
    for f, path in walk_fields(schema):
        since = getattr(f.type, "added_in_version", 1)
        if since > format_version:
            raise UnsupportedFormatVersion(f"column {path!r} has type {f.type}, which needs format "
                                           f"v{since} (this table is v{format_version}; upgrade it first)")
        if f.initial_default is not None or f.write_default is not None:
            raise UnsupportedFormatVersion(f"column {path!r} has a default value, which needs format v3 "
                                           f"(this table is v{format_version}; upgrade it first)")


def check_spec_for_version(spec: PartitionSpec, format_version: int) -> None:
    """v1 partition fields are numbered 1000, 1001, ... in spec order (v1 files may omit the
    ids; readers assign them so): a v1 spec with other ids would be read back differently."""
    if format_version == 1:
        ids = [pf.field_id for pf in spec.fields]
        expected = list(range(PARTITION_FIELD_ID_START, PARTITION_FIELD_ID_START + len(ids)))
        if ids != expected:
            raise UnsupportedFormatVersion(f"a v1 partition spec numbers its fields {expected}, not {ids}")


def check_v1_specs(specs) -> None:
    """v1 partition-field rules (spec "Partition Evolution"): v1 readers find partition
    fields by position, so every spec numbers its fields 1000, 1001, ... and a field id
    means the same source column and name in every spec; a dropped field stays, as a void
    transform. UnsupportedFormatVersion naming the first spec that breaks them."""
    from icefloe.impl.format.transforms import VoidTransform
    seen: dict[int, tuple[int, str]] = {}
    for spec in specs:
        check_spec_for_version(spec, 1)
        for pf in spec.fields:
            was = seen.setdefault(pf.field_id, (pf.source_id, pf.name))
            if was != (pf.source_id, pf.name) and not isinstance(pf.transform, VoidTransform):
                raise UnsupportedFormatVersion(
                    f"partition spec {spec.spec_id}: field {pf.field_id} is {pf.name!r} of column {pf.source_id}, "
                    f"another spec's is {was[1]!r} of column {was[0]}; v1 keeps fields in place (drop one "
                    "as a void transform, or upgrade to v2)")


def upgraded(m: TableMetadata, format_version: int) -> TableMetadata:
    """`m` at `format_version`: one step up (v1 -> v2, v2 -> v3), never down (spec Appendix
    E). Upgrading to v3 starts row lineage at next-row-id 0; existing snapshots keep no
    first-row-id ("Row Lineage for Upgraded Tables"). The same version is no change."""
    target = check_format_version(format_version)
    if target == m.format_version:
        return m
    if target < m.format_version:
        raise UnsupportedFormatVersion(f"cannot downgrade a v{m.format_version} table to v{target}")
    if target != m.format_version + 1:
        raise UnsupportedFormatVersion(f"upgrade one version at a time: v{m.format_version} -> "
                                       f"v{m.format_version + 1}, not v{target}")
    from dataclasses import replace
    changes: dict[str, Any] = {"format_version": target}
    if target == 2 and m.table_uuid is None:
        raise UnsupportedFormatVersion("a v1 table without table-uuid cannot be upgraded: v2 requires one")
    if target == 3:
        changes["next_row_id"] = 0
    return replace(m, **changes)


# -- writing -------------------------------------------------------------------------------

def _snapshot_to_json(s: Snapshot, version: int) -> dict:
    out: dict[str, Any] = {"snapshot-id": s.snapshot_id}
    if s.parent_snapshot_id is not None:
        out["parent-snapshot-id"] = s.parent_snapshot_id
    if version > 1:  # "Snapshot field sequence-number should not be written" in v1
        out["sequence-number"] = s.sequence_number
    out.update({"timestamp-ms": s.timestamp_ms, "manifest-list": s.manifest_list,
                "summary": dict(s.summary)})
    if s.schema_id is not None:
        out["schema-id"] = s.schema_id
    if s.first_row_id is not None:  # v3; absent on snapshots from before an upgrade
        out["first-row-id"] = s.first_row_id
        out["added-rows"] = s.added_rows
    return out


def _ref_to_json(r: SnapshotRef) -> dict:
    out: dict[str, Any] = {"snapshot-id": r.snapshot_id, "type": r.type}
    for key, value in (("min-snapshots-to-keep", r.min_snapshots_to_keep),
                       ("max-snapshot-age-ms", r.max_snapshot_age_ms),
                       ("max-ref-age-ms", r.max_ref_age_ms)):
        if value is not None:
            out[key] = value
    return out


def to_json(m: TableMetadata) -> bytes:
    """Serialize metadata of any supported version with every field that version has, in
    the spec's table order. v1 (Appendix E "Writing v1 metadata"): no last-sequence-number
    nor snapshot sequence numbers; the current `schema` and `partition-spec` beside the
    lists (v1 readers know only those); `current-snapshot-id` -1 when there is none (the v1
    readers' convention). `refs` is written in v1 too, as Iceberg-Java does: a tag or branch
    of a v1 table would otherwise be dropped silently. v3 adds `next-row-id`."""
    version = check_format_version(m.format_version)
    if version == 1:
        check_v1_specs(m.partition_specs)
    doc: dict[str, Any] = {"format-version": version, "table-uuid": m.table_uuid, "location": m.location}
    if version > 1:
        doc["last-sequence-number"] = m.last_sequence_number
    doc.update({"last-updated-ms": m.last_updated_ms, "last-column-id": m.last_column_id})
    if version == 1:
        doc["schema"] = schema_to_json(m.schema())
    doc.update({"schemas": [schema_to_json(s) for s in m.schemas], "current-schema-id": m.current_schema_id})
    if version == 1:
        doc["partition-spec"] = partition_spec_to_json(m.spec())["fields"]
    doc.update({
        "partition-specs": [partition_spec_to_json(s) for s in m.partition_specs],
        "default-spec-id": m.default_spec_id, "last-partition-id": m.last_partition_id,
        "sort-orders": [sort_order_to_json(o) for o in m.sort_orders],
        "default-sort-order-id": m.default_sort_order_id, "properties": dict(m.properties),
        "current-snapshot-id": m.current_snapshot_id if m.current_snapshot_id is not None or version > 1 else -1,
        "snapshots": [_snapshot_to_json(s, version) for s in m.snapshots],
        "snapshot-log": [{"timestamp-ms": e.timestamp_ms, "snapshot-id": e.snapshot_id}
                         for e in m.snapshot_log],
        "metadata-log": [{"timestamp-ms": e.timestamp_ms, "metadata-file": e.metadata_file}
                         for e in m.metadata_log],
        "refs": {name: _ref_to_json(r) for name, r in m.refs.items()},
        "statistics": [], "partition-statistics": [],
    })
    if version >= 3:
        doc["next-row-id"] = m.next_row_id
    doc.update({key: json.loads(text) for key, text in m.extras.items()})
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# -- reading -------------------------------------------------------------------------------

_KNOWN_KEYS = {"format-version", "table-uuid", "location", "last-sequence-number",
               "last-updated-ms", "last-column-id", "schema", "schemas", "current-schema-id",
               "partition-spec", "partition-specs", "default-spec-id", "last-partition-id",
               "sort-orders", "default-sort-order-id", "properties", "current-snapshot-id",
               "snapshots", "snapshot-log", "metadata-log", "refs", "next-row-id"}


_WRITTEN_EMPTY = {"statistics", "partition-statistics"}  # to_json writes these as [] by default


def _long(obj: Any, key: str, path: str, default: Any = ...) -> Any:
    value = json_get(obj, key, int, path, default)
    if isinstance(value, int) and not _LONG_MIN <= value <= _LONG_MAX:
        raise FormatError("out of the 64-bit range", f"{path}.{key}" if path else key)
    return value


def _list(obj: Any, key: str, path: str, default: Any = ...) -> list:
    return json_get(obj, key, list, path, default)


def _string_map(obj: Any, key: str, path: str) -> FrozenMap:
    raw = json_get(obj, key, dict, path, {})
    for k, v in raw.items():
        if not isinstance(v, str):
            raise FormatError(f"expected string, got {type(v).__name__}", f"{path}.{key}.{k}".lstrip("."))
    return FrozenMap(raw)


def _snapshot_from_json(d: Any, path: str, version: int) -> Snapshot:
    if version == 1 and isinstance(d, dict) and "manifest-list" not in d and "manifests" in d:
        raise FormatError("v1 snapshots with an embedded manifests list are not supported",
                          f"{path}.manifests")
    return Snapshot(
        snapshot_id=_long(d, "snapshot-id", path),
        parent_snapshot_id=_long(d, "parent-snapshot-id", path, None),
        sequence_number=_long(d, "sequence-number", path, ... if version > 1 else 0),
        timestamp_ms=_long(d, "timestamp-ms", path),
        manifest_list=json_get(d, "manifest-list", str, path),
        summary=_string_map(d, "summary", path),
        schema_id=_long(d, "schema-id", path, None),
        first_row_id=_long(d, "first-row-id", path, None) if version >= 3 else None,
        added_rows=_long(d, "added-rows", path, None) if version >= 3 else None)


def _ref_from_json(d: Any, path: str) -> SnapshotRef:
    kind = json_get(d, "type", str, path)
    try:
        return SnapshotRef(_long(d, "snapshot-id", path), kind,
                           _long(d, "min-snapshots-to-keep", path, None),
                           _long(d, "max-snapshot-age-ms", path, None),
                           _long(d, "max-ref-age-ms", path, None))
    except MetadataError as e:
        raise FormatError(e.reason, f"{path}.{e.field}") from None


def _items(doc: dict, key: str, parse, default: Any = ...) -> tuple:
    raw = _list(doc, key, "", default)
    return tuple(parse(item, f"{key}[{i}]") for i, item in enumerate(raw or ()))


def _parse(doc: Any) -> TableMetadata:
    if not isinstance(doc, dict):
        raise FormatError(f"expected a JSON object, got {type(doc).__name__}")
    version = json_get(doc, "format-version", int, "")
    if version not in SUPPORTED_FORMAT_VERSIONS:
        raise FormatError(f"unsupported format version {version}", "format-version")
    v2 = version > 1
    required = ... if v2 else None

    if v2 or "schemas" in doc:
        schemas = _items(doc, "schemas", _schema_from_json)
        current_schema_id = _long(doc, "current-schema-id", "", required)
    else:
        schemas = (_schema_from_json(json_get(doc, "schema", dict, ""), "schema"),)
        current_schema_id = None
    if current_schema_id is None:
        if not schemas:
            raise FormatError("no schema", "schemas")
        current_schema_id = schemas[0].schema_id
    if v2 or "partition-specs" in doc:
        specs = _items(doc, "partition-specs", partition_spec_from_json)
        default_spec_id = _long(doc, "default-spec-id", "", required)
    else:  # v1: a bare list of fields
        specs = (partition_spec_from_json({"spec-id": 0, "fields": _list(doc, "partition-spec", "")},
                                          "partition-spec"),)
        default_spec_id = None
    if default_spec_id is None:
        default_spec_id = specs[0].spec_id if specs else 0
    last_partition_id = _long(doc, "last-partition-id", "", required)
    if last_partition_id is None:
        last_partition_id = max((s.last_assigned_field_id for s in specs),
                                default=PARTITION_FIELD_ID_START - 1)
    sort_orders = _items(doc, "sort-orders", sort_order_from_json, required)
    table_uuid = json_get(doc, "table-uuid", str, "", required)
    if table_uuid is not None:
        try:
            uuid_module.UUID(table_uuid)
        except ValueError:
            raise FormatError(f"not a UUID: {table_uuid!r}", "table-uuid") from None
    snapshots = tuple(_snapshot_from_json(s, f"snapshots[{i}]", version)
                      for i, s in enumerate(_list(doc, "snapshots", "", [])))
    current_snapshot_id = _long(doc, "current-snapshot-id", "", None)
    if current_snapshot_id == -1:
        current_snapshot_id = None
    raw_refs = json_get(doc, "refs", dict, "", None)
    refs = {name: _ref_from_json(r, f"refs.{name}") for name, r in (raw_refs or {}).items()}
    if MAIN_BRANCH not in refs and current_snapshot_id is not None:
        refs[MAIN_BRANCH] = SnapshotRef(current_snapshot_id, "branch")  # spec: main is implied
    return TableMetadata(
        format_version=version, table_uuid=table_uuid, location=json_get(doc, "location", str, ""),
        last_sequence_number=_long(doc, "last-sequence-number", "", ... if v2 else 0),
        last_updated_ms=_long(doc, "last-updated-ms", ""),
        last_column_id=_long(doc, "last-column-id", ""), schemas=schemas,
        current_schema_id=current_schema_id, partition_specs=specs, default_spec_id=default_spec_id,
        last_partition_id=last_partition_id, sort_orders=sort_orders or (UNSORTED,),
        default_sort_order_id=_long(doc, "default-sort-order-id", "", required) or 0,
        properties=_string_map(doc, "properties", ""), current_snapshot_id=current_snapshot_id,
        snapshots=snapshots,
        snapshot_log=_items(doc, "snapshot-log", lambda e, p: SnapshotLogEntry(
            _long(e, "timestamp-ms", p), _long(e, "snapshot-id", p)), []),
        metadata_log=_items(doc, "metadata-log", lambda e, p: MetadataLogEntry(
            _long(e, "timestamp-ms", p), json_get(e, "metadata-file", str, p)), []),
        refs=FrozenMap(refs),
        next_row_id=_long(doc, "next-row-id", "") if version >= 3 else None,
        extras=FrozenMap({k: json.dumps(v, sort_keys=True) for k, v in doc.items()
                          if k not in _KNOWN_KEYS and not (k in _WRITTEN_EMPTY and v == [])}))


def _schema_from_json(d: Any, path: str) -> Schema:
    schema = schema_from_json(d, path)
    check_schema_defaults(schema, path)  # a default that does not fit its type is bad input
    return schema


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")  # Python's json accepts NaN and Infinity


def from_json(data: bytes | str, location: str) -> TableMetadata:
    """Parse the metadata file at `location` (used in errors only)."""
    try:
        doc = json.loads(data, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise MetadataError(location, None, f"not valid JSON: {e}") from None
    try:
        return _parse(doc)
    except FormatError as e:  # MetadataError included: add the file's location
        raise MetadataError(location, e.field, e.reason) from None
