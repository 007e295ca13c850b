"""Row filter expressions (Iceberg spec: "Scan Planning"): the tree, binding to a schema,
negation pushed down, and Arrow's form of a bound filter. The text form is parsed by
expression_parser.py; planning evaluates filters in evaluators.py.

Semantics (one definition for every consumer): SQL three-valued logic with IEEE NaN; a
row matches when the filter is true. A comparison, `in`, `not in` or `starts_with` on a
null is unknown; NaN compares false except `!=`, which is true; `is null` and `is nan`
are never unknown on non-null input. `to_arrow` is the reference evaluator (Arrow's Kleene
logic is exactly this), and `rewrite_not` preserves it: `not (x < 5)` becomes
`x >= 5 or x is nan` on floating columns.

TLA+: no action; planning only reads committed snapshots.
"""
from __future__ import annotations

import math

import re
import struct
import uuid
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.impl.format import conversions, types as T
from icefloe.impl.outcomes import IcefloeError

__all__ = [
    "ExpressionError", "Expression", "AlwaysTrue", "AlwaysFalse", "And", "Or", "Not",
    "Predicate", "BoundPredicate", "and_", "or_", "not_", "bind", "rewrite_not", "to_arrow",
    "literal_value", "OPS", "IN_VALUES_MAX",
]

EQ, NOT_EQ, LT, LT_EQ, GT, GT_EQ = "=", "!=", "<", "<=", ">", ">="
IN, NOT_IN, IS_NULL, NOT_NULL = "in", "not in", "is null", "is not null"
IS_NAN, NOT_NAN, STARTS_WITH, NOT_STARTS_WITH = "is nan", "is not nan", "starts_with", "not starts_with"
COMPARISONS = (EQ, NOT_EQ, LT, LT_EQ, GT, GT_EQ)
SET_OPS = (IN, NOT_IN)
UNARY = (IS_NULL, NOT_NULL, IS_NAN, NOT_NAN)
OPS = COMPARISONS + SET_OPS + UNARY + (STARTS_WITH, NOT_STARTS_WITH)
_NEGATION = {EQ: NOT_EQ, NOT_EQ: EQ, LT: GT_EQ, LT_EQ: GT, GT: LT_EQ, GT_EQ: LT, IN: NOT_IN,
             NOT_IN: IN, IS_NULL: NOT_NULL, NOT_NULL: IS_NULL, IS_NAN: NOT_NAN, NOT_NAN: IS_NAN,
             STARTS_WITH: NOT_STARTS_WITH, NOT_STARTS_WITH: STARTS_WITH}
IN_VALUES_MAX = 10_000  # an `in` list longer than this is refused rather than planned slowly


class ExpressionError(IcefloeError):
    """A filter that cannot be parsed, bound to the schema, or converted. `position` is
    the character offset in the parsed text when known."""

    def __init__(self, message: str, position: int | None = None):
        super().__init__(message if position is None else f"{message} (at character {position})")
        self.position = position


# -- the AST -------------------------------------------------------------------------------

class Expression:
    def __and__(self, other: "Expression") -> "Expression":
        return and_(self, other)

    def __or__(self, other: "Expression") -> "Expression":
        return or_(self, other)

    def __invert__(self) -> "Expression":
        return not_(self)


@dataclass(frozen=True)
class AlwaysTrue(Expression):
    pass


@dataclass(frozen=True)
class AlwaysFalse(Expression):
    pass


@dataclass(frozen=True)
class And(Expression):
    left: Expression
    right: Expression


@dataclass(frozen=True)
class Or(Expression):
    left: Expression
    right: Expression


@dataclass(frozen=True)
class Not(Expression):
    child: Expression


@dataclass(frozen=True)
class Predicate(Expression):
    """Unbound: `term` is a column name (dotted for struct fields)."""
    op: str
    term: str
    literals: tuple = ()

    def __post_init__(self):
        if self.op not in OPS:
            raise ExpressionError(f"unknown operator {self.op!r}")
        arity = 0 if self.op in UNARY else None if self.op in SET_OPS else 1
        if (arity is not None and len(self.literals) != arity) or (arity is None and not self.literals):
            raise ExpressionError(f"{self.op} takes {'a list of' if arity is None else arity} literal(s)")


@dataclass(frozen=True)
class BoundPredicate(Expression):
    """Bound to a field: `path` names it from the top-level struct, `literals` are
    internal values of the field's type (see conversions.py)."""
    op: str
    field: T.NestedField
    path: tuple[str, ...]
    literals: tuple = ()


def and_(*exprs: Expression) -> Expression:
    out: Expression = AlwaysTrue()
    for e in exprs:
        if isinstance(e, AlwaysFalse) or isinstance(out, AlwaysFalse):
            out = AlwaysFalse()
        elif isinstance(out, AlwaysTrue):
            out = e
        elif not isinstance(e, AlwaysTrue):
            out = And(out, e)
    return out


def or_(*exprs: Expression) -> Expression:
    out: Expression = AlwaysFalse()
    for e in exprs:
        if isinstance(e, AlwaysTrue) or isinstance(out, AlwaysTrue):
            out = AlwaysTrue()
        elif isinstance(out, AlwaysFalse):
            out = e
        elif not isinstance(e, AlwaysFalse):
            out = Or(out, e)
    return out


def not_(e: Expression) -> Expression:
    if isinstance(e, AlwaysTrue):
        return AlwaysFalse()
    if isinstance(e, AlwaysFalse):
        return AlwaysTrue()
    return e.child if isinstance(e, Not) else Not(e)


# -- binding -------------------------------------------------------------------------------

def _struct_paths(schema: T.Schema) -> dict[int, tuple[str, ...]]:
    """Field id -> names from the top, for primitive fields reachable through structs only
    (list elements and map entries cannot be filtered row-wise)."""
    out: dict[int, tuple[str, ...]] = {}
    stack = [(f, (f.name,)) for f in schema.fields]
    while stack:  # bounded by the number of fields
        f, path = stack.pop()
        if f.type.is_primitive:
            out[f.field_id] = path
        elif isinstance(f.type, T.StructType):
            stack.extend((c, path + (c.name,)) for c in f.type.fields)
    return out


def _float32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _timestamp_text(text: str, with_zone: bool) -> str:
    text = text.strip().replace(" ", "T", 1)
    if "T" not in text:
        text += "T00:00:00"
    if with_zone and not (text.endswith("Z") or re.search(r"[+-]\d{2}:\d{2}$", text.split("T", 1)[1])):
        text += "+00:00"  # a timestamptz literal without a zone is read as UTC
    return text


def literal_value(t: T.IcebergType, value: Any) -> Any:
    """`value` (a parsed or Python literal) as an internal value of type `t`."""
    bad = ExpressionError(f"{value!r} is not a {t} literal")
    if isinstance(value, bool) != isinstance(t, T.BooleanType):
        raise bad
    try:
        if isinstance(t, T.BooleanType):
            return value
        if isinstance(t, (T.IntegerType, T.LongType)):
            if isinstance(value, str) or (not isinstance(value, int) and value != int(value)):
                raise bad
            result = int(value)
            conversions.to_bytes(t, result)  # range check
            return result
        if isinstance(t, (T.FloatType, T.DoubleType)):
            if isinstance(value, str):
                raise bad
            result = float(value)
            return _float32(result) if isinstance(t, T.FloatType) else result
        if isinstance(t, T.DecimalType):
            if isinstance(value, str):
                value = Decimal(value)
            d = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
            unscaled = conversions.decimal_to_unscaled(d, t.scale)
            if len(str(abs(unscaled))) > t.precision:
                raise bad
            return conversions.unscaled_to_decimal(unscaled, t.scale)
        if isinstance(t, T.StringType):
            if not isinstance(value, str):
                raise bad
            value.encode("utf-8")  # lone surrogates (undecodable bytes in argv) are not a string value
            return value
        if isinstance(t, T.DateType):
            return value if isinstance(value, int) else conversions.from_json_value(t, value)
        if isinstance(t, (T.TimeType,)):
            return value if isinstance(value, int) else conversions.from_json_value(t, value)
        if isinstance(t, (T.TimestampType, T.TimestamptzType)):
            if isinstance(value, int):
                return value
            return conversions.from_json_value(t, _timestamp_text(value, isinstance(t, T.TimestamptzType)))
        if isinstance(t, T.UUIDType):
            return value if isinstance(value, uuid.UUID) else uuid.UUID(value)
        if isinstance(t, (T.FixedType, T.BinaryType)):
            if not isinstance(value, bytes) or (isinstance(t, T.FixedType) and len(value) != t.length):
                raise ExpressionError(f"{t} literals must be bytes of the right length; the text "
                                      f"form has none")
            return value
    except (T.FormatError, ValueError, TypeError, InvalidOperation, OverflowError, AttributeError):
        raise bad from None  # UnicodeEncodeError is a ValueError
    raise bad


def bind(expr: Expression, schema: T.Schema, case_sensitive: bool = True) -> Expression:
    """Resolve names against `schema` and convert literals to the fields' types."""
    paths = _struct_paths(schema)

    def visit(e: Expression) -> Expression:
        if isinstance(e, (AlwaysTrue, AlwaysFalse, BoundPredicate)):
            return e
        if isinstance(e, And):
            return and_(visit(e.left), visit(e.right))
        if isinstance(e, Or):
            return or_(visit(e.left), visit(e.right))
        if isinstance(e, Not):
            return not_(visit(e.child))
        if not isinstance(e, Predicate):
            raise ExpressionError(f"cannot bind {type(e).__name__}: not an expression of this module")
        f = schema.field_by_name(e.term, case_sensitive)
        if f is None:
            raise ExpressionError(f"no column {e.term!r} in schema {schema.schema_id}")
        if f.field_id not in paths:
            raise ExpressionError(f"column {e.term!r} is not a primitive outside lists and maps")
        if e.op in (IS_NAN, NOT_NAN) and f.type not in (T.FLOAT, T.DOUBLE):
            raise ExpressionError(f"{e.op} needs a float or double column, {e.term!r} is {f.type}")
        if e.op in (STARTS_WITH, NOT_STARTS_WITH) and f.type != T.STRING:
            raise ExpressionError(f"{e.op} needs a string column, {e.term!r} is {f.type}")
        literals = tuple(literal_value(f.type, v) for v in e.literals)
        if e.op in SET_OPS:
            literals = tuple(sorted(set(literals), key=repr))
        if e.op in SET_OPS and len(literals) == 1:
            return BoundPredicate(EQ if e.op == IN else NOT_EQ, f, paths[f.field_id], literals)
        return BoundPredicate(e.op, f, paths[f.field_id], literals)
    return visit(expr)


# -- rewriting and Arrow -------------------------------------------------------------------

def rewrite_not(expr: Expression) -> Expression:
    """An equivalent bound expression without `Not` (negation pushed into predicates)."""
    def visit(e: Expression, negate: bool) -> Expression:
        if isinstance(e, (AlwaysTrue, AlwaysFalse)):
            return not_(e) if negate else e
        if isinstance(e, Not):
            return visit(e.child, not negate)
        if isinstance(e, And):
            parts = (visit(e.left, negate), visit(e.right, negate))
            return or_(*parts) if negate else and_(*parts)
        if isinstance(e, Or):
            parts = (visit(e.left, negate), visit(e.right, negate))
            return and_(*parts) if negate else or_(*parts)
        if not isinstance(e, BoundPredicate):
            raise ExpressionError("rewrite_not needs a bound expression; call bind first")
        if not negate:
            return e
        flipped = BoundPredicate(_NEGATION[e.op], e.field, e.path, e.literals)
        if e.op in (LT, LT_EQ, GT, GT_EQ) and e.field.type in (T.FLOAT, T.DOUBLE):
            # NaN fails every ordering, so it satisfies the negation of each.
            return or_(flipped, BoundPredicate(IS_NAN, e.field, e.path))
        return flipped
    return visit(expr, False)


def _arrow_ref(p: BoundPredicate) -> pc.Expression:
    ref = pc.field(*p.path)
    if p.field.type == T.UUID:
        ref = ref.cast(pa.binary(16))  # Arrow has no comparison kernels for the uuid type
    return ref


def _arrow_literal(p: BoundPredicate, value: Any) -> pa.Scalar:
    t = p.field.type
    if t == T.UUID:
        return pa.scalar(value.bytes, pa.binary(16))
    return pa.scalar(value, T.type_to_arrow(t))


IN_CHAIN_MAX = 16  # longer in / not in lists are evaluated as one is_in (to_arrow)


def to_arrow(expr: Expression) -> pc.Expression:
    """The bound expression as an Arrow filter with exactly the semantics above."""
    if isinstance(expr, AlwaysTrue):
        return pc.scalar(True)
    if isinstance(expr, AlwaysFalse):
        return pc.scalar(False)
    if isinstance(expr, And):
        return to_arrow(expr.left) & to_arrow(expr.right)
    if isinstance(expr, Or):
        return to_arrow(expr.left) | to_arrow(expr.right)
    if isinstance(expr, Not):
        return ~to_arrow(expr.child)
    if not isinstance(expr, BoundPredicate):
        raise ExpressionError("to_arrow needs a bound expression; call bind first")
    ref, op = _arrow_ref(expr), expr.op
    lits = [_arrow_literal(expr, v) for v in expr.literals]
    if op == IS_NULL:
        return ref.is_null()
    if op == NOT_NULL:
        return ref.is_valid()
    if op == IS_NAN:
        return pc.is_nan(ref)
    if op == NOT_NAN:
        return ~pc.is_nan(ref)
    if op == STARTS_WITH:
        return pc.starts_with(ref, pattern=expr.literals[0])
    if op == NOT_STARTS_WITH:
        return ~pc.starts_with(ref, pattern=expr.literals[0])
    if op in (IN, NOT_IN):
        if len(lits) > IN_CHAIN_MAX and not any(isinstance(v, float) and math.isnan(v) for v in expr.literals):
            # One is_in over the set: a chain of 10,000 ORs made a tree whose evaluation
            # overflowed Arrow's C++ stack (a segfault). is_in is false for a null, so
            # null rows are made unknown explicitly, as = and != make them.
            value_set = pa.array([v.as_py() for v in lits], lits[0].type)
            hit = pc.is_in(ref, value_set=value_set)
            return pc.if_else(ref.is_valid(), hit if op == IN else ~hit, pa.scalar(None, pa.bool_()))
        # Chains of = / != keep the null-is-unknown semantics that is_in lacks.
        parts = [ref == v if op == IN else ref != v for v in lits]
        out = parts[0]
        for part in parts[1:]:
            out = (out | part) if op == IN else (out & part)
        return out
    return {EQ: ref.__eq__, NOT_EQ: ref.__ne__, LT: ref.__lt__, LT_EQ: ref.__le__,
            GT: ref.__gt__, GT_EQ: ref.__ge__}[op](lits[0])
