"""Iceberg partition transforms evaluated in Spark (Iceberg spec "Partition Transforms",
Appendix B "32-bit Hash Requirements"), for the native write path (native_write.py):
Spark's own Parquet writer lays files out by these columns (`partitionBy`), so every file
holds the rows of one partition.

Each partition field becomes one Spark column whose values correspond one to one to the
transform's values (the DataFile's partition tuple itself is computed from the file's
data by impl/format/transforms.py, footers.py): identity is the source column; day is a
DATE (so its directory reads `ts_day=2024-01-02`); year, month and hour are the ints of
the spec; truncate of ints, strings and binary is a SQL expression; bucket of int, long,
date, timestamp and timestamptz is Murmur3 written in SQL arithmetic over bigints in a
chain of projections (exact under ANSI mode: no product leaves the 64-bit range, and
a projection per step keeps Catalyst from inlining a value used twice into an
exponentially large tree). Bucket of string, binary, decimal, uuid and fixed, and truncate
of decimals, run transforms.py itself in an Arrow UDF (one column to Python and back).
Tests check every column against transforms.py on the same values.
"""
from __future__ import annotations

import pyarrow as pa

from icefloe.impl.format import types as T
from icefloe.impl.format import transforms as X

M32 = 0xFFFFFFFF
C1, C2 = 0xCC9E2D51, 0x1B873593
F1, F2 = 0x85EBCA6B, 0xC2B2AE35
MICROS_PER_DAY, MICROS_PER_HOUR = 86_400_000_000, 3_600_000_000
EPOCH_NTZ = "timestamp_ntz'1970-01-01 00:00:00'"


class NotNative(Exception):
    """A schema or spec the native write path cannot lay out (the caller says why)."""


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def source_sql(schema: T.Schema, field_id: int) -> str:
    """The SQL reference of a (top-level or struct-nested) field."""
    path, t = [], schema.as_struct()
    while True:  # bounded by the schema's depth
        f = next((f for f in t.fields if _contains(f, field_id)), None)
        if f is None:
            raise NotNative(f"partition source field {field_id} is not reachable through structs")
        path.append(f.name)
        if f.field_id == field_id:
            return ".".join(quote(p) for p in path)
        t = f.type


def _contains(f: T.NestedField, field_id: int) -> bool:
    if f.field_id == field_id:
        return True
    return isinstance(f.type, T.StructType) and any(_contains(c, field_id) for c in f.type.fields)


def epoch_sql(src: str, t: T.IcebergType) -> str:
    """A bigint SQL expression: the value as Iceberg hashes and buckets it (ints as longs,
    dates as days, timestamps as microseconds since the epoch, UTC)."""
    if isinstance(t, (T.IntegerType, T.LongType)):
        return f"cast({src} as bigint)"
    if isinstance(t, T.DateType):
        return f"cast(unix_date({src}) as bigint)"
    if isinstance(t, T.TimestamptzType):
        return f"unix_micros({src})"
    if isinstance(t, T.TimestampType):  # without zone: the wall clock, no session time zone
        return f"timestampdiff(MICROSECOND, {EPOCH_NTZ}, {src})"
    raise NotNative(f"no epoch form for {t}")


def _floor_div(x: str, d: int) -> str:
    return f"(({x}) - pmod({x}, {d})) div {d}"


def _mul32(a: str, c: int) -> str:
    """(a * c) mod 2^32 for 0 <= a < 2^32, in 16-bit halves of c (no bigint overflow)."""
    lo, hi = c & 0xFFFF, c >> 16
    return f"((({a}) * {lo}) + (((({a}) * {hi}) & 65535) << 16)) & {M32}"


def _rotl32(a: str, r: int) -> str:
    return f"((({a}) << {r}) | shiftrightunsigned({a}, {32 - r})) & {M32}"


def murmur3_long_steps(value_sql: str, out: str, tmp: str) -> list[tuple[str, str]]:
    """(column name, SQL) steps computing Murmur3-32 (seed 0) of a bigint's 8 bytes,
    little-endian, as an unsigned int in column `out` (transforms.murmur3_32)."""
    k, h = f"{tmp}_k", f"{tmp}_h"
    v = f"{tmp}_v"
    steps = [(v, value_sql), (k, f"{quote(v)} & {M32}")]

    def mix_k(name):
        steps.append((name, _mul32(quote(name), C1)))
        steps.append((name, _rotl32(quote(name), 15)))
        steps.append((name, _mul32(quote(name), C2)))

    def mix_h(name_k, first):
        steps.append((h, quote(name_k) if first else f"{quote(h)} ^ {quote(name_k)}"))
        steps.append((h, _rotl32(quote(h), 13)))
        steps.append((h, f"(({quote(h)}) * 5 + {0xE6546B64}) & {M32}"))

    mix_k(k)
    mix_h(k, True)
    steps.append((k, f"shiftrightunsigned({quote(v)}, 32) & {M32}"))
    mix_k(k)
    mix_h(k, False)
    steps.append((h, f"{quote(h)} ^ 8"))
    steps.append((h, f"{quote(h)} ^ shiftrightunsigned({quote(h)}, 16)"))
    steps.append((h, _mul32(quote(h), F1)))
    steps.append((h, f"{quote(h)} ^ shiftrightunsigned({quote(h)}, 13)"))
    steps.append((h, _mul32(quote(h), F2)))
    steps.append((out, f"{quote(h)} ^ shiftrightunsigned({quote(h)}, 16)"))
    return steps


_INT_LIKE = (T.IntegerType, T.LongType, T.DateType, T.TimestampType, T.TimestamptzType)


def partition_steps(schema: T.Schema, pf: X.PartitionField, out: str, tmp: str):
    """Steps (column name, SQL text or a Column) that leave the partition field's column in `out`."""
    t = schema.find_type(pf.source_id)
    if t is None:
        raise NotNative(f"partition source field {pf.source_id} is not in the schema")
    src = source_sql(schema, pf.source_id)
    tr = pf.transform
    if isinstance(tr, X.IdentityTransform):
        return [(out, src)]
    if isinstance(tr, X.DayTransform):
        if isinstance(t, T.DateType):
            return [(out, src)]
        return [(out, f"date_from_unix_date(cast({_floor_div(epoch_sql(src, t), MICROS_PER_DAY)} as int))")]
    if isinstance(tr, (X.YearTransform, X.MonthTransform)):
        day = src if isinstance(t, T.DateType) else \
            f"date_from_unix_date(cast({_floor_div(epoch_sql(src, t), MICROS_PER_DAY)} as int))"
        if isinstance(tr, X.YearTransform):
            return [(out, f"year({day}) - 1970")]
        return [(out, f"(year({day}) - 1970) * 12 + month({day}) - 1")]
    if isinstance(tr, X.HourTransform):
        return [(out, f"cast({_floor_div(epoch_sql(src, t), MICROS_PER_HOUR)} as int)")]
    if isinstance(tr, X.TruncateTransform):
        w = tr.width
        if isinstance(t, (T.IntegerType, T.LongType)):
            return [(out, f"{src} - pmod({src}, {w})")]
        if isinstance(t, (T.StringType, T.BinaryType)):
            return [(out, f"substring({src}, 1, {w})")]
        return [(out, _arrow_udf(tr, t, src))]
    if isinstance(tr, X.BucketTransform):
        if isinstance(t, _INT_LIKE):
            hashed = f"{tmp}_hash"
            steps = murmur3_long_steps(epoch_sql(src, t), hashed, tmp)
            return steps + [(out, f"cast(({quote(hashed)} & 2147483647) % {tr.num_buckets} as int)")]
        return [(out, _arrow_udf(tr, t, src))]
    raise NotNative(f"transform {tr} is not laid out natively")


def _arrow_udf(tr: X.Transform, t: T.IcebergType, src: str):
    """transforms.py's own vectorized transform as a Spark Arrow UDF on one column."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_type
    result = T.type_to_arrow(tr.result_type(t))
    if isinstance(t, T.DecimalType) and isinstance(tr, X.TruncateTransform):
        result = pa.decimal128(38, t.scale)  # truncating toward -inf may add a digit
    spark_type = from_arrow_type(result)
    uuid_source = isinstance(t, T.UUIDType)

    def apply(array: pa.Array) -> pa.Array:
        if uuid_source:  # Spark hands uuids over as their 16 bytes
            array = pa.ExtensionArray.from_storage(T.type_to_arrow(t), array.cast(pa.binary(16)))
        return tr.apply_arrow(array).cast(result)

    return F.arrow_udf(apply, spark_type)(F.expr(src))


def with_partition_columns(df, schema: T.Schema, spec: X.PartitionSpec, columns: list[str] | None = None) -> tuple:
    """`df` plus one column per non-void partition field (named by the field where no
    column of `df` has that name, else `<name>_<transform>`), and their names in spec
    order. Helper columns of the hash chains are dropped. `columns`: df's column names,
    when the caller knows them (asking Spark is a round trip to the JVM)."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F
    chains, names = partition_chains(schema, spec, df.columns if columns is None else columns)
    if not chains:
        return df, []
    helpers = {column for chain in chains for column, _ in chain} - set(names)
    # One projection per step level: the fields' chains advance side by side.
    for level in range(max(len(c) for c in chains)):
        df = df.withColumns({column: sql if isinstance(sql, Column) else F.expr(sql)
                             for column, sql in (c[level] for c in chains if level < len(c))})
    return (df.drop(*sorted(helpers)) if helpers else df), names


def partition_chains(schema: T.Schema, spec: X.PartitionSpec, columns: list[str]) -> tuple[list, list[str]]:
    """For each non-void partition field, the steps (partition_steps) that compute its column
    over a frame with `columns`, and the partition columns' names in spec order (the field's
    name where no column has it, else `<name>_<transform>`)."""
    taken = {c.lower() for c in columns}
    names, chains = [], []
    for i, pf in enumerate(spec.fields):
        if isinstance(pf.transform, X.VoidTransform):
            continue
        name = pf.name
        if name.lower() in taken:
            name = f"{pf.name}_{str(pf.transform).split('[')[0]}"
        n = 0
        while name.lower() in taken:  # bounded by the number of columns
            n += 1
            name = f"{pf.name}_{n}"
        taken.add(name.lower())
        chains.append(partition_steps(schema, pf, name, f"__icefloe_p{i}"))
        names.append(name)
    return chains, names
