"""Single-value serialization (Iceberg spec "Appendix D: Single-value serialization": the
binary form used for lower/upper bounds in manifests, and the JSON form used for partition
values and defaults).

Python representation of values, shared with transforms.py: bool; int for int, long, date
(days from 1970-01-01), time (microseconds from midnight) and timestamp/timestamptz
(microseconds from the epoch, UTC for timestamptz); float; decimal.Decimal; str;
uuid.UUID; bytes for fixed and binary; tuple (field order) for struct; list; dict for map.
"""
from __future__ import annotations

import datetime as dt
import re
import struct
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

from icefloe.impl.format.types import (
    BinaryType, BooleanType, DateType, DecimalType, DoubleType, FixedType, FloatType, FormatError,
    IcebergType, IntegerType, ListType, LongType, MapType, StringType, StructType, TimestampType,
    TimestamptzType, TimeType, UUIDType, TimestampNsType, TimestamptzNsType,
)

__all__ = ["to_bytes", "from_bytes", "to_json_value", "from_json_value", "decimal_to_unscaled",
           "unscaled_to_decimal", "unscaled_to_bytes", "datetime_to_micros", "EPOCH_DATE", "EPOCH"]

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_INT_RANGE = (-(1 << 31), (1 << 31) - 1)
_LONG_RANGE = (-(1 << 63), (1 << 63) - 1)


# -- decimals as unscaled integers ---------------------------------------------------------

def decimal_to_unscaled(value: Decimal, scale: int) -> int:
    """The unscaled integer of `value` at `scale`; FormatError if that would lose digits.
    Integer arithmetic only: Decimal's context would round beyond 28 digits."""
    if not value.is_finite():
        raise FormatError(f"decimal {value} is not finite")
    sign, digits, exponent = value.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        unscaled *= 10 ** shift
    else:
        unscaled, rest = divmod(unscaled, 10 ** -shift)
        if rest:
            raise FormatError(f"decimal {value} has more than {scale} digits after the point")
    return -unscaled if sign else unscaled


def unscaled_to_decimal(unscaled: int, scale: int) -> Decimal:
    return Decimal((1 if unscaled < 0 else 0, tuple(int(d) for d in str(abs(unscaled))), -scale))


def unscaled_to_bytes(unscaled: int) -> bytes:
    """Minimal two's-complement big-endian bytes (as Java's BigInteger.toByteArray)."""
    bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    return unscaled.to_bytes(bits // 8 + 1, "big", signed=True)


def _check_range(value: Any, bounds: tuple[int, int], t: IcebergType) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not bounds[0] <= value <= bounds[1]:
        raise FormatError(f"{value!r} is not a valid {t} value")
    return value


# -- binary (bounds) -----------------------------------------------------------------------

def to_bytes(t: IcebergType, value: Any) -> bytes:
    if isinstance(t, BooleanType):
        return b"\x01" if value else b"\x00"
    if isinstance(t, (IntegerType, DateType)):
        return struct.pack("<i", _check_range(value, _INT_RANGE, t))
    if isinstance(t, (LongType, TimeType, TimestampType, TimestamptzType, TimestampNsType, TimestamptzNsType)):
        return struct.pack("<q", _check_range(value, _LONG_RANGE, t))
    if isinstance(t, FloatType):
        return struct.pack("<f", value)
    if isinstance(t, DoubleType):
        return struct.pack("<d", value)
    if isinstance(t, DecimalType):
        return unscaled_to_bytes(decimal_to_unscaled(value, t.scale))
    if isinstance(t, StringType):
        return value.encode("utf-8")
    if isinstance(t, UUIDType):
        return value.bytes
    if isinstance(t, FixedType):
        if len(value) != t.length:
            raise FormatError(f"{t} value has {len(value)} bytes")
        return bytes(value)
    if isinstance(t, BinaryType):
        return bytes(value)
    raise FormatError(f"no single-value binary form for {t}")


def from_bytes(t: IcebergType, data: bytes) -> Any:
    """Decode a bound. A long/double bound of 4 bytes is accepted: it was written before the
    column was promoted from int/float (spec: type promotion keeps old bounds readable)."""
    try:
        if isinstance(t, BooleanType) and len(data) == 1:
            return data != b"\x00"
        if isinstance(t, (IntegerType, DateType)):
            return struct.unpack("<i", data)[0]
        if isinstance(t, (LongType, TimeType, TimestampType, TimestamptzType, TimestampNsType,
                          TimestamptzNsType)):
            return struct.unpack("<i" if len(data) == 4 and isinstance(t, LongType) else "<q", data)[0]
        if isinstance(t, FloatType):
            return struct.unpack("<f", data)[0]
        if isinstance(t, DoubleType):
            return struct.unpack("<f" if len(data) == 4 else "<d", data)[0]
        if isinstance(t, DecimalType) and data:
            return unscaled_to_decimal(int.from_bytes(data, "big", signed=True), t.scale)
        if isinstance(t, StringType):
            return bytes(data).decode("utf-8")
        if isinstance(t, UUIDType):
            return uuid.UUID(bytes=bytes(data))
        if isinstance(t, FixedType) and len(data) == t.length or isinstance(t, BinaryType):
            return bytes(data)
    except (struct.error, UnicodeDecodeError, ValueError) as e:
        raise FormatError(f"bad {t} bound {bytes(data).hex()}: {e}") from None
    raise FormatError(f"bad {t} bound {bytes(data).hex()}")


# -- JSON single values (partition values, defaults) ---------------------------------------

def _decimal_json(unscaled: int, scale: int) -> str:
    if scale < 0:
        return f"{unscaled}E+{-scale}"
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    body = digits if scale == 0 else f"{digits[:-scale]}.{digits[-scale:]}"
    return "-" + body if unscaled < 0 else body


def _micros_to_time(micros: int) -> str:
    return (dt.datetime.min + dt.timedelta(microseconds=micros)).time().isoformat(timespec="microseconds")


def _micros_to_datetime(micros: int) -> dt.datetime:
    return EPOCH + dt.timedelta(microseconds=micros)


def datetime_to_micros(value: dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def to_json_value(t: IcebergType, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(t, (BooleanType, IntegerType, LongType, FloatType, DoubleType, StringType)):
        return value
    if isinstance(t, DecimalType):
        return _decimal_json(decimal_to_unscaled(value, t.scale), t.scale)
    if isinstance(t, DateType):
        return (EPOCH_DATE + dt.timedelta(days=value)).isoformat()
    if isinstance(t, TimeType):
        return _micros_to_time(value)
    if isinstance(t, TimestampType):
        return _micros_to_datetime(value).replace(tzinfo=None).isoformat(timespec="microseconds")
    if isinstance(t, TimestamptzType):
        return _micros_to_datetime(value).isoformat(timespec="microseconds")
    if isinstance(t, (TimestampNsType, TimestamptzNsType)):
        micros, nanos = divmod(value, 1000)
        text = to_json_value(TimestamptzType() if isinstance(t, TimestamptzNsType) else TimestampType(), micros)
        at = text.index(".") + 7
        return text[:at] + f"{nanos:03d}" + text[at:]
    if isinstance(t, UUIDType):
        return str(value)
    if isinstance(t, (FixedType, BinaryType)):
        return bytes(value).hex()
    if isinstance(t, StructType):
        return {str(f.field_id): to_json_value(f.type, v) for f, v in zip(t.fields, value)
                if v is not None}
    if isinstance(t, ListType):
        return [to_json_value(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        return {"keys": [to_json_value(t.key_type, k) for k in value],
                "values": [to_json_value(t.value_type, v) for v in value.values()]}
    raise FormatError(f"no JSON single-value form for {t}")


_TIME_RE = re.compile(r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?")


def _time_to_micros(text: str) -> int:
    m = _TIME_RE.fullmatch(text)
    if not m:
        raise ValueError(f"bad time {text!r}")
    h, mi, s = int(m[1]), int(m[2]), int(m[3] or 0)
    if h > 23 or mi > 59 or s > 59:
        raise ValueError(f"bad time {text!r}")
    return ((h * 60 + mi) * 60 + s) * 1_000_000 + int((m[4] or "0")[:6].ljust(6, "0"))


def _parse_timestamp(text: str, with_zone: bool) -> int:
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    date_part, sep, rest = text.partition("T")
    zone = re.search(r"[+-]\d{2}:\d{2}$", rest)
    if not sep or bool(zone) != with_zone:
        raise ValueError(f"bad {'timestamptz' if with_zone else 'timestamp'} {text!r}")
    clock = rest[:zone.start()] if zone else rest
    offset = 0
    if zone:
        sign = -1 if zone[0][0] == "-" else 1
        offset = sign * (int(zone[0][1:3]) * 60 + int(zone[0][4:6])) * 60_000_000
    days = (dt.date.fromisoformat(date_part) - EPOCH_DATE).days
    return days * 86_400_000_000 + _time_to_micros(clock) - offset


def from_json_value(t: IcebergType, data: Any) -> Any:
    """Parse a JSON single value; FormatError (never ValueError/TypeError) on bad input."""
    if data is None:
        return None
    try:
        return _from_json_value(t, data)
    except (ValueError, TypeError, KeyError, AttributeError, InvalidOperation, OverflowError) as e:
        raise FormatError(f"bad JSON value for {t}: {data!r} ({e})") from None


def _expect(data: Any, kinds: tuple, t: IcebergType) -> Any:
    if not isinstance(data, kinds) or (isinstance(data, bool) and bool not in kinds):
        raise TypeError(f"expected JSON {'/'.join(k.__name__ for k in kinds)} for {t}")
    return data


def _from_json_value(t: IcebergType, data: Any) -> Any:
    if isinstance(t, BooleanType):
        return _expect(data, (bool,), t)
    if isinstance(t, IntegerType):
        return _check_range(_expect(data, (int,), t), _INT_RANGE, t)
    if isinstance(t, LongType):
        return _check_range(_expect(data, (int,), t), _LONG_RANGE, t)
    if isinstance(t, (FloatType, DoubleType)):
        return float(_expect(data, (int, float), t))
    if isinstance(t, DecimalType):
        return unscaled_to_decimal(decimal_to_unscaled(Decimal(_expect(data, (str,), t)), t.scale), t.scale)
    if isinstance(t, DateType):
        return (dt.date.fromisoformat(_expect(data, (str,), t)) - EPOCH_DATE).days
    if isinstance(t, TimeType):
        return _time_to_micros(_expect(data, (str,), t))
    if isinstance(t, (TimestampType, TimestamptzType)):
        return _parse_timestamp(_expect(data, (str,), t), isinstance(t, TimestamptzType))
    if isinstance(t, (TimestampNsType, TimestamptzNsType)):  # v3: nanoseconds from the epoch
        text = _expect(data, (str,), t)
        with_zone = isinstance(t, TimestamptzNsType)
        m = re.search(r"\.(\d{7,9})", text)
        nanos_extra = int(m[1].ljust(9, "0")[6:]) if m else 0
        micros = _parse_timestamp(text[:m.start() + 7] + text[m.end():] if m else text, with_zone)
        return micros * 1000 + nanos_extra
    if isinstance(t, StringType):
        return _expect(data, (str,), t)
    if isinstance(t, UUIDType):
        return uuid.UUID(_expect(data, (str,), t))
    if isinstance(t, (FixedType, BinaryType)):
        value = bytes.fromhex(_expect(data, (str,), t))
        if isinstance(t, FixedType) and len(value) != t.length:
            raise ValueError(f"{t} value has {len(value)} bytes")
        return value
    if isinstance(t, StructType):
        obj = _expect(data, (dict,), t)
        return tuple(from_json_value(f.type, obj.get(str(f.field_id))) for f in t.fields)
    if isinstance(t, ListType):
        return [from_json_value(t.element_type, v) for v in _expect(data, (list,), t)]
    if isinstance(t, MapType):
        obj = _expect(data, (dict,), t)
        keys, values = _expect(obj["keys"], (list,), t), _expect(obj["values"], (list,), t)
        if len(keys) != len(values):
            raise ValueError("map keys and values differ in length")
        return {from_json_value(t.key_type, k): from_json_value(t.value_type, v)
                for k, v in zip(keys, values)}
    raise FormatError(f"no JSON single-value form for {t}")
