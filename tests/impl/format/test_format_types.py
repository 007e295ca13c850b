"""Iceberg types and schemas: type strings, JSON serde, lookups and Arrow conversion."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

from icefloe.impl.format.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, FIELD_ID_KEY, FLOAT, INT, LONG, STRING, TIME, TIMESTAMP,
    TIMESTAMPTZ, UUID, DecimalType, FixedType, FormatError, ListType, MapType, NestedField,
    Schema, StructType, parse_primitive, schema_from_arrow, schema_from_json, schema_to_arrow,
    schema_to_json,
)
from format_strategies import primitive_types, schemas

SPEC_STRINGS = {BOOLEAN: "boolean", INT: "int", LONG: "long", FLOAT: "float", DOUBLE: "double",
                DATE: "date", TIME: "time", TIMESTAMP: "timestamp", TIMESTAMPTZ: "timestamptz",
                STRING: "string", UUID: "uuid", BINARY: "binary",
                DecimalType(9, 2): "decimal(9, 2)", FixedType(16): "fixed[16]"}

NESTED = Schema((
    NestedField(1, "id", LONG, True, "row id"),
    NestedField(2, "point", StructType((NestedField(5, "x", DOUBLE, True),
                                        NestedField(6, "y", DOUBLE, False))), False),
    NestedField(3, "tags", ListType(7, STRING, False), False),
    NestedField(4, "props", MapType(8, STRING, 9, StructType((NestedField(10, "v", INT, False),)),
                                    True), True),
), schema_id=3, identifier_field_ids=(1,))


def test_type_strings_are_the_spec_json_strings():
    """Goal: str(type) is the spec's JSON type string. Method: a table of every primitive."""
    for t, text in SPEC_STRINGS.items():
        assert str(t) == text
        assert parse_primitive(text) == t
    assert parse_primitive("decimal(38,0)") == DecimalType(38, 0)


def test_types_compare_by_value_and_kind():
    """Goal: primitives are values; different kinds never compare equal. Method: pairs."""
    assert DecimalType(9, 2) == DecimalType(9, 2) != DecimalType(9, 3)
    assert INT != LONG and FLOAT != DOUBLE and TIMESTAMP != TIMESTAMPTZ
    assert len({INT, LONG, DATE, TIME}) == 4


@pytest.mark.parametrize("text", ["int32", "decimal(9)", "decimal(39, 0)", "fixed[0]", "fixed[x]", ""])
def test_bad_type_strings_raise_format_error(text):
    """Goal: an unknown or invalid type string is a typed error. Method: bad examples."""
    with pytest.raises(FormatError):
        parse_primitive(text)


def test_schema_lookup_by_id_and_dotted_name():
    """Goal: fields are found by id and by full dotted name, nested too. Method: fixed schema."""
    assert NESTED.find_field("point.y").field_id == 6
    assert NESTED.find_field("tags.element").type == STRING
    assert NESTED.find_field("props.value.v").field_id == 10
    assert NESTED.find_field(8).name == "key"
    assert NESTED.column_name(10) == "props.value.v"
    assert NESTED.field_by_name("POINT.X", case_sensitive=False).field_id == 5
    assert NESTED.field_by_name("nope") is None and NESTED.field_by_id(99) is None
    assert NESTED.highest_field_id == 10
    with pytest.raises(FormatError):
        NESTED.find_field("point.z")


def test_schema_rejects_duplicate_ids_and_unknown_identifier_fields():
    """Goal: invalid schemas cannot be built. Method: duplicate id, dangling identifier id."""
    with pytest.raises(FormatError):
        Schema((NestedField(1, "a", INT, True), NestedField(1, "b", INT, True)))
    with pytest.raises(FormatError):
        Schema((NestedField(1, "a", INT, True),), identifier_field_ids=(2,))


def test_schema_json_matches_the_spec_layout():
    """Goal: JSON uses the spec's keys exactly. Method: compare to a hand-written document."""
    doc = schema_to_json(NESTED)
    assert doc["type"] == "struct" and doc["schema-id"] == 3 and doc["identifier-field-ids"] == [1]
    assert doc["fields"][0] == {"id": 1, "name": "id", "required": True, "type": "long", "doc": "row id"}
    assert doc["fields"][2]["type"] == {"type": "list", "element-id": 7, "element-required": False,
                                        "element": "string"}
    assert doc["fields"][3]["type"]["key-id"] == 8 and doc["fields"][3]["type"]["value-id"] == 9
    assert doc["fields"][3]["type"]["value-required"] is True


@given(schemas())
def test_schema_json_round_trip(schema):
    """Goal: schema JSON serde is lossless. Method: random schemas through json.dumps/loads."""
    assert schema_from_json(json.loads(json.dumps(schema_to_json(schema)))) == schema


@pytest.mark.parametrize("doc, field", [
    ({"type": "struct"}, "schema.fields"),
    ({"type": "struct", "fields": [{"id": "1", "name": "a", "required": True, "type": "int"}]},
     "schema.fields[0].id"),
    ({"type": "struct", "fields": [{"id": 1, "name": "a", "required": 1, "type": "int"}]},
     "schema.fields[0].required"),
    ({"type": "struct", "fields": [{"id": 1, "name": "a", "required": True, "type": "int8"}]},
     "schema.fields[0].type"),
    ({"type": "struct", "fields": [{"id": True, "name": "a", "required": True, "type": "int"}]},
     "schema.fields[0].id"),
    ({"type": "list", "element-id": 1, "element-required": True, "element": "int"}, "schema.type"),
    ([], "schema"),
])
def test_bad_schema_json_names_the_field(doc, field):
    """Goal: malformed schema JSON raises FormatError naming the field. Method: bad documents."""
    with pytest.raises(FormatError) as info:
        schema_from_json(doc)
    assert info.value.field == field


@given(schemas())
def test_arrow_round_trip_keeps_ids_names_types_and_nullability(schema):
    """Goal: Iceberg -> Arrow -> Iceberg is lossless (bar identifier ids). Method: random schemas."""
    arrow = schema_to_arrow(schema)
    assert all(f.metadata[FIELD_ID_KEY] == str(schema.find_field(f.name).field_id).encode()
               for f in arrow)
    back = schema_from_arrow(arrow, schema.schema_id)
    assert back == Schema(schema.fields, schema.schema_id)


def test_arrow_types_and_nullability():
    """Goal: each Iceberg type maps to the documented Arrow type. Method: fixed schema."""
    arrow = schema_to_arrow(NESTED)
    assert arrow.field("id").type == pa.int64() and not arrow.field("id").nullable
    assert arrow.field("point").nullable
    assert arrow.field("tags").type.value_field.metadata[FIELD_ID_KEY] == b"7"
    assert arrow.field("props").type.key_field.metadata[FIELD_ID_KEY] == b"8"
    one = Schema(tuple(NestedField(i + 1, f"c{i}", t, False) for i, t in enumerate(SPEC_STRINGS)))
    got = [f.type for f in schema_to_arrow(one)]
    assert got == [pa.bool_(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.date32(),
                   pa.time64("us"), pa.timestamp("us"), pa.timestamp("us", tz="UTC"), pa.string(),
                   pa.uuid(), pa.binary(), pa.decimal128(9, 2), pa.binary(16)]


def test_schema_from_arrow_assigns_fresh_ids_level_by_level():
    """Goal: fresh ids go level by level, fields before children. Method: a nested Arrow schema."""
    arrow = pa.schema([
        pa.field("a", pa.struct([pa.field("b", pa.int32()), pa.field("c", pa.list_(pa.string()))])),
        pa.field("d", pa.map_(pa.string(), pa.float64()), nullable=False),
        pa.field("e", pa.large_string()),
    ])
    s = schema_from_arrow(arrow)
    assert [s.find_field(n).field_id for n in ("a", "d", "e", "a.b", "a.c", "a.c.element",
                                                  "d.key", "d.value")] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert s.find_field("d").required and not s.find_field("a.b").required
    assert s.find_type("e") == STRING


def test_schema_from_arrow_ignores_partial_field_ids():
    """Goal: ids are taken from metadata only if every field has one. Method: one field lacks it."""
    arrow = pa.schema([pa.field("a", pa.int64(), metadata={FIELD_ID_KEY: b"7"}), pa.field("b", pa.int64())])
    assert [f.field_id for f in schema_from_arrow(arrow).fields] == [1, 2]


def test_schema_from_arrow_rejects_types_without_v2_equivalent():
    """Goal: unsupported Arrow types are a typed error; ns timestamps are the v3 types unless
    downcast. Method: ns timestamp, uint64, duration."""
    from icefloe.impl.format.types import TIMESTAMP_NS
    assert schema_from_arrow(pa.schema([pa.field("t", pa.timestamp("ns"))])).fields[0].type == TIMESTAMP_NS
    assert schema_from_arrow(pa.schema([pa.field("t", pa.timestamp("ns", "UTC"))]),
                             downcast_ns=True).fields[0].type == TIMESTAMPTZ
    for t in (pa.uint64(), pa.duration("us")):
        with pytest.raises(FormatError):
            schema_from_arrow(pa.schema([pa.field("x", t)]))


@given(primitive_types)
def test_every_primitive_survives_arrow(t):
    """Goal: each primitive maps to Arrow and back to itself. Method: all primitives."""
    schema = Schema((NestedField(1, "x", t, True),))
    assert schema_from_arrow(schema_to_arrow(schema)) == schema
