"""Row filter expressions and scan planning evaluators (Iceberg spec: "Scan Planning",
"Partition Transforms" for projection, "Manifests" / "Manifest Lists" for the metrics and
partition summaries the evaluators read).

Semantics (one definition for every consumer): SQL three-valued logic with IEEE NaN; a
row matches when the filter is true. A comparison, `in`, `not in` or `starts_with` on a
null is unknown; NaN compares false except `!=`, which is true; `is null` and `is nan`
are never unknown on non-null input. `to_arrow` is the reference evaluator (Arrow's Kleene
logic is exactly this), and `rewrite_not` preserves it: `not (x < 5)` becomes
`x >= 5 or x is nan` on floating columns.

Planning is conservative: `might_match` answers False only when no row can match.
Inclusive projection turns a row filter into a filter on partition values that every
matching row's partition satisfies; it is evaluated against a data file's partition tuple
and against a manifest's partition field summaries. The metrics evaluator reads a data
file's value/null/NaN counts and lower/upper bounds.

TLA+: no action; planning only reads committed snapshots.
"""
from __future__ import annotations

import math
import re
import struct
import uuid
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.impl.format import conversions, types as T
from icefloe.impl.format.manifest import DataFile, FieldSummary, ManifestFile
from icefloe.impl.format.transforms import (
    BucketTransform, DayTransform, HourTransform, IdentityTransform, MonthTransform,
    PartitionSpec, TruncateTransform, YearTransform, partition_type,
)
from icefloe.impl.outcomes import IcefloeError

__all__ = [
    "ExpressionError", "Expression", "AlwaysTrue", "AlwaysFalse", "And", "Or", "Not",
    "Predicate", "BoundPredicate", "and_", "or_", "not_", "parse", "bind", "rewrite_not",
    "to_arrow", "project", "partition_might_match", "summaries_might_match",
    "metrics_might_match", "ManifestEvaluator", "PartitionEvaluator", "MetricsEvaluator",
    "OPS",
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


# -- parsing the CLI form ------------------------------------------------------------------

_TOKEN_RE = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<number>-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<quoted>"(?:[^"]|"")+"|`[^`]+`)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<op><=|>=|!=|<>|==|=|<|>|\(|\)|,)
""", re.VERBOSE)
_KEYWORDS = {"and", "or", "not", "in", "is", "null", "nan", "true", "false", "starts_with"}
_CMP = {"=": EQ, "==": EQ, "!=": NOT_EQ, "<>": NOT_EQ, "<": LT, "<=": LT_EQ, ">": GT, ">=": GT_EQ}
_FLIP = {EQ: EQ, NOT_EQ: NOT_EQ, LT: GT, LT_EQ: GT_EQ, GT: LT, GT_EQ: LT_EQ}
PARSE_DEPTH_MAX = 200  # nesting of parentheses / `not`, so hostile input cannot exhaust the stack


@dataclass(frozen=True)
class _Token:
    kind: str  # "string", "number", "name", "keyword", "op", "end"
    text: str
    value: Any
    position: int


def _tokens(text: str) -> list[_Token]:
    out, pos = [], 0
    while pos < len(text):  # each match consumes at least one character
        m = _TOKEN_RE.match(text, pos)
        if not m:
            raise ExpressionError(f"unexpected character {text[pos]!r}", pos)
        kind, raw = m.lastgroup, m.group()
        if kind == "string":
            out.append(_Token("string", raw, raw[1:-1].replace("''", "'"), pos))
        elif kind == "number":
            value = int(raw) if re.fullmatch(r"-?\d+", raw) else Decimal(raw)
            out.append(_Token("number", raw, value, pos))
        elif kind == "quoted":
            q = raw[0]
            out.append(_Token("name", raw, raw[1:-1].replace(q * 2, q), pos))
        elif kind == "name":
            low = raw.lower()
            out.append(_Token("keyword", low, low, pos) if low in _KEYWORDS else _Token("name", raw, raw, pos))
        elif kind == "op":
            out.append(_Token("op", raw, raw, pos))
        pos = m.end()
    out.append(_Token("end", "", None, len(text)))
    return out


class _Parser:
    def __init__(self, text: str):
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self, offset: int = 0) -> _Token:
        return self.tokens[min(self.i + offset, len(self.tokens) - 1)]

    def take(self) -> _Token:
        tok = self.peek()
        self.i += 1
        return tok

    def accept(self, kind: str, text: str | None = None) -> bool:
        tok = self.peek()
        if tok.kind == kind and (text is None or tok.text == text):
            self.i += 1
            return True
        return False

    def expect(self, kind: str, text: str | None = None, what: str | None = None) -> _Token:
        tok = self.peek()
        if tok.kind != kind or (text is not None and tok.text != text):
            found = "end of input" if tok.kind == "end" else repr(tok.text)
            raise ExpressionError(f"expected {what or text or kind}, found {found}", tok.position)
        return self.take()

    def expression(self, depth: int = 0) -> Expression:
        if depth > PARSE_DEPTH_MAX:
            raise ExpressionError("expression nested too deeply", self.peek().position)
        left = self.conjunction(depth)
        while self.accept("keyword", "or"):
            left = Or(left, self.conjunction(depth))
        return left

    def conjunction(self, depth: int) -> Expression:
        left = self.negation(depth)
        while self.accept("keyword", "and"):
            left = And(left, self.negation(depth))
        return left

    def negation(self, depth: int) -> Expression:
        if self.peek().kind == "keyword" and self.peek().text == "not" and \
                not (self.peek(1).kind == "keyword" and self.peek(1).text in ("in", "starts_with")):
            if depth > PARSE_DEPTH_MAX:
                raise ExpressionError("expression nested too deeply", self.peek().position)
            self.take()
            return Not(self.negation(depth + 1))
        return self.primary(depth)

    def primary(self, depth: int) -> Expression:
        tok = self.peek()
        if self.accept("op", "("):
            inner = self.expression(depth + 1)
            self.expect("op", ")", "')'")
            return inner
        if tok.kind == "keyword" and tok.text in ("true", "false") and self.peek(1).kind in ("end", "keyword", "op") \
                and self.peek(1).text not in _CMP:
            self.take()
            return AlwaysTrue() if tok.text == "true" else AlwaysFalse()
        if tok.kind == "keyword" and tok.text == "starts_with" and self.peek(1).text == "(":
            self.take()
            self.take()
            name = self.expect("name", what="a column name").value
            self.expect("op", ",", "','")
            prefix = self.literal()
            self.expect("op", ")", "')'")
            return self.predicate(STARTS_WITH, name, (prefix,), tok.position)
        if tok.kind in ("string", "number") or (tok.kind == "keyword" and tok.text in ("true", "false")):
            value = self.literal()  # literal op column: flip it
            op_tok = self.expect("op", what="a comparison operator")
            if op_tok.text not in _CMP:
                raise ExpressionError(f"expected a comparison operator, found {op_tok.text!r}", op_tok.position)
            name = self.expect("name", what="a column name").value
            return self.predicate(_FLIP[_CMP[op_tok.text]], name, (value,), tok.position)
        name = self.expect("name", what="a column name, '(' or 'not'").value
        return self.after_name(name, tok.position)

    def after_name(self, name: str, position: int) -> Expression:
        tok = self.take()
        if tok.kind == "op" and tok.text in _CMP:
            return self.predicate(_CMP[tok.text], name, (self.literal(),), position)
        if tok.kind == "keyword" and tok.text == "is":
            negate = self.accept("keyword", "not")
            what = self.expect("keyword", what="'null' or 'nan'")
            if what.text not in ("null", "nan"):
                raise ExpressionError(f"expected 'null' or 'nan', found {what.text!r}", what.position)
            op = {("null", False): IS_NULL, ("null", True): NOT_NULL,
                  ("nan", False): IS_NAN, ("nan", True): NOT_NAN}[(what.text, negate)]
            return self.predicate(op, name, (), position)
        negate = tok.kind == "keyword" and tok.text == "not"
        if negate:
            tok = self.take()
        if tok.kind == "keyword" and tok.text == "in":
            self.expect("op", "(", "'('")
            values = [self.literal()]
            while self.accept("op", ","):
                if len(values) >= IN_VALUES_MAX:
                    raise ExpressionError(f"more than {IN_VALUES_MAX} values in an in-list", self.peek().position)
                values.append(self.literal())
            self.expect("op", ")", "')'")
            return self.predicate(NOT_IN if negate else IN, name, tuple(values), position)
        if tok.kind == "keyword" and tok.text == "starts_with":
            return self.predicate(NOT_STARTS_WITH if negate else STARTS_WITH, name, (self.literal(),), position)
        found = "end of input" if tok.kind == "end" else repr(tok.text)
        raise ExpressionError(f"expected an operator after {name!r}, found {found}", tok.position)

    def literal(self) -> Any:
        tok = self.take()
        if tok.kind in ("string", "number"):
            return tok.value
        if tok.kind == "keyword" and tok.text in ("true", "false"):
            return tok.text == "true"
        found = "end of input" if tok.kind == "end" else repr(tok.text)
        raise ExpressionError(f"expected a literal, found {found}", tok.position)

    @staticmethod
    def predicate(op: str, name: str, literals: tuple, position: int) -> Predicate:
        try:
            return Predicate(op, name, literals)
        except ExpressionError as e:
            raise ExpressionError(str(e), position) from None


def parse(text: str) -> Expression:
    """Parse the CLI form, e.g. `id > 5 and cat = 'x' or ts >= '2024-01-01'`. `and` binds
    tighter than `or`; strings are single-quoted ('' escapes a quote); names may be
    dotted or quoted with "..." or `...`."""
    if not isinstance(text, str):
        raise ExpressionError(f"a filter must be a string, got {type(text).__name__}")
    parser = _Parser(text)
    if parser.peek().kind == "end":
        raise ExpressionError("empty filter", 0)
    expr = parser.expression()
    tok = parser.peek()
    if tok.kind != "end":
        raise ExpressionError(f"unexpected {tok.text!r} after a complete expression", tok.position)
    return expr


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
        raise bad from None
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
        assert isinstance(e, Predicate), e
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
        # Chains of = / != keep the null-is-unknown semantics that is_in lacks.
        parts = [ref == v if op == IN else ref != v for v in lits]
        out = parts[0]
        for part in parts[1:]:
            out = (out | part) if op == IN else (out & part)
        return out
    return {EQ: ref.__eq__, NOT_EQ: ref.__ne__, LT: ref.__lt__, LT_EQ: ref.__le__,
            GT: ref.__gt__, GT_EQ: ref.__ge__}[op](lits[0])


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


class PartitionEvaluator:
    """`PartitionEvaluator(filter, spec, schema).might_match(partition_tuple)`."""

    def __init__(self, expr: Expression, spec: PartitionSpec, schema: T.Schema, case_sensitive: bool = True):
        self.spec = spec
        self.projected = project(bind(expr, schema, case_sensitive), spec, schema)

    def might_match(self, partition: tuple) -> bool:
        return partition_might_match(self.projected, self.spec, partition)


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
