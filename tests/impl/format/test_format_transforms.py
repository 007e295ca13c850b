"""Partition transforms, Murmur3, partition specs and sort orders against the spec."""
from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import mmh3
import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

from icefloe.impl.format.transforms import (
    UNSORTED, BucketTransform, DayTransform, HourTransform, IdentityTransform, MonthTransform,
    PartitionField, PartitionSpec, SortField, SortOrder, TruncateTransform, VoidTransform,
    YearTransform, murmur3_32, parse_partition_spec, parse_transform, partition_spec_from_json,
    partition_spec_to_json, partition_type, sort_order_from_json, sort_order_to_json,
)
from icefloe.impl.format.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIME, TIMESTAMP, TIMESTAMPTZ, UUID,
    DecimalType, FixedType, FormatError, NestedField, Schema, StructType,
)

EPOCH = dt.date(1970, 1, 1)
DAYS_2017_11_16 = (dt.date(2017, 11, 16) - EPOCH).days
MICROS_22_31_08 = (22 * 3600 + 31 * 60 + 8) * 1_000_000
TS_2017_11_16_22_31_08 = DAYS_2017_11_16 * 86_400_000_000 + MICROS_22_31_08

# Spec Appendix B: hash values for the bucket transform, (value, source type, hash).
SPEC_HASHES = [
    (34, INT, 2017239379),
    (34, LONG, 2017239379),
    (Decimal("14.20"), DecimalType(9, 2), -500754589),
    (DAYS_2017_11_16, DATE, -653330422),
    (MICROS_22_31_08, TIME, -662762989),
    (TS_2017_11_16_22_31_08, TIMESTAMP, -2047944441),
    # 2017-11-16T14:31:08-08:00 is the same instant as 22:31:08 UTC.
    (TS_2017_11_16_22_31_08, TIMESTAMPTZ, -2047944441),
    ("iceberg", STRING, 1210000089),
    (uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), UUID, 1488055340),
    (bytes([0, 1, 2, 3]), FixedType(4), -188683207),
    (bytes([0, 1, 2, 3]), BINARY, -188683207),
]


@pytest.mark.parametrize("value, source_type, expected", SPEC_HASHES, ids=lambda v: str(v)[:20])
def test_bucket_hash_matches_spec_appendix_b(value, source_type, expected):
    """Goal: the bucket hash of each spec example is the spec's value. Method: Appendix B table."""
    assert BucketTransform(16).hash(value, source_type) == expected
    assert BucketTransform(16).apply(value, source_type) == (expected & 0x7FFFFFFF) % 16


def test_decimal_hash_uses_the_type_scale():
    """Goal: 14.2 in a decimal(9, 2) column hashes as 14.20 (unscaled 1420). Method: compare."""
    assert BucketTransform(16).hash(Decimal("14.2"), DecimalType(9, 2)) == -500754589
    assert BucketTransform(16).hash(Decimal("14.2")) != -500754589


@given(st.binary(max_size=64), st.integers(0, 2**32 - 1))
def test_murmur3_agrees_with_the_reference_library(data, seed):
    """Goal: our pure-Python Murmur3 x86_32 equals the C reference. Method: random bytes, seeds."""
    assert murmur3_32(data, seed) == mmh3.hash(data, seed, signed=True)


@pytest.mark.parametrize("transform, value, source_type, expected", [
    (TruncateTransform(10), 1, INT, 0),
    (TruncateTransform(10), -1, INT, -10),
    (TruncateTransform(10), 1, LONG, 0),
    (TruncateTransform(10), -1, LONG, -10),
    (TruncateTransform(50), Decimal("10.65"), DecimalType(9, 2), Decimal("10.50")),
    (TruncateTransform(3), "iceberg", STRING, "ice"),
    (TruncateTransform(2), "\U0001F600\u00fcab", STRING, "\U0001F600\u00fc"),
    (TruncateTransform(3), b"\x01\x02\x03\x04\x05", BINARY, b"\x01\x02\x03"),
    (YearTransform(), TS_2017_11_16_22_31_08, TIMESTAMP, 47),
    (MonthTransform(), TS_2017_11_16_22_31_08, TIMESTAMPTZ, 47 * 12 + 10),
    (DayTransform(), TS_2017_11_16_22_31_08, TIMESTAMP, DAYS_2017_11_16),
    (HourTransform(), TS_2017_11_16_22_31_08, TIMESTAMP, DAYS_2017_11_16 * 24 + 22),
    (YearTransform(), DAYS_2017_11_16, DATE, 47),
    (MonthTransform(), DAYS_2017_11_16, DATE, 574),
    (DayTransform(), DAYS_2017_11_16, DATE, DAYS_2017_11_16),
    # Before the epoch the unit count floors: 1969-12-31T23:59:59.999999 is in year/month/day/hour -1.
    (YearTransform(), -1, TIMESTAMP, -1),
    (MonthTransform(), -1, TIMESTAMP, -1),
    (DayTransform(), -1, TIMESTAMP, -1),
    (HourTransform(), -1, TIMESTAMP, -1),
    (MonthTransform(), -1, DATE, -1),
    (YearTransform(), -366, DATE, -2),
    (IdentityTransform(), "x", STRING, "x"),
    (VoidTransform(), 5, INT, None),
])
def test_transform_spec_examples(transform, value, source_type, expected):
    """Goal: each transform gives the spec's result on its examples. Method: example table."""
    assert transform.apply(value, source_type) == expected
    assert transform.bind(source_type)(value) == expected
    assert transform.apply(None, source_type) is None


@pytest.mark.parametrize("transform, source, result", [
    (IdentityTransform(), DecimalType(9, 2), DecimalType(9, 2)),
    (BucketTransform(4), STRING, INT), (BucketTransform(4), TIMESTAMPTZ, INT),
    (TruncateTransform(4), BINARY, BINARY), (YearTransform(), DATE, INT),
    (MonthTransform(), TIMESTAMP, INT), (DayTransform(), TIMESTAMPTZ, DATE),
    (HourTransform(), TIMESTAMP, INT), (VoidTransform(), UUID, UUID),
])
def test_result_types(transform, source, result):
    """Goal: result types follow the spec's transform table. Method: table."""
    assert transform.result_type(source) == result


@pytest.mark.parametrize("transform, source", [
    (BucketTransform(4), FLOAT), (BucketTransform(4), BOOLEAN), (TruncateTransform(4), DOUBLE),
    (TruncateTransform(4), UUID), (YearTransform(), TIME), (HourTransform(), DATE),
    (DayTransform(), STRING), (IdentityTransform(), StructType(())),
])
def test_unsupported_sources_raise_format_error(transform, source):
    """Goal: a transform refuses source types the spec does not allow. Method: table."""
    assert not transform.can_transform(source)
    with pytest.raises(FormatError):
        transform.result_type(source)


def test_transform_strings_round_trip():
    """Goal: str/parse_transform are inverse and reject junk. Method: every transform form."""
    for text in ("identity", "bucket[16]", "truncate[10]", "year", "month", "day", "hour", "void"):
        assert str(parse_transform(text)) == text
    for bad in ("bucket", "bucket[0]", "truncate[-1]", "days", "Bucket[2]", 3):
        with pytest.raises(FormatError):
            parse_transform(bad)


def test_apply_arrow_accepts_chunked_arrays():
    """Goal: a table column (ChunkedArray) is transformed like one array. Method: two chunks."""
    chunked = pa.chunked_array([pa.array([1, 2], pa.int64()), pa.array([None, 34], pa.int64())])
    assert BucketTransform(16).apply_arrow(chunked).to_pylist() == [
        BucketTransform(16).apply(v, LONG) for v in (1, 2, None, 34)]
    assert TruncateTransform(10).apply_arrow(chunked).to_pylist() == [0, 0, None, 30]


def test_nanosecond_arrays_floor_to_microseconds():
    """Goal: ns timestamps transform as their floored µs. Method: values around epoch and hour."""
    ns = pa.array([-1, 0, 3_600_000_000_000 - 1, None], pa.timestamp("ns", "UTC"))
    assert HourTransform().apply_arrow(ns).to_pylist() == [-1, 0, 0, None]
    assert DayTransform().apply_arrow(ns).cast(pa.int32()).to_pylist() == [-1, 0, 0, None]
    assert BucketTransform(16).apply_arrow(ns).to_pylist() == [
        BucketTransform(16).apply(v, TIMESTAMPTZ) for v in (-1, 0, 3_599_999_999, None)]


def test_temporal_transforms_need_the_source_type():
    """Goal: an int alone is ambiguous (days or micros), so it is refused. Method: no type."""
    with pytest.raises(FormatError):
        YearTransform().apply(17000)


# -- vectorized transforms agree with the scalar ones --------------------------------------

LONGS = st.integers(-(2**62), 2**62)
ARROW_CASES = [
    (pa.int32(), INT, st.integers(-(2**31) + 100, 2**31 - 1)),
    (pa.int64(), LONG, LONGS),
    (pa.date32(), DATE, st.integers(-800_000, 800_000)),
    (pa.timestamp("us"), TIMESTAMP, st.integers(-(2**55), 2**55)),
    (pa.timestamp("us", "UTC"), TIMESTAMPTZ, st.integers(-(2**55), 2**55)),
    (pa.string(), STRING, st.text(max_size=12)),
    (pa.binary(), BINARY, st.binary(max_size=12)),
    (pa.decimal128(9, 2), DecimalType(9, 2),
     st.integers(-(10**9) + 1, 10**9 - 1).map(lambda u: Decimal(u).scaleb(-2))),
    (pa.uuid(), UUID, st.uuids()),
    (pa.binary(4), FixedType(4), st.binary(min_size=4, max_size=4)),
    (pa.time64("us"), TIME, st.integers(0, 86_400_000_000 - 1)),
]
TRANSFORMS = [IdentityTransform(), VoidTransform(), BucketTransform(7), BucketTransform(1000),
              TruncateTransform(3), TruncateTransform(100), YearTransform(), MonthTransform(),
              DayTransform(), HourTransform()]


def _to_arrow_input(arrow_type, values):
    if pa.types.is_timestamp(arrow_type) or pa.types.is_date(arrow_type) or pa.types.is_time(arrow_type):
        storage = pa.int32() if pa.types.is_date(arrow_type) else pa.int64()
        return pa.array(values, storage).cast(arrow_type)
    if arrow_type == pa.uuid():
        return pa.ExtensionArray.from_storage(arrow_type, pa.array(
            [None if v is None else v.bytes for v in values], pa.binary(16)))
    return pa.array(values, arrow_type)


def _from_arrow_output(result_type, array):
    if pa.types.is_date(array.type):
        return array.cast(pa.int32()).to_pylist()
    return array.to_pylist()


@pytest.mark.parametrize("arrow_type, source_type, values", ARROW_CASES, ids=lambda c: str(c)[:24])
@given(data=st.data())
def test_apply_arrow_agrees_with_apply(arrow_type, source_type, values, data):
    """Goal: vectorized transforms equal scalar ones, nulls too. Method: random arrays per type."""
    column = data.draw(st.lists(st.one_of(st.none(), values), max_size=20))
    array = _to_arrow_input(arrow_type, column)
    for transform in TRANSFORMS:
        if not transform.can_transform(source_type):
            continue
        expected = [transform.apply(v, source_type) for v in column]
        got = transform.apply_arrow(array)
        if isinstance(transform, IdentityTransform):
            assert got.equals(array)
        else:
            assert _from_arrow_output(transform.result_type(source_type), got) == expected, transform


# -- partition specs and sort orders -------------------------------------------------------

SCHEMA = Schema((NestedField(1, "id", LONG, True), NestedField(2, "ts", TIMESTAMPTZ, False),
                 NestedField(3, "s", STRING, False), NestedField(4, "cat", STRING, False),
                 NestedField(5, "d", DATE, False)))


def test_parse_partition_spec_cli_syntax():
    """Goal: CLI syntax gives spec fields, Java names, ids from 1000. Method: every form at once."""
    spec = parse_partition_spec("cat, bucket(16, id), day(ts), truncate(10, s), year(d), "
                                "month(ts), hour(ts), identity(id)", SCHEMA)
    assert [(f.source_id, f.field_id, str(f.transform), f.name) for f in spec.fields] == [
        (4, 1000, "identity", "cat"), (1, 1001, "bucket[16]", "id_bucket"),
        (2, 1002, "day", "ts_day"), (3, 1003, "truncate[10]", "s_trunc"),
        (5, 1004, "year", "d_year"), (2, 1005, "month", "ts_month"), (2, 1006, "hour", "ts_hour"),
        (1, 1007, "identity", "id")]
    assert parse_partition_spec("", SCHEMA) == PartitionSpec(0, ())


@pytest.mark.parametrize("text", ["bucket(id)", "day(16, ts)", "hour(d)", "nope", "frob(ts)",
                                  "bucket(16 id)", "cat, cat"])
def test_parse_partition_spec_rejects_bad_input(text):
    """Goal: bad CLI partition specs raise FormatError. Method: bad examples."""
    with pytest.raises(FormatError):
        parse_partition_spec(text, SCHEMA)


def test_partition_type_and_json_round_trip():
    """Goal: partition struct types and ids are right; JSON is lossless. Method: every transform."""
    spec = parse_partition_spec("cat, bucket(16, id), day(ts), truncate(10, s), month(d)", SCHEMA, 3)
    ptype = partition_type(spec, SCHEMA)
    assert [(f.field_id, f.name, f.type, f.required) for f in ptype.fields] == [
        (1000, "cat", STRING, False), (1001, "id_bucket", INT, False), (1002, "ts_day", DATE, False),
        (1003, "s_trunc", STRING, False), (1004, "d_month", INT, False)]
    doc = partition_spec_to_json(spec)
    assert doc["spec-id"] == 3
    assert doc["fields"][1] == {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1,
                                "field-id": 1001}
    assert partition_spec_from_json(doc) == spec
    with pytest.raises(FormatError):
        partition_type(PartitionSpec(0, (PartitionField(99, 1000, IdentityTransform(), "x"),)), SCHEMA)


def test_partition_spec_json_errors_name_the_field():
    """Goal: bad spec JSON is a FormatError naming the field. Method: bad documents."""
    for doc, field in [({"spec-id": 0}, "partition-spec.fields"),
                       ({"spec-id": 0, "fields": [{"name": "a", "transform": "frob", "source-id": 1,
                                                   "field-id": 1000}]},
                        "partition-spec.fields[0].transform"),
                       ({"spec-id": 0, "fields": [{"name": "a", "transform": "day", "source-id": "1",
                                                   "field-id": 1000}]},
                        "partition-spec.fields[0].source-id")]:
        with pytest.raises(FormatError) as info:
            partition_spec_from_json(doc)
        assert info.value.field == field


def test_sort_order_json_round_trip():
    """Goal: sort orders use the spec's keys and read back; 0 is unsorted. Method: two orders."""
    assert sort_order_to_json(UNSORTED) == {"order-id": 0, "fields": []}
    order = SortOrder(1, (SortField(3, IdentityTransform(), "asc", "nulls-first"),
                          SortField(2, DayTransform(), "desc", "nulls-last")))
    doc = sort_order_to_json(order)
    assert doc["fields"][1] == {"transform": "day", "source-id": 2, "direction": "desc",
                                "null-order": "nulls-last"}
    assert sort_order_from_json(doc) == order
    with pytest.raises(FormatError):
        sort_order_from_json({"order-id": 1, "fields": [{"transform": "identity", "source-id": 1,
                                                         "direction": "up", "null-order": "nulls-last"}]})
    with pytest.raises(FormatError):
        SortOrder(0, order.fields)


@pytest.mark.parametrize("text", ["bucket[0]", "bucket[2147483648]", "bucket[99999999999999999999]",
                                  "truncate[0]", "truncate[2147483648]"])
def test_transform_arguments_outside_the_iceberg_int_range_are_refused(text):
    """Goal: bucket N and truncate W are Iceberg ints in 1..2^31-1 (issue 14 item 6), from
    spec strings and from the CLI syntax alike. Method: out-of-range arguments both ways."""
    with pytest.raises(FormatError, match="2147483647"):
        parse_transform(text)
    func, arg = text.rstrip("]").split("[")
    with pytest.raises(FormatError, match="2147483647"):
        parse_partition_spec(f"{func}({arg}, id)", SCHEMA)
    assert parse_transform(f"{func}[2147483647]") == (BucketTransform if func == "bucket" else TruncateTransform)(2**31 - 1)
    with pytest.raises(FormatError, match="must be an int"):
        BucketTransform(True)


def test_truncate_width_on_a_decimal_is_checked_against_its_precision():
    """Goal: truncate(W) on decimal(P, S) truncates the unscaled value (steps of W x 10^-S),
    and a W of 10^P or more is refused when a spec is created, naming the step. Method:
    parse specs on a decimal(9, 2) column; apply the accepted one."""
    schema = Schema((NestedField(1, "amount", DecimalType(9, 2), False),))
    spec = parse_partition_spec("truncate(2, amount)", schema)
    assert spec.fields[0].transform.apply(Decimal("1.25"), DecimalType(9, 2)) == Decimal("1.24")
    parse_partition_spec("truncate(999999999, amount)", schema)
    with pytest.raises(FormatError, match=r"unscaled value \(steps of 1000000000 x 10\^-2\)"):
        parse_partition_spec("truncate(1000000000, amount)", schema)
