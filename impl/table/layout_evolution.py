"""Partition spec evolution, sort orders and column nullability: metadata-only commits
(Iceberg spec "Partition Evolution", "Sorting", "Schema Evolution"; the REST updates
add-spec / set-default-spec / add-sort-order / set-default-sort-order / add-schema).

- A new partition spec keeps every field id it had, takes last-partition-id + 1 for a new
  field (ids are never reused) and becomes the default for new writes; files written under
  an older spec keep it (scans prune each file with its own spec). In v1 a removed field
  becomes a void transform (v1 specs cannot drop fields); in v2 and later it is dropped.
  A spec identical to an existing one reuses that spec's id.
- A sort order is metadata for writers that sort (engines such as Spark; icefloe's own
  writes do not sort and record no sort order id on their files). Order 0 is unsorted.
- Making a column optional is always safe; making it required is refused while any live
  file of any ref may hold a null in it (files without null counts are refused too), and
  the commit fails (Conflict) if a snapshot was added meanwhile.

Each change is planned from the base it read and validated against the base it commits
on (the default spec / sort order / schema and last assigned ids unchanged), as Java's
UpdatePartitionSpec and ReplaceSortOrder are.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from icefloe.impl.format.metadata import MAIN_BRANCH, TableMetadata
from icefloe.impl.format.transforms import (
    PartitionField, PartitionSpec, SortField, SortOrder, VoidTransform, parse_partition_spec,
)
from icefloe.impl.format import types as T
from icefloe.impl.outcomes import InvalidArgument
from icefloe.impl.table.operations import _MetadataOnly
from icefloe.impl.table import schema_evolution as SE


class LayoutEvolutionError(InvalidArgument):
    """A partition spec, sort order or nullability change that cannot be made (named)."""


# -- partition specs -----------------------------------------------------------------------

def _field_from_text(text: str, m: TableMetadata) -> PartitionField:
    """One partition field in the `--partition-by` grammar, with the next field id."""
    parsed = parse_partition_spec(text, m.schema())
    if len(parsed.fields) != 1:
        raise LayoutEvolutionError(f"{text!r}: one partition field at a time (e.g. 'bucket(16, id)')")
    f = parsed.fields[0]
    return PartitionField(f.source_id, m.last_partition_id + 1, f.transform, f.name)


def _spec_with(m: TableMetadata, fields: tuple[PartitionField, ...]) -> PartitionSpec:
    for spec in m.partition_specs:
        if spec.fields == fields:
            return spec
    return PartitionSpec(max(s.spec_id for s in m.partition_specs) + 1, fields)


def add_partition_field(m: TableMetadata, text: str, name: str | None = None) -> PartitionSpec:
    current = m.spec()
    new = _field_from_text(text, m)
    if name:
        new = replace(new, name=name)
    for f in current.fields:
        if (f.source_id, str(f.transform)) == (new.source_id, str(new.transform)) \
                and not isinstance(f.transform, VoidTransform):
            raise LayoutEvolutionError(f"the partition spec already has {f.name} = {f.transform}"
                                       f"({m.schema().column_name(f.source_id)})")
        if f.name == new.name:
            raise LayoutEvolutionError(f"partition field name {new.name!r} is taken (give another with --name)")
    source = m.schema().column_name(new.source_id)
    if m.schema().field_by_name(new.name) is not None and not (new.name == source and str(new.transform) == "identity"):
        raise LayoutEvolutionError(f"partition field name {new.name!r} is a column's name (give another with --name)")
    return _spec_with(m, current.fields + (new,))


def _named(m: TableMetadata, name: str) -> PartitionField:
    for f in m.spec().fields:
        if f.name == name and not isinstance(f.transform, VoidTransform):
            return f
    known = ", ".join(f.name for f in m.spec().fields if not isinstance(f.transform, VoidTransform)) or "none"
    raise LayoutEvolutionError(f"no partition field {name!r} in the current spec (fields: {known})")


def remove_partition_field(m: TableMetadata, name: str) -> PartitionSpec:
    gone = _named(m, name)
    if m.format_version == 1:       # v1: fields cannot be dropped; a void transform keeps the slot
        fields = tuple(replace(f, transform=VoidTransform()) if f is gone else f for f in m.spec().fields)
    else:
        fields = tuple(f for f in m.spec().fields if f is not gone)
    return _spec_with(m, fields)


def rename_partition_field(m: TableMetadata, name: str, new_name: str) -> PartitionSpec:
    field = _named(m, name)
    if any(f.name == new_name for f in m.spec().fields):
        raise LayoutEvolutionError(f"partition field name {new_name!r} is taken")
    return _spec_with(m, tuple(replace(f, name=new_name) if f is field else f for f in m.spec().fields))


def add_spec(spec: PartitionSpec):
    """Update: add `spec` (unless a spec with its id exists), raising last-partition-id."""
    def apply(m: TableMetadata) -> TableMetadata:
        specs = m.partition_specs if m.spec_by_id(spec.spec_id) else m.partition_specs + (spec,)
        return replace(m, partition_specs=specs,
                       last_partition_id=max(m.last_partition_id, spec.last_assigned_field_id))
    return apply


def set_default_spec(spec_id: int):
    def apply(m: TableMetadata) -> TableMetadata:
        if m.spec_by_id(spec_id) is None:
            raise LayoutEvolutionError(f"set-default-spec: no spec {spec_id}")
        return replace(m, default_spec_id=spec_id)
    return apply


@dataclass(frozen=True)
class AssertDefaultSpec:
    """The default spec and last-partition-id are those the change was made from (REST
    assert-default-spec-id, assert-last-assigned-partition-id)."""
    spec_id: int
    last_partition_id: int

    def check(self, base, starting_snapshot_id, tree):
        if (base.default_spec_id, base.last_partition_id) != (self.spec_id, self.last_partition_id):
            return (f"the partition spec changed concurrently (default spec {base.default_spec_id}, last partition "
                    f"id {base.last_partition_id}; the change was made from {self.spec_id}, {self.last_partition_id})")
        return None


class SpecChange(_MetadataOnly):
    """`change(metadata) -> PartitionSpec` made the table's default spec."""
    ref = MAIN_BRANCH

    def __init__(self, change, description: str):
        self.change, self.description = change, description
        self.spec: PartitionSpec | None = None
        self.validation: AssertDefaultSpec | None = None

    def plan(self, c) -> bool:
        self.spec = self.change(c.base)
        self.validation = AssertDefaultSpec(c.base.default_spec_id, c.base.last_partition_id)
        return self.spec.spec_id != c.base.default_spec_id

    def validations(self, c):
        return [self.validation]

    def updates(self, c, snapshot):
        return [add_spec(self.spec), set_default_spec(self.spec.spec_id)]


# -- sort orders ---------------------------------------------------------------------------

_SORT_ITEM = re.compile(r"(?P<expr>[\w.]+|\w+\s*\([^)]*\))\s*(?P<dir>asc|desc)?\s*(?P<nulls>nulls[ -](?:first|last))?",
                        re.IGNORECASE)


def parse_sort_order(text: str, schema: T.Schema) -> tuple[SortField, ...]:
    """"id desc, day(ts) asc nulls-last, bucket(16, id)": a column or a transform of one (the
    partition grammar), asc (default) or desc, nulls-first (default for asc) or nulls-last
    (default for desc), as Java's SortOrder builder."""
    from icefloe.impl.format.transforms import _split_top_level
    fields = []
    for item in _split_top_level(text):
        m = _SORT_ITEM.fullmatch(item.strip())
        if not m:
            raise LayoutEvolutionError(f"cannot parse sort field {item!r} (e.g. 'id desc nulls-last' or 'day(ts)')")
        f = parse_partition_spec(m["expr"], schema).fields[0]
        direction = (m["dir"] or "asc").lower()
        nulls = (m["nulls"] or ("nulls-first" if direction == "asc" else "nulls-last")).lower().replace(" ", "-")
        fields.append(SortField(f.source_id, f.transform, direction, nulls))
    if not fields:
        raise LayoutEvolutionError("an empty sort order: use `sort-order unset` for unsorted")
    return tuple(fields)


def _order_with(m: TableMetadata, fields: tuple[SortField, ...]) -> SortOrder:
    for order in m.sort_orders:
        if order.fields == fields:
            return order
    return SortOrder(max(o.order_id for o in m.sort_orders) + 1, fields)


def add_sort_order(order: SortOrder):
    def apply(m: TableMetadata) -> TableMetadata:
        if any(o.order_id == order.order_id for o in m.sort_orders):
            return m
        return replace(m, sort_orders=m.sort_orders + (order,))
    return apply


def set_default_sort_order(order_id: int):
    def apply(m: TableMetadata) -> TableMetadata:
        if not any(o.order_id == order_id for o in m.sort_orders):
            raise LayoutEvolutionError(f"set-default-sort-order: no sort order {order_id}")
        return replace(m, default_sort_order_id=order_id)
    return apply


@dataclass(frozen=True)
class AssertDefaultSortOrder:
    order_id: int

    def check(self, base, starting_snapshot_id, tree):
        if base.default_sort_order_id != self.order_id:
            return (f"the sort order changed concurrently (default {base.default_sort_order_id}; the change was "
                    f"made from {self.order_id})")
        return None


class SortOrderChange(_MetadataOnly):
    """Make the order of `text` (None: unsorted) the table's default sort order."""
    ref = MAIN_BRANCH

    def __init__(self, text: str | None):
        self.text = text
        self.order: SortOrder | None = None
        self.validation: AssertDefaultSortOrder | None = None
        self.description = f"sort order {text}" if text else "unsorted"

    def plan(self, c) -> bool:
        fields = () if self.text is None else parse_sort_order(self.text, c.base.schema())
        self.order = _order_with(c.base, fields)
        self.validation = AssertDefaultSortOrder(c.base.default_sort_order_id)
        return self.order.order_id != c.base.default_sort_order_id

    def validations(self, c):
        return [self.validation]

    def updates(self, c, snapshot):
        return [add_sort_order(self.order), set_default_sort_order(self.order.order_id)]


# -- column nullability --------------------------------------------------------------------

def set_required(schema: T.Schema, path: str, required: bool) -> T.Schema:
    parts = SE._split(path)

    def change(fields, name):
        f = SE._find(fields, name, path)
        return tuple(replace(x, required=required) if x is f else x for x in fields)
    return SE._with_fields(schema, SE._rebuild(schema.fields, parts, change, path))


def _nulls_possible(c, field_id: int) -> str | None:
    """Why a live data file of some ref may hold a null in `field_id`, or None."""
    from icefloe.impl.format.manifest import ManifestContent
    heads = {ref.snapshot_id for ref in c.base.refs.values()}
    for sid in sorted(heads):
        snap = c.base.snapshot_by_id(sid)
        for _, e in c.tree.live_entries(snap, ManifestContent.DATA):
            counts = e.data_file.null_value_counts
            if counts is None or field_id not in counts:
                return f"{e.data_file.file_path} has no null count for it (cannot be checked)"
            if counts[field_id]:
                return f"{e.data_file.file_path} holds {counts[field_id]} null(s)"
    return None


@dataclass(frozen=True)
class NoSnapshotSince:
    """No snapshot was added since the change was planned (a concurrent write could hold
    a null in a column being made required)."""
    snapshot_ids: frozenset

    def check(self, base, starting_snapshot_id, tree):
        added = {s.snapshot_id for s in base.snapshots} - self.snapshot_ids
        if added:
            return f"snapshot(s) {sorted(added)} were added concurrently; check the column again"
        return None


class NullabilityChange(SE.SchemaChange):
    """Make column `path` optional, or required (checked against every live file)."""

    def __init__(self, path: str, required: bool):
        def change(m):
            f = m.schema().find_field(path)
            if f.required == required:
                raise LayoutEvolutionError(f"column {path!r} is already {'required' if required else 'optional'}")
            return set_required(m.schema(), path, required), m.last_column_id
        super().__init__(change, f"made {path} {'required' if required else 'optional'}")
        self.path, self.required = path, required
        self.unchanged: NoSnapshotSince | None = None

    def plan(self, c) -> bool:
        planned = super().plan(c)
        if self.required:
            field = c.base.schema().find_field(self.path)
            why = _nulls_possible(c, field.field_id)
            if why:
                raise LayoutEvolutionError(f"column {self.path!r} cannot be made required: {why}")
            self.unchanged = NoSnapshotSince(frozenset(s.snapshot_id for s in c.base.snapshots))
        return planned

    def validations(self, c):
        return super().validations(c) + ([self.unchanged] if self.unchanged else [])
