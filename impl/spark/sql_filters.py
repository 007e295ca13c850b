"""icefloe row filters (impl/format/expressions.py, bound) as Spark Columns with the same
semantics, for the native paths: an overwrite's rows are checked against its filter in the
write job itself, and a native read applies its filter in Spark (where Spark's Parquet
reader also prunes row groups by it).

Semantics kept (expressions.py): SQL three-valued logic; NaN compares false except `!=`,
which is true (Spark orders NaN above every number and makes NaN = NaN true, so float
comparisons are guarded with `isnan`).
"""
from __future__ import annotations

from decimal import Decimal

from icefloe.impl.format import expressions as E
from icefloe.impl.format import types as T


class NotConvertible(Exception):
    pass


def _ref(p: E.BoundPredicate):
    from pyspark.sql import functions as F
    col = F.col("`" + p.path[0].replace("`", "``") + "`")
    for name in p.path[1:]:
        col = col.getField(name)
    return col


def _literal(t: T.IcebergType, value):
    from pyspark.sql import functions as F
    if isinstance(t, T.DateType):
        return F.date_from_unix_date(F.lit(int(value)))
    if isinstance(t, T.TimestamptzType):
        return F.timestamp_micros(F.lit(int(value)))
    if isinstance(t, T.TimestampType):
        return F.expr(f"timestampadd(MICROSECOND, {int(value)}, timestamp_ntz'1970-01-01 00:00:00')")
    if isinstance(t, T.DecimalType):
        return F.lit(Decimal(value)).cast(f"decimal({t.precision},{t.scale})")
    if isinstance(t, (T.BinaryType, T.FixedType)):
        return F.unhex(F.lit(bytes(value).hex()))
    if isinstance(t, T.IntegerType):
        return F.lit(int(value)).cast("int")
    if isinstance(t, T.FloatType):
        return F.lit(float(value)).cast("float")
    if isinstance(t, (T.LongType, T.DoubleType, T.StringType, T.BooleanType)):
        return F.lit(value)
    raise NotConvertible(f"a literal of type {t}")


def to_column(expr: E.Expression):
    """The bound expression as a Spark Column (NotConvertible for uuid and time columns)."""
    from pyspark.sql import functions as F
    if isinstance(expr, E.AlwaysTrue):
        return F.lit(True)
    if isinstance(expr, E.AlwaysFalse):
        return F.lit(False)
    if isinstance(expr, E.And):
        return to_column(expr.left) & to_column(expr.right)
    if isinstance(expr, E.Or):
        return to_column(expr.left) | to_column(expr.right)
    if isinstance(expr, E.Not):
        return ~to_column(expr.child)
    if not isinstance(expr, E.BoundPredicate):
        raise NotConvertible("to_column needs a bound expression")
    t, op, ref = expr.field.type, expr.op, _ref(expr)
    if isinstance(t, (T.UUIDType, T.TimeType)):
        raise NotConvertible(f"a filter on a {t} column")
    floating = isinstance(t, (T.FloatType, T.DoubleType))
    if op == E.IS_NULL:
        return ref.isNull()
    if op == E.NOT_NULL:
        return ref.isNotNull()
    if op in (E.IS_NAN, E.NOT_NAN):  # null in, unknown out (Spark's isnan(null) is false)
        nan = F.isnan(ref) if floating else F.lit(False)
        return F.when(ref.isNotNull(), nan if op == E.IS_NAN else ~nan)
    if op in (E.STARTS_WITH, E.NOT_STARTS_WITH):
        hit = ref.startswith(F.lit(expr.literals[0]))
        return hit if op == E.STARTS_WITH else ~hit
    lits = [_literal(t, v) for v in expr.literals]
    if op in (E.IN, E.NOT_IN):
        parts = [_compare(ref, E.EQ if op == E.IN else E.NOT_EQ, v, floating) for v in lits]
        out = parts[0]
        for part in parts[1:]:
            out = (out | part) if op == E.IN else (out & part)
        return out
    return _compare(ref, op, lits[0], floating)


def _compare(ref, op: str, lit, floating: bool):
    from pyspark.sql import functions as F
    c = {E.EQ: ref.__eq__, E.NOT_EQ: ref.__ne__, E.LT: ref.__lt__, E.LT_EQ: ref.__le__,
         E.GT: ref.__gt__, E.GT_EQ: ref.__ge__}[op](lit)
    if not floating:
        return c
    nan = F.isnan(ref) | F.isnan(lit)
    # NaN on either side: false, except for != (true); null stays unknown.
    return F.when(ref.isNull(), None).when(nan, F.lit(op == E.NOT_EQ)).otherwise(c)


def not_true(column):
    """Rows for which a filter is not true (false or unknown)."""
    from pyspark.sql import functions as F
    return F.coalesce(~column, F.lit(True))

