"""Scan planning evaluators (Iceberg spec: "Scan Planning", "Partition Transforms" for
projection, "Manifests" / "Manifest Lists" for the metrics and partition summaries).

Planning is conservative: `might_match` answers False only when no row can match.
Inclusive projection turns a row filter into a filter on partition values that every
matching row's partition satisfies; it is evaluated against a data file's partition tuple
and against a manifest's partition field summaries. The metrics evaluator reads a data
file's value/null/NaN counts and lower/upper bounds. The semantics are expressions.py's.

TLA+: no action; planning only reads committed snapshots.
"""
from __future__ import annotations

import math
from decimal import Decimal
from typing import Any, Callable

from icefloe.impl.format import conversions, types as T
from icefloe.impl.format.expressions import (
    EQ, GT, GT_EQ, IN, IS_NAN, IS_NULL, LT, LT_EQ, NOT_EQ, NOT_IN, NOT_NAN, NOT_NULL, NOT_STARTS_WITH,
    STARTS_WITH, AlwaysFalse, AlwaysTrue, And, BoundPredicate, Expression, ExpressionError, Or, and_,
    bind, or_, rewrite_not,
)
from icefloe.impl.format.manifest import DataFile, FieldSummary, ManifestFile
from icefloe.impl.format.transforms import (
    BucketTransform, DayTransform, HourTransform, IdentityTransform, MonthTransform,
    PartitionSpec, TruncateTransform, YearTransform, partition_type,
)

__all__ = ["project", "partition_might_match", "summaries_might_match", "metrics_might_match",
           "ManifestEvaluator", "PartitionEvaluator", "MetricsEvaluator"]


# -- inclusive projection onto partition values --------------------------------------------

def _step(t: T.IcebergType, value: Any, direction: int) -> Any:
    """The next representable value after `value` in `direction` (+1 / -1) for integral
    types: x < v is x <= v - 1 and x > v is x >= v + 1."""
    if isinstance(t, T.DecimalType):
        return value + direction * Decimal(1).scaleb(-t.scale)
    return value + direction


def _project_predicate(p: BoundPredicate, transform, pfield: T.NestedField) -> Expression | None:
    """A predicate on the partition field implied by `p`, or None (no information)."""
    source = p.field.type

    def apply(v):
        return transform.apply(v, source)

    def bound(op, lits=None):
        return BoundPredicate(op, pfield, (pfield.name,), p.literals if lits is None else tuple(lits))

    op = p.op
    if isinstance(transform, IdentityTransform):
        return bound(op)
    if op in (IS_NULL, NOT_NULL):  # every non-void transform maps null to null and only null
        return bound(op)
    if isinstance(transform, BucketTransform):
        if op == EQ:
            return bound(EQ, [apply(p.literals[0])])
        if op == IN:
            return bound(IN, sorted({apply(v) for v in p.literals}))
        return None
    ordered = isinstance(transform, (YearTransform, MonthTransform, DayTransform, HourTransform)) or (
        isinstance(transform, TruncateTransform))
    if not ordered:
        return None
    integral = not isinstance(source, (T.StringType, T.BinaryType))
    v = p.literals[0] if p.literals else None
    if op == EQ:
        return bound(EQ, [apply(v)])
    if op == IN:
        return bound(IN, sorted({apply(x) for x in p.literals}))
    if op in (LT, LT_EQ):
        return bound(LT_EQ, [apply(_step(source, v, -1) if op == LT and integral else v)])
    if op in (GT, GT_EQ):
        return bound(GT_EQ, [apply(_step(source, v, +1) if op == GT and integral else v)])
    if op == STARTS_WITH and isinstance(transform, TruncateTransform):
        return bound(STARTS_WITH) if len(v) <= transform.width else bound(EQ, [apply(v)])
    return None


def project(expr: Expression, spec: PartitionSpec, schema: T.Schema) -> Expression:
    """Inclusive projection: a filter on partition values that the partition of every row
    matching `expr` satisfies. Leaves reference the partition fields of `spec`."""
    ptype = partition_type(spec, schema)
    by_source: dict[int, list] = {}
    for pf, field in zip(spec.fields, ptype.fields):
        by_source.setdefault(pf.source_id, []).append((pf.transform, field))

    def visit(e: Expression) -> Expression:
        if isinstance(e, (AlwaysTrue, AlwaysFalse)):
            return e
        if isinstance(e, And):
            return and_(visit(e.left), visit(e.right))
        if isinstance(e, Or):
            return or_(visit(e.left), visit(e.right))
        if not isinstance(e, BoundPredicate):
            raise ExpressionError("project needs a bound expression without Not")
        parts = []
        for transform, field in by_source.get(e.field.field_id, ()):
            try:
                projected = _project_predicate(e, transform, field)
            except (T.FormatError, ValueError, OverflowError):
                projected = None  # e.g. a literal at the edge of the type's range
            if projected is not None:
                parts.append(projected)
        return and_(*parts)
    return visit(rewrite_not(expr))


# -- evaluators ----------------------------------------------------------------------------

def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _holds(op: str, value: Any, lits: tuple) -> bool:
    """Exact evaluation of one predicate on one value (unknown counts as false)."""
    if op == IS_NULL:
        return value is None
    if op == NOT_NULL:
        return value is not None
    if value is None:
        return False
    if op == IS_NAN:
        return _is_nan(value)
    if op == NOT_NAN:
        return not _is_nan(value)
    if op == NOT_EQ:
        return value != lits[0]
    if op == NOT_IN:
        return all(value != v for v in lits)
    if op == IN:
        return any(value == v for v in lits)
    if op == STARTS_WITH:
        return value.startswith(lits[0])
    if op == NOT_STARTS_WITH:
        return not value.startswith(lits[0])
    return {EQ: value == lits[0], LT: value < lits[0], LT_EQ: value <= lits[0],
            GT: value > lits[0], GT_EQ: value >= lits[0]}[op]


def _evaluate(expr: Expression, leaf: Callable[[BoundPredicate], bool]) -> bool:
    """Evaluate a Not-free expression with `leaf` deciding each predicate."""
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, And):
        return _evaluate(expr.left, leaf) and _evaluate(expr.right, leaf)
    if isinstance(expr, Or):
        return _evaluate(expr.left, leaf) or _evaluate(expr.right, leaf)
    if isinstance(expr, BoundPredicate):
        return leaf(expr)
    raise ExpressionError(f"cannot evaluate {type(expr).__name__}; bind and rewrite_not first")


def partition_might_match(projected: Expression, spec: PartitionSpec, partition: tuple) -> bool:
    """May a data file with this partition tuple hold matching rows? (`projected` from
    `project`.) Exact on the tuple, so conservative for the rows."""
    position = {pf.field_id: i for i, pf in enumerate(spec.fields)}
    return _evaluate(projected, lambda p: _holds(p.op, partition[position[p.field.field_id]], p.literals))


def _range_might_match(op: str, lits: tuple, lower: Any, upper: Any, t: T.IcebergType) -> bool:
    """May some value in [lower, upper] (either may be None: unknown) satisfy op? Only
    for values that are neither null nor NaN."""
    if t == T.UUID and op not in (EQ, IN):
        return True  # icefloe does not rely on UUID ordering across writers
    if op in (LT, LT_EQ):
        return lower is None or (lower < lits[0] if op == LT else lower <= lits[0])
    if op in (GT, GT_EQ):
        return upper is None or (upper > lits[0] if op == GT else upper >= lits[0])
    if op in (EQ, IN):
        return any((lower is None or lower <= v) and (upper is None or v <= upper) for v in lits)
    if op == STARTS_WITH:
        n = len(lits[0])
        return (lower is None or lower[:n] <= lits[0]) and (upper is None or upper[:n] >= lits[0])
    return True


def _stats_might_match(p: BoundPredicate, *, values: int | None, nulls: int | None,
                       nans: int | None, lower: Any, upper: Any, all_null_or_nan: bool) -> bool:
    """One predicate against column statistics (counts may be None: unknown)."""
    op, t = p.op, p.field.type
    floating = t in (T.FLOAT, T.DOUBLE)
    all_null = values is not None and nulls is not None and nulls == values
    if op == IS_NULL:
        return nulls is None or nulls > 0
    if op == NOT_NULL:
        return not all_null
    if all_null:
        return False
    if op == IS_NAN:
        return floating and (nans is None or nans > 0)
    if op == NOT_NAN:
        return not (values is not None and nans is not None and nulls is not None and nans + nulls == values)
    if op in (NOT_EQ, NOT_IN, NOT_STARTS_WITH):
        return True
    if all_null_or_nan:
        return False  # ordering, equality and prefixes never hold for null or NaN
    return _range_might_match(op, p.literals, lower, upper, t)


def summaries_might_match(projected: Expression, spec: PartitionSpec, schema: T.Schema,
                          summaries: tuple[FieldSummary, ...] | None) -> bool:
    """May a manifest with these partition field summaries list matching files?"""
    if summaries is None:
        return True
    ptype = partition_type(spec, schema)
    position = {f.field_id: i for i, f in enumerate(ptype.fields)}

    def leaf(p: BoundPredicate) -> bool:
        i = position[p.field.field_id]
        if i >= len(summaries):
            return True
        s = summaries[i]
        t = ptype.fields[i].type
        lower = None if s.lower_bound is None else conversions.from_bytes(t, s.lower_bound)
        upper = None if s.upper_bound is None else conversions.from_bytes(t, s.upper_bound)
        # No bounds with nulls or NaN present: every value is one of those.
        empty = lower is None and upper is None and (s.contains_null or bool(s.contains_nan))
        if p.op == IS_NULL:
            return s.contains_null
        if p.op == NOT_NULL:
            return not (empty and not s.contains_nan)
        if p.op == IS_NAN:
            return s.contains_nan is None or s.contains_nan
        if p.op == NOT_NAN:
            return not empty
        if p.op in (NOT_EQ, NOT_IN, NOT_STARTS_WITH):
            return not (empty and not s.contains_nan)
        if empty:
            return False
        return _range_might_match(p.op, p.literals, lower, upper, t)
    return _evaluate(projected, leaf)


def metrics_might_match(expr: Expression, data_file: DataFile) -> bool:
    """May `data_file` hold rows matching the bound `expr`, given its column metrics?"""
    def stat(d: dict | None, fid: int):
        return None if d is None else d.get(fid)

    def leaf(p: BoundPredicate) -> bool:
        fid, t = p.field.field_id, p.field.type
        values, nulls, nans = (stat(data_file.value_counts, fid), stat(data_file.null_value_counts, fid),
                               stat(data_file.nan_value_counts, fid))
        lo, hi = stat(data_file.lower_bounds, fid), stat(data_file.upper_bounds, fid)
        lower = None if lo is None else conversions.from_bytes(t, lo)
        upper = None if hi is None else conversions.from_bytes(t, hi)
        known = values is not None and nulls is not None and (nans is not None or t not in (T.FLOAT, T.DOUBLE))
        all_null_or_nan = known and nulls + (nans or 0) == values
        return _stats_might_match(p, values=values, nulls=nulls, nans=nans, lower=lower,
                                  upper=upper, all_null_or_nan=all_null_or_nan)
    if data_file.record_count == 0:
        return False
    return _evaluate(rewrite_not(expr), leaf)


class MetricsEvaluator:
    """`MetricsEvaluator(filter, schema).might_match(data_file)`; binds once."""

    def __init__(self, expr: Expression, schema: T.Schema, case_sensitive: bool = True):
        self.expr = rewrite_not(bind(expr, schema, case_sensitive))

    def might_match(self, data_file: DataFile) -> bool:
        return metrics_might_match(self.expr, data_file)


VERDICTS_MAX = 1 << 16  # partition tuples whose verdict a PartitionEvaluator remembers


class PartitionEvaluator:
    """`PartitionEvaluator(filter, spec, schema).might_match(partition_tuple)`: the filter
    bound and projected once (per spec, per plan), each distinct tuple judged once (equal
    tuples compare alike under every predicate, so they share a verdict)."""

    def __init__(self, expr: Expression, spec: PartitionSpec, schema: T.Schema, case_sensitive: bool = True):
        self.spec = spec
        self.projected = project(bind(expr, schema, case_sensitive), spec, schema)
        self._position = {pf.field_id: i for i, pf in enumerate(spec.fields)}
        self._verdicts: dict[tuple, bool] = {}

    def might_match(self, partition: tuple) -> bool:
        verdict = self._verdicts.get(partition)
        if verdict is None:
            position = self._position
            verdict = _evaluate(self.projected,
                                lambda p: _holds(p.op, partition[position[p.field.field_id]], p.literals))
            if len(self._verdicts) < VERDICTS_MAX:
                self._verdicts[partition] = verdict
        return verdict


class ManifestEvaluator:
    """`ManifestEvaluator(filter, spec, schema).might_match(manifest_file)` via its
    partition field summaries (the manifest must be written with `spec`)."""

    def __init__(self, expr: Expression, spec: PartitionSpec, schema: T.Schema, case_sensitive: bool = True):
        self.spec, self.schema = spec, schema
        self.projected = project(bind(expr, schema, case_sensitive), spec, schema)

    def might_match(self, manifest: ManifestFile) -> bool:
        if manifest.partition_spec_id != self.spec.spec_id:
            raise ExpressionError(f"manifest {manifest.manifest_path} uses spec "
                                  f"{manifest.partition_spec_id}, not {self.spec.spec_id}")
        return summaries_might_match(self.projected, self.spec, self.schema, manifest.partitions)
