"""Hypothesis strategies for Iceberg types and schemas, shared by the format tests."""
from __future__ import annotations

import itertools

from hypothesis import strategies as st

from icefloe.impl.format.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIME, TIMESTAMP, TIMESTAMPTZ, UUID,
    DecimalType, FixedType, IcebergType, ListType, MapType, NestedField, Schema, StructType,
)

primitive_types = st.one_of(
    st.sampled_from([BOOLEAN, INT, LONG, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMPTZ,
                     STRING, UUID, BINARY]),
    st.builds(lambda p, s: DecimalType(p, min(s, p)), st.integers(1, 38), st.integers(0, 38)),
    st.builds(FixedType, st.integers(1, 64)),
)

names = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)


def _struct(children):
    return st.lists(st.tuples(names, children, st.booleans()), min_size=1, max_size=4,
                    unique_by=lambda t: t[0]).map(
        lambda fs: StructType(tuple(NestedField(0, n, t, r) for n, t, r in fs)))


def _nested(children):
    return st.one_of(
        _struct(children),
        st.builds(lambda t, r: ListType(0, t, r), children, st.booleans()),
        st.builds(lambda k, v, r: MapType(0, k, 0, v, r), primitive_types, children, st.booleans()),
    )


types_with_placeholder_ids = st.recursive(primitive_types, _nested, max_leaves=8)


def renumber(t: IcebergType, ids) -> IcebergType:
    """Give every nested field a fresh id: each level's fields first, then their children."""
    if isinstance(t, StructType):
        fresh = [next(ids) for _ in t.fields]
        return StructType(tuple(NestedField(i, f.name, renumber(f.type, ids), f.required, f.doc)
                                for i, f in zip(fresh, t.fields)))
    if isinstance(t, ListType):
        i = next(ids)
        return ListType(i, renumber(t.element_type, ids), t.element_required)
    if isinstance(t, MapType):
        k, v = next(ids), next(ids)
        return MapType(k, renumber(t.key_type, ids), v, renumber(t.value_type, ids), t.value_required)
    return t


@st.composite
def schemas(draw, schema_id=st.integers(0, 5)):
    top = draw(_struct(types_with_placeholder_ids))
    struct = renumber(top, itertools.count(1))
    docs = draw(st.lists(st.one_of(st.none(), st.text(max_size=10)), min_size=len(struct.fields),
                         max_size=len(struct.fields)))
    fields = tuple(NestedField(f.field_id, f.name, f.type, f.required, d)
                   for f, d in zip(struct.fields, docs))
    required_primitive = [f.field_id for f in fields if f.required and f.type.is_primitive]
    ids = draw(st.lists(st.sampled_from(required_primitive), unique=True)) if required_primitive else []
    return Schema(fields, draw(schema_id), tuple(ids))
