"""Schema evolution (Iceberg spec "Schema Evolution", "Column Projection"; Iceberg-Java
`UpdateSchema`; REST `add-schema` / `set-current-schema`): add, rename and drop columns,
widen a column's type, each as a new schema committed through the ordinary commit loop
as a metadata-only change.

Field-id safety is the whole point, because data files name columns by field id:
- a new column gets `last-column-id + 1`, never a reused id (a dropped column's id stays
  retired: old data files still hold values under it, which must never resurface as
  the new column's);
- a rename changes the name only; every data file still reads by id;
- a drop removes the field from the new schema; old files keep the values, unread.
  Refused: an identifier field, a partition source column (of any partition spec: the
  manifests written under an older spec still need it), a sort-order source column, the
  last column;
- widening only as the spec allows: int -> long, float -> double, decimal(P, S) ->
  decimal(P', S) with P' > P. Old files and their bounds are read as the wider type
  (conversions.from_bytes reads a 4-byte bound of a long/double column).
A new column is optional: a required one needs a default value (format v3).

A schema change commits as `add_schema` (reusing the id of an identical existing schema,
as Java does) and `set_current_schema`, with the validation that the current schema and
last-column-id are still those the change was made from (REST's assert-current-schema-id
and assert-last-assigned-field-id): a concurrent schema change is a Conflict, a
concurrent append is not.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from icefloe.impl.format import types as T
from icefloe.impl.format.defaults import check_default
from icefloe.impl.format.metadata import check_schema_for_version
from icefloe.impl.format.metadata import MAIN_BRANCH, TableMetadata
from icefloe.impl.outcomes import InvalidArgument
from icefloe.impl.table.operations import _MetadataOnly
from icefloe.impl.table.updates import InvalidUpdate, Update

DECIMAL_PRECISION_MAX = 38


class SchemaEvolutionError(InvalidArgument):
    """A schema change the spec does not allow, or that names no such column."""


# -- pure changes to a schema --------------------------------------------------------------

def _split(path: str) -> list[str]:
    parts = path.split(".")
    if not path or any(not p for p in parts):
        raise SchemaEvolutionError(f"{path!r} is not a column name (nested fields: parent.child)")
    return parts


def _rebuild(fields: tuple[T.NestedField, ...], parts: list[str], change: Callable, where: str
             ) -> tuple[T.NestedField, ...]:
    """`fields` with `change(fields, name)` applied in the struct that `parts[:-1]` names."""
    if len(parts) == 1:
        return tuple(change(fields, parts[0]))
    head = next((f for f in fields if f.name == parts[0]), None)
    if head is None:
        raise SchemaEvolutionError(f"no column {where!r}")
    if not isinstance(head.type, T.StructType):
        raise SchemaEvolutionError(f"{where!r}: {parts[0]!r} is a {head.type}, not a struct")
    inner = _rebuild(head.type.fields, parts[1:], change, where)
    return tuple(replace(f, type=T.StructType(inner)) if f is head else f for f in fields)


def _find(fields, name: str, where: str) -> T.NestedField:
    found = next((f for f in fields if f.name == name), None)
    if found is None:
        raise SchemaEvolutionError(f"no column {where!r}")
    return found


def _with_fields(schema: T.Schema, fields, schema_id: int | None = None) -> T.Schema:
    return T.Schema(fields, schema.schema_id if schema_id is None else schema_id, schema.identifier_field_ids)


def add_column(schema: T.Schema, last_column_id: int, path: str, column_type: T.IcebergType | str,
               doc: str | None = None, *, initial_default=None, write_default=None,
               required: bool = False) -> tuple[T.Schema, int]:
    """A new column `path` (parent.child adds to a struct); (schema, last-column-id). v3
    defaults (spec "Default values") in their JSON single-value form: `initial_default`
    is what rows written before the column read as, `write_default` what a write without
    the column stores (default: the initial one). A required column needs an initial
    default (the rows already written must have a value)."""
    parts = _split(path)
    if isinstance(column_type, str):
        try:
            column_type = T.parse_primitive(column_type.strip().lower().replace(" ", ""))
        except T.UnsupportedType as e:
            raise SchemaEvolutionError(e.reason) from None
        except T.FormatError:
            raise SchemaEvolutionError(
                f"unknown type {column_type!r}: boolean, int, long, float, double, decimal(P,S), date, time, "
                "timestamp, timestamptz, string, uuid, binary, fixed[N]; in v3 also timestamp_ns, "
                "timestamptz_ns, unknown") from None
    new_id = last_column_id + 1
    if write_default is None:
        write_default = initial_default
    for which, value in (("initial-default", initial_default), ("write-default", write_default)):
        if value is not None:
            try:
                check_default(column_type, value, which)
            except T.FormatError as e:
                raise SchemaEvolutionError(f"column {path!r}: {e}") from None
    if required and initial_default is None:
        raise SchemaEvolutionError(f"a required column {path!r} needs an initial default for the rows written before it")
    try:
        field = T.NestedField(new_id, parts[-1], column_type, required, doc, initial_default, write_default)
    except T.FormatError as e:
        raise SchemaEvolutionError(f"column {path!r}: {e.reason}") from None

    def change(fields, name):
        if any(f.name == name for f in fields):
            raise SchemaEvolutionError(f"column {path!r} exists already")
        return (*fields, field)
    return _with_fields(schema, _rebuild(schema.fields, parts, change, path)), new_id


def rename_column(schema: T.Schema, path: str, new_name: str) -> T.Schema:
    parts = _split(path)
    if not new_name or "." in new_name:
        raise SchemaEvolutionError(f"{new_name!r} is not a column name (no '.', not empty)")

    def change(fields, name):
        field = _find(fields, name, path)
        if new_name != name and any(f.name == new_name for f in fields):
            raise SchemaEvolutionError(f"cannot rename {path!r} to {new_name!r}: that column exists")
        return tuple(replace(f, name=new_name) if f is field else f for f in fields)
    return _with_fields(schema, _rebuild(schema.fields, parts, change, path))


def _ids_under(field: T.NestedField) -> set[int]:
    out = {field.field_id}
    stack = [field.type]
    while stack:
        t = stack.pop()
        children = (t.fields if isinstance(t, T.StructType) else (t.element_field,) if isinstance(t, T.ListType)
                    else (t.key_field, t.value_field) if isinstance(t, T.MapType) else ())
        for c in children:
            out.add(c.field_id)
            stack.append(c.type)
    return out


def drop_column(schema: T.Schema, path: str, metadata: TableMetadata) -> T.Schema:
    """`schema` without column `path`; refused for what still needs the column."""
    parts = _split(path)
    field = schema.field_by_name(path)
    if field is None:
        raise SchemaEvolutionError(f"no column {path!r}")
    gone = _ids_under(field)
    if gone & set(schema.identifier_field_ids):
        raise SchemaEvolutionError(f"cannot drop {path!r}: it is an identifier field of the table")
    for spec in metadata.partition_specs:
        for pf in spec.fields:
            if pf.source_id in gone:
                raise SchemaEvolutionError(f"cannot drop {path!r}: partition field {pf.name!r} of spec {spec.spec_id} "
                                           "is derived from it (manifests written under that spec still need it)")
    for order in metadata.sort_orders:
        for sf in getattr(order, "fields", ()):
            if getattr(sf, "source_id", None) in gone:
                raise SchemaEvolutionError(f"cannot drop {path!r}: sort order {order.order_id} sorts by it")
    if len(parts) == 1 and len(schema.fields) == 1:
        raise SchemaEvolutionError(f"cannot drop {path!r}: it is the table's only column")

    def change(fields, name):
        target = _find(fields, name, path)
        return tuple(f for f in fields if f is not target)
    return _with_fields(schema, _rebuild(schema.fields, parts, change, path))


def widening_allowed(old: T.IcebergType, new: T.IcebergType) -> bool:
    """The spec's type promotions (format v2)."""
    if isinstance(old, T.IntegerType) and isinstance(new, T.LongType):
        return True
    if isinstance(old, T.FloatType) and isinstance(new, T.DoubleType):
        return True
    if isinstance(old, T.DecimalType) and isinstance(new, T.DecimalType):
        return new.scale == old.scale and old.precision < new.precision <= DECIMAL_PRECISION_MAX
    return False


def widen_column(schema: T.Schema, path: str, new_type: T.IcebergType | str) -> T.Schema:
    parts = _split(path)
    if isinstance(new_type, str):
        try:
            new_type = T.parse_primitive(new_type.strip().lower().replace(" ", ""))
        except T.FormatError:
            raise SchemaEvolutionError(f"unknown type {new_type!r}") from None

    def change(fields, name):
        field = _find(fields, name, path)
        if field.type == new_type:
            raise SchemaEvolutionError(f"{path!r} is {new_type} already")
        if not widening_allowed(field.type, new_type):
            raise SchemaEvolutionError(
                f"cannot change {path!r} from {field.type} to {new_type}: the allowed widenings are int -> long, "
                "float -> double, decimal(P,S) -> decimal(P',S) with P' > P (up to 38)")
        return tuple(replace(f, type=new_type) if f is field else f for f in fields)
    return _with_fields(schema, _rebuild(schema.fields, parts, change, path))


# -- metadata updates (REST: add-schema, set-current-schema) -------------------------------

def _same_columns(a: T.Schema, b: T.Schema) -> bool:
    return a.fields == b.fields and a.identifier_field_ids == b.identifier_field_ids


def add_schema(schema: T.Schema, last_column_id: int) -> Update:
    """Add `schema` (its id: an identical existing schema's, else one above every id) and
    raise last-column-id to `last_column_id` (never lowered)."""
    def apply(m: TableMetadata) -> TableMetadata:
        check_schema_for_version(schema, m.format_version)  # v3 types and defaults need v3
        if last_column_id < m.last_column_id:
            raise InvalidUpdate(f"last-column-id {last_column_id} is below the table's {m.last_column_id}")
        if any(_same_columns(s, schema) for s in m.schemas):
            return replace(m, last_column_id=last_column_id)
        new_id = max(s.schema_id for s in m.schemas) + 1
        return replace(m, schemas=m.schemas + (_with_fields(schema, schema.fields, new_id),),
                       last_column_id=last_column_id)
    return apply


def set_current_schema(schema: T.Schema) -> Update:
    """Make the schema with `schema`'s columns current (after `add_schema`)."""
    def apply(m: TableMetadata) -> TableMetadata:
        found = next((s for s in m.schemas if _same_columns(s, schema)), None)
        if found is None:
            raise InvalidUpdate("set-current-schema: no such schema (add it first)")
        return replace(m, current_schema_id=found.schema_id)
    return apply


# -- the commit ----------------------------------------------------------------------------

@dataclass(frozen=True)
class AssertCurrentSchema:
    """The current schema id and last-column-id are those the change was made from."""
    schema_id: int
    last_column_id: int

    def check(self, base, starting_snapshot_id, tree):
        if base.current_schema_id != self.schema_id or base.last_column_id != self.last_column_id:
            return (f"the schema changed concurrently (current schema {base.current_schema_id}, last column id "
                    f"{base.last_column_id}; the change was made from {self.schema_id}, {self.last_column_id})")
        return None


class SchemaChange(_MetadataOnly):
    """One schema change, `change(metadata) -> (new schema, new last-column-id)`, made
    from the base read at plan time and committed as add_schema + set_current_schema."""
    ref = MAIN_BRANCH

    def __init__(self, change: Callable[[TableMetadata], tuple[T.Schema, int]], description: str = ""):
        self.change, self.description = change, description
        self.schema: T.Schema | None = None
        self.last_column_id = 0
        self.validation: AssertCurrentSchema | None = None

    def plan(self, c) -> bool:
        base = c.base
        self.schema, self.last_column_id = self.change(base)
        self.validation = AssertCurrentSchema(base.current_schema_id, base.last_column_id)
        return True

    def validations(self, c):
        return [self.validation]

    def updates(self, c, snapshot):
        return [add_schema(self.schema, self.last_column_id), set_current_schema(self.schema)]


def add_column_change(path: str, column_type, doc: str | None = None, **defaults) -> SchemaChange:
    """`defaults`: initial_default, write_default, required (add_column)."""
    def change(m):
        out = add_column(m.schema(), m.last_column_id, path, column_type, doc, **defaults)
        check_schema_for_version(out[0], m.format_version)  # refused at plan time, by name
        return out
    return SchemaChange(change, f"added column {path}")


def set_write_default(schema: T.Schema, path: str, write_default) -> T.Schema:
    """Change a column's write-default (spec "Default values": it can change through schema
    evolution; the initial default never does)."""
    parts = _split(path)

    def change(fields, name):
        f = _find(fields, name, path)
        if write_default is not None:
            try:
                check_default(f.type, write_default, "write-default")
            except T.FormatError as e:
                raise SchemaEvolutionError(f"column {path!r}: {e}") from None
        return tuple(replace(x, write_default=write_default) if x is f else x for x in fields)
    return _with_fields(schema, _rebuild(schema.fields, parts, change, path))


def set_write_default_change(path: str, write_default) -> SchemaChange:
    def change(m):
        out = set_write_default(m.schema(), path, write_default)
        check_schema_for_version(out, m.format_version)
        return out, m.last_column_id
    return SchemaChange(change, f"set the write default of {path}")


def rename_column_change(path: str, new_name: str) -> SchemaChange:
    return SchemaChange(lambda m: (rename_column(m.schema(), path, new_name), m.last_column_id),
                        f"renamed {path} to {new_name}")


def drop_column_change(path: str) -> SchemaChange:
    return SchemaChange(lambda m: (drop_column(m.schema(), path, m), m.last_column_id), f"dropped column {path}")


def widen_column_change(path: str, new_type) -> SchemaChange:
    return SchemaChange(lambda m: (widen_column(m.schema(), path, new_type), m.last_column_id),
                        f"widened {path} to {new_type}")
