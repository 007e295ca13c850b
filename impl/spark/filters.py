"""Spark's pushed filters (pyspark.sql.datasource.Filter) as icefloe row filters
(impl/format/expressions.py), for pruning manifests and files and for filtering rows.

A filter is taken only if it converts and binds to the table schema; everything else is
handed back to Spark, which then evaluates it after the scan. Filters taken are applied
to the rows by the reader too, so Spark may drop them (the API's contract).
"""
from __future__ import annotations

import datetime
from decimal import Decimal

from pyspark.sql import datasource as D

from icefloe.impl.format import expressions as E
from icefloe.impl.format import types as T

_COMPARE = {D.EqualTo: E.EQ, D.GreaterThan: E.GT, D.GreaterThanOrEqual: E.GT_EQ,
            D.LessThan: E.LT, D.LessThanOrEqual: E.LT_EQ}


class NotConvertible(Exception):
    pass


def _literal(value):
    if value is None or isinstance(value, (list, tuple, dict, bytes, bytearray)):
        raise NotConvertible(f"literal {value!r}")
    if isinstance(value, (bool, int, float, str, Decimal)):
        return value
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc)
        return value.isoformat()
    if isinstance(value, datetime.date):
        return value.isoformat()
    raise NotConvertible(f"literal of type {type(value).__name__}")


def _term(attribute) -> str:
    if any("." in part for part in attribute):
        raise NotConvertible(f"column path {attribute!r}")
    return ".".join(attribute)


def to_expression(f) -> E.Expression:
    """One Spark filter as an unbound icefloe expression; NotConvertible otherwise."""
    op = _COMPARE.get(type(f))
    if op is not None:
        return E.Predicate(op, _term(f.attribute), (_literal(f.value),))
    if isinstance(f, D.In):
        return E.Predicate(E.IN, _term(f.attribute), tuple(_literal(v) for v in f.value))
    if isinstance(f, D.IsNull):
        return E.Predicate(E.IS_NULL, _term(f.attribute))
    if isinstance(f, D.IsNotNull):
        return E.Predicate(E.NOT_NULL, _term(f.attribute))
    if isinstance(f, D.StringStartsWith):
        return E.Predicate(E.STARTS_WITH, _term(f.attribute), (_literal(f.value),))
    if isinstance(f, D.Not):
        return E.not_(to_expression(f.child))
    raise NotConvertible(type(f).__name__)


def push(filters, schema: T.Schema) -> tuple[E.Expression, list]:
    """(the AND of the filters taken, the filters left to Spark)."""
    taken, left = [], []
    for f in filters:
        try:
            expr = to_expression(f)
            E.bind(expr, schema)
        except (NotConvertible, E.ExpressionError):
            left.append(f)
            continue
        taken.append(expr)
    return (E.and_(*taken) if taken else E.AlwaysTrue()), left
