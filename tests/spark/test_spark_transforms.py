"""The partition transforms the native write path evaluates in Spark (impl/spark/transforms_sql.py)
equal impl/format/transforms.py on the same values."""
from __future__ import annotations

import datetime
import random
from decimal import Decimal

import pyarrow as pa
import pytest

from icefloe.impl.format import transforms as X
from icefloe.impl.format import types as T
from icefloe.impl.spark.transforms_sql import with_partition_columns

pytestmark = pytest.mark.xdist_group("spark")

EPOCH = datetime.datetime(1970, 1, 1)


def _values(rng: random.Random):
    longs = [0, 1, -1, 2**31 - 1, -2**31, 2**63 - 1, -2**63, 34, -34, 1_700_000_000_000_000]
    longs += [rng.randrange(-2**63, 2**63) for _ in range(200)] + [rng.randrange(-10**6, 10**6) for _ in range(100)]
    ints = [v for v in longs if -2**31 <= v < 2**31]
    days = [rng.randrange(-700_000, 2_900_000) for _ in range(150)] + [0, -1, 17_000, 19_723, 19_724]
    micros = [rng.randrange(-2**61, 2**61) for _ in range(100)] + [d * 86_400_000_000 + rng.randrange(-10**10, 10**10)
                                                                    for d in days]
    micros = [m for m in micros if -62_135_596_800_000_000 <= m < 253_402_300_800_000_000]  # years 1..9999
    strings = ["", "a", "iceberg", "ab€c", "日本語テキスト", "x" * 40, "\U0001F600 emoji"] + \
              ["".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(0, 30))) for _ in range(60)]
    decimals = [Decimal("14.20"), Decimal("-0.01"), Decimal("0.00"), Decimal("-9.99"), Decimal("12345678.91")] + \
               [Decimal(rng.randrange(-10**10, 10**10)).scaleb(-2) for _ in range(60)]
    return ints, longs, days, micros, strings, decimals


def test_spark_transforms_equal_transforms_py(spark):
    """Goal: every transform column Spark computes for the native writer is, value for value, the
    Iceberg transform as transforms.py computes it (bucket's Murmur3 included). Method: random and
    edge values per source type (nulls too) through with_partition_columns, compared with
    Transform.apply on the same values."""
    rng = random.Random(15)
    ints, longs, days, micros, strings, decimals = _values(rng)
    n = max(map(len, (ints, longs, days, micros, strings, decimals)))

    def col(values, arrow_type):
        values = [values[i % len(values)] for i in range(n)]
        values[n // 2] = None
        return pa.array(values, arrow_type)

    arrow = pa.table({
        "i": col(ints, pa.int32()), "l": col(longs, pa.int64()),
        "d": col([datetime.date(1970, 1, 1) + datetime.timedelta(days=v) for v in days], pa.date32()),
        "ts": col([EPOCH + datetime.timedelta(microseconds=v) for v in micros], pa.timestamp("us")),
        "tz": col([EPOCH + datetime.timedelta(microseconds=v) for v in micros], pa.timestamp("us", tz="UTC")),
        "ti": col([v for v in ints if v > -2**31 + 100], pa.int32()),
        "tl": col([v for v in longs if v > -2**63 + 100], pa.int64()),
        "s": col(strings, pa.string()), "b": col([s.encode() for s in strings], pa.binary()),
        "dec": col(decimals, pa.decimal128(12, 2)),
    })
    schema = T.schema_from_arrow(arrow.schema)
    spec_text = ("bucket(16, i), bucket(1000, l), bucket(5, d), bucket(9, ts), bucket(9, tz), "
                 "bucket(11, s), bucket(3, b), bucket(13, dec), truncate(10, ti), truncate(7, tl), truncate(3, s), "
                 "truncate(2, b), truncate(50, dec), year(d), month(d), day(d), year(ts), month(ts), day(ts), hour(ts), "
                 "year(tz), month(tz), day(tz), hour(tz), l, s")
    spec = X.parse_partition_spec(spec_text, schema)
    df = spark.createDataFrame(arrow)
    out, names = with_partition_columns(df, schema, spec)
    assert len(names) == len(spec.fields) and names[-2:] == ["l_identity", "s_identity"]
    got = out.select(*[f"`{c}`" for c in names]).toArrow()
    assert got.num_rows == n
    for pf, name in zip(spec.fields, names):
        source = schema.find_field(pf.source_id)
        expected = pf.transform.apply_arrow(arrow.column(source.name)).to_pylist()
        actual = [_norm(v) for v in got.column(name).to_pylist()]
        expected = [_norm(v) for v in expected]
        mismatches = [(i, arrow.column(source.name)[i].as_py(), a, e)
                      for i, (a, e) in enumerate(zip(actual, expected)) if a != e]
        assert not mismatches, f"{pf.transform}({source.name}): {mismatches[:3]}"


def _norm(v):
    """Days for dates (Spark's DATE column against the spec's day numbers)."""
    return (v - datetime.date(1970, 1, 1)).days if isinstance(v, datetime.date) else v
