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


def values_for(t: IcebergType) -> st.SearchStrategy:
    """Python values (conversions.py representation) of primitive type `t`."""
    from decimal import Decimal

    from icefloe.impl.format.types import (
        BinaryType, BooleanType, DateType, DoubleType, FloatType, IntegerType, LongType,
        StringType, TimestampType, TimestamptzType, TimeType, UUIDType,
    )
    if isinstance(t, BooleanType):
        return st.booleans()
    if isinstance(t, (IntegerType, DateType)):
        return st.integers(-(2**31), 2**31 - 1) if isinstance(t, IntegerType) else st.integers(-700_000, 2_900_000)
    if isinstance(t, LongType):
        return st.integers(-(2**63), 2**63 - 1)
    if isinstance(t, TimeType):
        return st.integers(0, 86_400_000_000 - 1)
    if isinstance(t, (TimestampType, TimestamptzType)):
        return st.integers(-62_000_000_000_000_000, 253_000_000_000_000_000)
    if isinstance(t, FloatType):
        return st.floats(width=32, allow_nan=False)
    if isinstance(t, DoubleType):
        return st.floats(allow_nan=False)
    if isinstance(t, DecimalType):
        bound = 10 ** t.precision - 1
        return st.integers(-bound, bound).map(
            lambda u: Decimal((1 if u < 0 else 0, tuple(int(d) for d in str(abs(u))), -t.scale)))
    if isinstance(t, StringType):
        return st.text(max_size=20)
    if isinstance(t, UUIDType):
        return st.uuids()
    if isinstance(t, FixedType):
        return st.binary(min_size=t.length, max_size=t.length)
    if isinstance(t, BinaryType):
        return st.binary(max_size=20)
    raise ValueError(f"no strategy for {t}")
