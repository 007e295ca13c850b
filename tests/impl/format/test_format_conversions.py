"""Single-value serialization: Appendix D binary bounds and JSON single values."""
from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal

import pytest
from format_strategies import primitive_types, values_for
from hypothesis import given, strategies as st
from pyiceberg.conversions import to_bytes as peer_to_bytes
from pyiceberg.types import NestedField as PeerField

from icefloe.impl.format.conversions import (
    datetime_to_micros, decimal_to_unscaled, from_bytes, from_json_value, to_bytes, to_json_value, unscaled_to_bytes,
)
from icefloe.impl.format.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIME, TIMESTAMP, TIMESTAMPTZ, UUID,
    DecimalType, FixedType, FormatError, ListType, MapType, NestedField, StructType,
)

U = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")


@pytest.mark.parametrize("t, value, hexbytes", [
    (BOOLEAN, True, "01"), (BOOLEAN, False, "00"),
    (INT, 34, "22000000"), (INT, -1, "ffffffff"), (DATE, 17486, "4e440000"),
    (LONG, 34, "2200000000000000"), (TIME, 1, "0100000000000000"),
    (TIMESTAMP, -1, "ffffffffffffffff"), (TIMESTAMPTZ, 2, "0200000000000000"),
    (FLOAT, 1.0, "0000803f"), (DOUBLE, -2.0, "00000000000000c0"),
    (DecimalType(9, 2), Decimal("14.20"), "058c"), (DecimalType(9, 2), Decimal("0.00"), "00"),
    (DecimalType(9, 2), Decimal("-0.01"), "ff"), (DecimalType(9, 2), Decimal("1.28"), "0080"),
    (DecimalType(9, 2), Decimal("-1.28"), "80"), (DecimalType(9, 2), Decimal("-1.29"), "ff7f"),
    (STRING, "iceberg", "69636562657267"), (UUID, U, "f79c3e09677c4bbda4793f349cb785e7"),
    (FixedType(3), b"\x00\x01\x02", "000102"), (BINARY, b"", ""),
])
def test_binary_single_values_match_appendix_d(t, value, hexbytes):
    """Goal: bytes are exactly Appendix D's and read back. Method: hand-computed examples."""
    assert to_bytes(t, value).hex() == hexbytes
    assert from_bytes(t, bytes.fromhex(hexbytes)) == value


@given(st.data())
def test_binary_round_trip_and_agreement_with_pyiceberg(data):
    """Goal: from_bytes inverts to_bytes; bytes equal pyiceberg's. Method: random types and values."""
    t = data.draw(primitive_types)
    value = data.draw(values_for(t))
    encoded = to_bytes(t, value)
    assert from_bytes(t, encoded) == value or (isinstance(value, float) and math.isnan(value))
    peer_type = PeerField(1, "x", str(t), required=False).field_type
    assert peer_to_bytes(peer_type, value) == encoded


def test_promoted_bounds_are_read():
    """Goal: bounds from before int->long, float->double promotion decode. Method: 4-byte bounds."""
    assert from_bytes(LONG, to_bytes(INT, -5)) == -5
    assert from_bytes(DOUBLE, to_bytes(FLOAT, 1.5)) == 1.5


@pytest.mark.parametrize("t, data", [(INT, b"\x01"), (LONG, b"\x01\x02\x03"), (UUID, b"\x00" * 15),
                                     (FixedType(4), b"\x00"), (STRING, b"\xff\xfe"),
                                     (BOOLEAN, b""), (DecimalType(9, 2), b""), (DOUBLE, b"\x00")])
def test_bad_bounds_raise_format_error(t, data):
    """Goal: malformed bound bytes are a typed error. Method: wrong lengths, invalid UTF-8."""
    with pytest.raises(FormatError):
        from_bytes(t, data)


def test_decimals_beyond_28_digits_are_exact():
    """Goal: 38-digit decimals survive (Decimal's default context has 28). Method: extremes."""
    t = DecimalType(38, 10)
    big = Decimal("-9999999999999999999999999999.9999999999")
    assert from_bytes(t, to_bytes(t, big)) == big
    assert from_json_value(t, to_json_value(t, big)) == big
    with pytest.raises(FormatError):
        decimal_to_unscaled(Decimal("1.234"), 2)
    assert unscaled_to_bytes(-(2**127)).hex() == "80" + "00" * 15


@pytest.mark.parametrize("t, value, expected", [
    (BOOLEAN, True, True), (INT, 34, 34), (LONG, 34, 34), (DOUBLE, 1.5, 1.5),
    (DecimalType(9, 2), Decimal("14.20"), "14.20"), (DecimalType(9, 4), Decimal("-0.0005"), "-0.0005"),
    (DecimalType(9, -20), Decimal("2E+20"), "2E+20"),
    (DATE, 17486, "2017-11-16"), (TIME, 81068123456, "22:31:08.123456"),
    (TIMESTAMP, 1510871468123456, "2017-11-16T22:31:08.123456"),
    (TIMESTAMPTZ, 1510871468123456, "2017-11-16T22:31:08.123456+00:00"),
    (STRING, "iceberg", "iceberg"), (UUID, U, str(U)),
    (FixedType(4), b"\x00\x01\x02\xff", "000102ff"), (BINARY, b"\x00\x01\x02\xff", "000102ff"),
    (StructType((NestedField(1, "a", INT, False), NestedField(2, "b", STRING, False))), (1, "bar"),
     {"1": 1, "2": "bar"}),
    (ListType(3, INT), [1, 2, 3], [1, 2, 3]),
    (MapType(4, STRING, 5, INT), {"a": 1, "b": 2}, {"keys": ["a", "b"], "values": [1, 2]}),
])
def test_json_single_values_match_the_spec(t, value, expected):
    """Goal: JSON single values use the spec's forms and read back. Method: spec examples."""
    assert to_json_value(t, value) == expected
    assert from_json_value(t, expected) == value


def test_json_single_values_accept_other_writers_forms():
    """Goal: other writers' equivalent forms are read. Method: Z, offsets, short fractions, HEX."""
    assert from_json_value(TIMESTAMPTZ, "2017-11-16T14:31:08-08:00") == 1510871468000000
    assert from_json_value(TIMESTAMPTZ, "2017-11-16T22:31:08Z") == 1510871468000000
    assert from_json_value(TIMESTAMP, "2017-11-16T22:31:08.1") == 1510871468100000
    assert from_json_value(TIME, "22:31") == 81060000000
    assert from_json_value(BINARY, "00FF") == b"\x00\xff"


@given(st.data())
def test_json_round_trip(data):
    """Goal: from_json_value inverts to_json_value. Method: random primitive types, values."""
    t = data.draw(primitive_types)
    value = data.draw(values_for(t))
    assert from_json_value(t, to_json_value(t, value)) == value


@pytest.mark.parametrize("t, data", [
    (INT, "1"), (INT, True), (INT, 2**31), (LONG, 1.5), (BOOLEAN, 0), (DATE, "2017-13-01"),
    (TIME, "25:00:00"), (TIMESTAMP, "2017-11-16T22:31:08+00:00"), (TIMESTAMPTZ, "2017-11-16T22:31:08"),
    (DecimalType(9, 2), "1.234"), (DecimalType(9, 2), "abc"), (DecimalType(9, 2), 1.5),
    (UUID, "nope"), (FixedType(2), "00"), (BINARY, "0g"), (STRING, 3),
    (StructType((NestedField(1, "a", INT, False),)), [1]),
    (MapType(4, STRING, 5, INT), {"keys": ["a"]}), (MapType(4, STRING, 5, INT), {"keys": ["a"], "values": []}),
])
def test_bad_json_values_raise_format_error(t, data):
    """Goal: wrong JSON forms raise FormatError, never ValueError/TypeError. Method: bad values."""
    with pytest.raises(FormatError):
        from_json_value(t, data)


def test_datetime_to_micros():
    """Goal: datetimes map to epoch µs exactly, naive ones as UTC. Method: spec instant, pre-epoch."""
    utc = dt.timezone.utc
    assert datetime_to_micros(dt.datetime(2017, 11, 16, 22, 31, 8, 123456, tzinfo=utc)) == 1510871468123456
    assert datetime_to_micros(dt.datetime(2017, 11, 16, 14, 31, 8, tzinfo=dt.timezone(dt.timedelta(hours=-8)))) \
        == 1510871468000000
    assert datetime_to_micros(dt.datetime(1969, 12, 31, 23, 59, 59, 999999)) == -1
