"""Iceberg types and schemas (Iceberg spec: "Schemas and Data Types", "Appendix C: JSON
serialization" -> Schemas, and "Appendix: Parquet" field-id mapping for Arrow).

Types are immutable values: primitives compare by value (`DecimalType(9, 2)`), nested
types carry the field ids the spec assigns to every struct field, list element and map
key/value. `str(type)` is the spec's JSON type string for primitives.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterator

import pyarrow as pa

from icefloe.impl.outcomes import IcefloeError

__all__ = [
    "FormatError", "IcebergType", "PrimitiveType", "BooleanType", "IntegerType", "LongType",
    "FloatType", "DoubleType", "DecimalType", "DateType", "TimeType", "TimestampType",
    "TimestamptzType", "StringType", "UUIDType", "FixedType", "BinaryType", "NestedField",
    "StructType", "ListType", "MapType", "Schema", "BOOLEAN", "INT", "LONG", "FLOAT", "DOUBLE",
    "DATE", "TIME", "TIMESTAMP", "TIMESTAMPTZ", "STRING", "UUID", "BINARY",
    "parse_primitive", "type_from_json", "type_to_json", "schema_to_json", "schema_from_json",
    "schema_to_arrow", "schema_from_arrow", "type_to_arrow", "FIELD_ID_KEY", "json_get",
    "TimestampNsType", "TimestamptzNsType", "UnknownType", "TIMESTAMP_NS", "TIMESTAMPTZ_NS", "UNKNOWN",
    "UnsupportedType", "walk_fields", "V3_TYPES_REFUSED",
]

FIELD_ID_KEY = b"PARQUET:field_id"
NESTING_DEPTH_MAX = 64  # deeper JSON types are rejected rather than risking RecursionError


class FormatError(IcefloeError):
    """Input that does not follow the Iceberg format. `field` is a path such as
    `schemas[0].fields[2].type` when known."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message if field is None else f"{field}: {message}")
        self.field, self.reason = field, message


# -- primitive types -----------------------------------------------------------------------

class IcebergType:
    is_primitive = False
    added_in_version = 1  # the first format version whose tables may hold the type


class UnsupportedType(FormatError):
    """A type of the spec that icefloe does not implement (variant, geometry, geography),
    refused by name rather than read as something else."""


@dataclass(frozen=True)
class PrimitiveType(IcebergType):
    is_primitive = True
    name = "?"

    def __str__(self) -> str:
        return self.name


class BooleanType(PrimitiveType): name = "boolean"
class IntegerType(PrimitiveType): name = "int"
class LongType(PrimitiveType): name = "long"
class FloatType(PrimitiveType): name = "float"
class DoubleType(PrimitiveType): name = "double"
class DateType(PrimitiveType): name = "date"
class TimeType(PrimitiveType): name = "time"
class TimestampType(PrimitiveType): name = "timestamp"
class TimestamptzType(PrimitiveType): name = "timestamptz"
class StringType(PrimitiveType): name = "string"
class UUIDType(PrimitiveType): name = "uuid"
class BinaryType(PrimitiveType): name = "binary"


class TimestampNsType(PrimitiveType):  # v3 ("Primitive Types"): nanoseconds since the epoch
    name = "timestamp_ns"
    added_in_version = 3


class TimestamptzNsType(PrimitiveType):
    name = "timestamptz_ns"
    added_in_version = 3


class UnknownType(PrimitiveType):  # v3: always null, optional, never stored in data files
    name = "unknown"
    added_in_version = 3


@dataclass(frozen=True)
class DecimalType(PrimitiveType):
    precision: int
    scale: int

    def __post_init__(self):
        if not 1 <= self.precision <= 38:
            raise FormatError(f"decimal precision must be in 1..38, got {self.precision}")

    def __str__(self) -> str:
        return f"decimal({self.precision}, {self.scale})"


@dataclass(frozen=True)
class FixedType(PrimitiveType):
    length: int

    def __post_init__(self):
        if self.length < 1:
            raise FormatError(f"fixed length must be positive, got {self.length}")

    def __str__(self) -> str:
        return f"fixed[{self.length}]"


BOOLEAN, INT, LONG, FLOAT, DOUBLE = BooleanType(), IntegerType(), LongType(), FloatType(), DoubleType()
DATE, TIME, TIMESTAMP, TIMESTAMPTZ = DateType(), TimeType(), TimestampType(), TimestamptzType()
STRING, UUID, BINARY = StringType(), UUIDType(), BinaryType()
TIMESTAMP_NS, TIMESTAMPTZ_NS, UNKNOWN = TimestampNsType(), TimestamptzNsType(), UnknownType()
_PRIMITIVES = {t.name: t for t in (BOOLEAN, INT, LONG, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP,
                                   TIMESTAMPTZ, STRING, UUID, BINARY, TIMESTAMP_NS, TIMESTAMPTZ_NS,
                                   UNKNOWN)}
# v3 types icefloe refuses by name (spec "Semi-structured Types", "Primitive Types").
V3_TYPES_REFUSED = ("variant", "geometry", "geography")
_DECIMAL_RE = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")
_FIXED_RE = re.compile(r"fixed\[\s*(\d+)\s*\]")


def parse_primitive(text: str) -> PrimitiveType:
    """Parse a spec type string: "long", "decimal(9, 2)", "fixed[16]"."""
    if text in _PRIMITIVES:
        return _PRIMITIVES[text]
    if m := _DECIMAL_RE.fullmatch(text):
        return DecimalType(int(m[1]), int(m[2]))
    if m := _FIXED_RE.fullmatch(text):
        return FixedType(int(m[1]))
    for refused in V3_TYPES_REFUSED:
        if text == refused or text.startswith(refused + "("):
            raise UnsupportedType(f"type {text!r} (format v3) is not supported by icefloe")
    raise FormatError(f"unknown type {text!r}")


# -- nested types --------------------------------------------------------------------------

@dataclass(frozen=True)
class NestedField:
    """A struct field. `initial_default` / `write_default` (v3, spec "Default values") are
    kept in the JSON single-value form (Appendix D) the metadata stores them in; None is
    "no default" (null)."""
    field_id: int
    name: str
    type: IcebergType
    required: bool
    doc: str | None = None
    initial_default: Any = field(default=None, hash=False)
    write_default: Any = field(default=None, hash=False)

    def __post_init__(self):
        if isinstance(self.type, UnknownType) and self.required:
            raise FormatError(f"field {self.name!r}: an unknown-typed field must be optional")
        if isinstance(self.type, UnknownType) and (self.initial_default is not None
                                                   or self.write_default is not None):
            raise FormatError(f"field {self.name!r}: an unknown-typed field defaults to null")

    def __str__(self) -> str:
        req = "required" if self.required else "optional"
        return f"{self.field_id}: {self.name}: {req} {self.type}"


@dataclass(frozen=True)
class StructType(IcebergType):
    fields: tuple[NestedField, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))

    def __str__(self) -> str:
        return "struct<" + ", ".join(str(f) for f in self.fields) + ">"

    def field(self, field_id: int) -> NestedField | None:
        return next((f for f in self.fields if f.field_id == field_id), None)


@dataclass(frozen=True)
class ListType(IcebergType):
    element_id: int
    element_type: IcebergType
    element_required: bool = True

    @property
    def element_field(self) -> NestedField:
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    def __str__(self) -> str:
        return f"list<{self.element_type}>"


@dataclass(frozen=True)
class MapType(IcebergType):
    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = True

    @property
    def key_field(self) -> NestedField:
        return NestedField(self.key_id, "key", self.key_type, True)

    @property
    def value_field(self) -> NestedField:
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"


def _children(t: IcebergType) -> tuple[NestedField, ...]:
    if isinstance(t, StructType):
        return t.fields
    if isinstance(t, ListType):
        return (t.element_field,)
    if isinstance(t, MapType):
        return (t.key_field, t.value_field)
    return ()


def walk_fields(schema: "Schema") -> Iterator[tuple[NestedField, str]]:
    """Every field of `schema` with its dotted name, parents before children."""
    return schema._walk()


# -- schema --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Schema:
    fields: tuple[NestedField, ...]
    schema_id: int = 0
    identifier_field_ids: tuple[int, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "identifier_field_ids", tuple(self.identifier_field_ids))
        ids = [f.field_id for f, _ in self._walk()]
        if len(ids) != len(set(ids)):
            raise FormatError(f"duplicate field ids in schema {self.schema_id}")
        for fid in self.identifier_field_ids:
            if fid not in self._by_id:
                raise FormatError(f"identifier field id {fid} is not in schema {self.schema_id}")

    def _walk(self) -> Iterator[tuple[NestedField, str]]:
        """Every field with its full dotted name, parents before children."""
        stack = [(f, f.name) for f in reversed(self.fields)]
        while stack:
            f, name = stack.pop()
            yield f, name
            stack.extend((c, f"{name}.{c.name}") for c in reversed(_children(f.type)))

    @cached_property
    def _by_id(self) -> dict[int, tuple[NestedField, str]]:
        return {f.field_id: (f, name) for f, name in self._walk()}

    @cached_property
    def _by_name(self) -> dict[str, NestedField]:
        return {name: f for f, name in self._walk()}

    def as_struct(self) -> StructType:
        return StructType(self.fields)

    def field_by_id(self, field_id: int) -> NestedField | None:
        hit = self._by_id.get(field_id)
        return hit[0] if hit else None

    def field_by_name(self, name: str, case_sensitive: bool = True) -> NestedField | None:
        if case_sensitive:
            return self._by_name.get(name)
        hits = [f for n, f in self._by_name.items() if n.lower() == name.lower()]
        return hits[0] if len(hits) == 1 else None

    def find_field(self, key: int | str) -> NestedField:
        """The field with id or dotted name `key`; FormatError if there is none."""
        f = self.field_by_id(key) if isinstance(key, int) else self.field_by_name(key)
        if f is None:
            raise FormatError(f"no field {key!r} in schema {self.schema_id}")
        return f

    def find_type(self, key: int | str) -> IcebergType:
        return self.find_field(key).type

    def column_name(self, field_id: int) -> str | None:
        hit = self._by_id.get(field_id)
        return hit[1] if hit else None

    @property
    def highest_field_id(self) -> int:
        return max(self._by_id, default=0)

    def __str__(self) -> str:
        return "table {\n" + "".join(f"  {f}\n" for f in self.fields) + "}"


# -- JSON serde (Appendix C) ---------------------------------------------------------------

def type_to_json(t: IcebergType) -> Any:
    if isinstance(t, PrimitiveType):
        return str(t)
    if isinstance(t, StructType):
        return {"type": "struct", "fields": [_field_to_json(f) for f in t.fields]}
    if isinstance(t, ListType):
        return {"type": "list", "element-id": t.element_id,
                "element-required": t.element_required, "element": type_to_json(t.element_type)}
    if isinstance(t, MapType):
        return {"type": "map", "key-id": t.key_id, "key": type_to_json(t.key_type),
                "value-id": t.value_id, "value-required": t.value_required,
                "value": type_to_json(t.value_type)}
    raise FormatError(f"not an Iceberg type: {t!r}")


def _field_to_json(f: NestedField) -> dict:
    out = {"id": f.field_id, "name": f.name, "required": f.required, "type": type_to_json(f.type)}
    if f.doc is not None:
        out["doc"] = f.doc
    if f.initial_default is not None:
        out["initial-default"] = f.initial_default
    if f.write_default is not None:
        out["write-default"] = f.write_default
    return out


def json_get(obj: Any, key: str, kind: type | tuple, path: str, default: Any = ...) -> Any:
    """`obj[key]` checked to be of `kind`; FormatError naming `path.key` otherwise. With a
    `default`, a missing or null value yields the default."""
    if not isinstance(obj, dict):
        raise FormatError(f"expected a JSON object, got {type(obj).__name__}", path or None)
    where = f"{path}.{key}" if path else key
    if key not in obj or (obj[key] is None and default is not ...):
        if default is ...:
            raise FormatError("missing required field", where)
        return default
    value = obj[key]
    # bool is an int in Python but never a JSON number.
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
        raise FormatError(f"expected {_kind_name(kind)}, got {type(value).__name__}", where)
    return value


def _as_tuple(kind) -> tuple:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind) -> str:
    names = {int: "integer", str: "string", bool: "boolean", list: "array", dict: "object"}
    return " or ".join(names.get(k, k.__name__) for k in _as_tuple(kind))


def type_from_json(data: Any, path: str = "type", depth: int = 0) -> IcebergType:
    if depth > NESTING_DEPTH_MAX:
        raise FormatError("type nested too deeply", path)
    if isinstance(data, str):
        try:
            return parse_primitive(data)
        except FormatError as e:
            raise type(e)(str(e), path) from None
    kind = json_get(data, "type", str, path)
    if kind == "struct":
        raw = json_get(data, "fields", list, path)
        return StructType(tuple(_field_from_json(f, f"{path}.fields[{i}]", depth)
                                for i, f in enumerate(raw)))
    if kind == "list":
        return ListType(json_get(data, "element-id", int, path),
                        type_from_json(json_get(data, "element", (str, dict), path),
                                       f"{path}.element", depth + 1),
                        json_get(data, "element-required", bool, path))
    if kind == "map":
        return MapType(json_get(data, "key-id", int, path),
                       type_from_json(json_get(data, "key", (str, dict), path), f"{path}.key", depth + 1),
                       json_get(data, "value-id", int, path),
                       type_from_json(json_get(data, "value", (str, dict), path),
                                      f"{path}.value", depth + 1),
                       json_get(data, "value-required", bool, path))
    raise FormatError(f"unknown nested type {kind!r}", f"{path}.type")


def _field_from_json(data: Any, path: str, depth: int) -> NestedField:
    t = type_from_json(json_get(data, "type", (str, dict), path), f"{path}.type", depth + 1)
    # Kept as JSON; checked against the type by defaults.py (which needs conversions.py).
    defaults = {key.replace("-", "_"): data.get(key) if isinstance(data, dict) else None
                for key in ("initial-default", "write-default")}
    args = (json_get(data, "id", int, path), json_get(data, "name", str, path), t,
            json_get(data, "required", bool, path), json_get(data, "doc", str, path, None))
    try:
        return NestedField(*args, **defaults)
    except FormatError as e:
        raise FormatError(e.reason, path) from None


def schema_to_json(schema: Schema) -> dict:
    return {"type": "struct", "schema-id": schema.schema_id,
            "identifier-field-ids": list(schema.identifier_field_ids),
            "fields": [_field_to_json(f) for f in schema.fields]}


def schema_from_json(data: Any, path: str = "schema") -> Schema:
    struct = type_from_json(data, path)
    if not isinstance(struct, StructType):
        raise FormatError("a schema must be a struct", f"{path}.type")
    ids = json_get(data, "identifier-field-ids", list, path, [])
    for i, fid in enumerate(ids):
        if not isinstance(fid, int) or isinstance(fid, bool):
            raise FormatError("expected integer", f"{path}.identifier-field-ids[{i}]")
    try:
        return Schema(struct.fields, json_get(data, "schema-id", int, path, 0), tuple(ids))
    except FormatError as e:
        raise FormatError(str(e), path) from None


# -- Arrow conversion ----------------------------------------------------------------------

_TO_ARROW = {
    BOOLEAN: pa.bool_(), INT: pa.int32(), LONG: pa.int64(), FLOAT: pa.float32(),
    DOUBLE: pa.float64(), DATE: pa.date32(), TIME: pa.time64("us"),
    TIMESTAMP: pa.timestamp("us"), TIMESTAMPTZ: pa.timestamp("us", tz="UTC"),
    STRING: pa.string(), UUID: pa.uuid(), BINARY: pa.binary(),
    TIMESTAMP_NS: pa.timestamp("ns"), TIMESTAMPTZ_NS: pa.timestamp("ns", tz="UTC"), UNKNOWN: pa.null(),
}


def _arrow_field(f: NestedField) -> pa.Field:
    meta = {FIELD_ID_KEY: str(f.field_id).encode()}
    if f.doc is not None:
        meta[b"doc"] = f.doc.encode()
    return pa.field(f.name, type_to_arrow(f.type), nullable=not f.required, metadata=meta)


def type_to_arrow(t: IcebergType) -> pa.DataType:
    if t in _TO_ARROW:
        return _TO_ARROW[t]
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    if isinstance(t, StructType):
        return pa.struct([_arrow_field(f) for f in t.fields])
    if isinstance(t, ListType):
        return pa.list_(_arrow_field(t.element_field))
    if isinstance(t, MapType):
        return pa.map_(_arrow_field(t.key_field), _arrow_field(t.value_field))
    raise FormatError(f"no Arrow type for {t}")


def schema_to_arrow(schema: Schema) -> pa.Schema:
    return pa.schema([_arrow_field(f) for f in schema.fields])


def _arrow_children(t: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [t.value_field]
    return []


def _arrow_fields_deep(fields) -> Iterator[pa.Field]:
    for f in fields:
        yield f
        yield from _arrow_fields_deep(_arrow_children(f.type))


def _primitive_from_arrow(t: pa.DataType, downcast_ns: bool) -> PrimitiveType:
    if getattr(t, "extension_name", None) == "arrow.uuid":
        return UUID
    checks = [(pa.types.is_boolean, BOOLEAN), (pa.types.is_int32, INT), (pa.types.is_int64, LONG),
              (pa.types.is_float32, FLOAT), (pa.types.is_float64, DOUBLE),
              (pa.types.is_date32, DATE), (pa.types.is_string, STRING),
              (pa.types.is_large_string, STRING), (pa.types.is_string_view, STRING),
              (pa.types.is_binary, BINARY), (pa.types.is_large_binary, BINARY),
              (pa.types.is_binary_view, BINARY)]
    for check, result in checks:
        if check(t):
            return result
    # Narrower integers widen losslessly to int, as Iceberg has no 8/16-bit types.
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return INT
    if pa.types.is_uint32(t):
        return LONG
    if pa.types.is_decimal(t):
        return DecimalType(t.precision, t.scale)
    if pa.types.is_fixed_size_binary(t):
        return FixedType(t.byte_width)
    if pa.types.is_time(t) and t.unit in ("s", "ms", "us"):
        return TIME
    if pa.types.is_timestamp(t):
        if t.unit == "ns" and not downcast_ns:  # a v3 type: a v1/v2 table refuses it by name
            return TIMESTAMP_NS if t.tz is None else TIMESTAMPTZ_NS
        return TIMESTAMP if t.tz is None else TIMESTAMPTZ
    if pa.types.is_null(t):
        return UNKNOWN
    raise FormatError(f"Arrow type {t} has no Iceberg equivalent")


def schema_from_arrow(arrow_schema: pa.Schema, schema_id: int = 0, *,
                      downcast_ns: bool = False) -> Schema:
    """Convert an Arrow schema. Uses `PARQUET:field_id` metadata when every field (nested
    ones included) carries it; otherwise assigns fresh ids 1.. level by level, each struct's
    fields before their children (the order Iceberg's fresh-id assignment uses)."""
    deep = list(_arrow_fields_deep(arrow_schema))
    use_ids = bool(deep) and all(f.metadata and FIELD_ID_KEY in f.metadata for f in deep)
    counter = iter(range(1, 1 << 31))

    def field_id(f: pa.Field) -> int:
        if not use_ids:
            return next(counter)
        try:
            return int(f.metadata[FIELD_ID_KEY])
        except ValueError:
            raise FormatError(f"bad {FIELD_ID_KEY.decode()} on {f.name!r}") from None

    def convert(t: pa.DataType) -> IcebergType:
        children = _arrow_children(t)
        if not children:
            return _primitive_from_arrow(t, downcast_ns)
        child_ids = [field_id(c) for c in children]  # this level first, then recurse
        types = [convert(c.type) for c in children]
        if pa.types.is_struct(t):
            return StructType(tuple(_nested(c, i, ty) for c, i, ty in zip(children, child_ids, types)))
        if pa.types.is_map(t):
            return MapType(child_ids[0], types[0], child_ids[1], types[1], not children[1].nullable)
        return ListType(child_ids[0], types[0], not children[0].nullable)

    top_ids = [field_id(f) for f in arrow_schema]
    top = [_nested(f, i, convert(f.type)) for f, i in zip(arrow_schema, top_ids)]
    return Schema(tuple(top), schema_id)


def _nested(f: pa.Field, field_id: int, t: IcebergType) -> NestedField:
    doc = f.metadata.get(b"doc").decode() if f.metadata and b"doc" in f.metadata else None
    return NestedField(field_id, f.name, t, not f.nullable, doc)
