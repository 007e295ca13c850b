"""The text form of row filters, as the CLI and the Spark options take them (Iceberg spec:
"Scan Planning"; the grammar is in `parse`'s docstring). Hostile text gives an
ExpressionError with the character offset, never another exception: nesting and in-lists
are bounded.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from icefloe.impl.format.expressions import (
    EQ, GT, GT_EQ, IN, IN_VALUES_MAX, IS_NAN, IS_NULL, LT, LT_EQ, NOT_EQ, NOT_IN, NOT_NAN, NOT_NULL,
    NOT_STARTS_WITH, STARTS_WITH, AlwaysFalse, AlwaysTrue, And, Expression, ExpressionError, Not, Or,
    Predicate,
)

__all__ = ["parse", "PARSE_DEPTH_MAX"]

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
