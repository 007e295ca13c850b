"""Stepping over runs of Avro fields by the shape of the values (Avro spec "Binary
Encoding"; Iceberg spec "Scan Planning": a plan reads few of a manifest entry's fields).

A manifest's entries are alike: the same union branches, the same number of items in
each statistics map, short bounds. The first value of a run of fields with a new shape is
stepped over by the compiled skipper (avro_decode.py), and walked once more to write its
shape down as a regular expression: literal bytes for a union's branch, a block's count
and a long value's length; a varint for an int or long; a length byte and that many bytes
for a short string or bytes value. Every token is decided by the bytes it meets, so a
match is the one parse of a value of that shape, made by the C regex engine with no
Python call per field or item; a value of another shape does not match (some literal
differs) and takes the skipper. A pattern is kept only if it ends where the skipper ended.
Up to SHAPES_MAX shapes are learned per run, so mixed shapes never compile per value, and
after MISSES_MAX values of yet other shapes the patterns are no longer tried.

The walker and `learned_match` are shared: avro_decode's readers use `learned_skipper`,
the Spark planner's generated manifest decoder (impl/spark/manifest_columns.py) keeps its
own skipper object (a plain int position per call, on its hot path) around `learned_match`.
"""
from __future__ import annotations

import re
import threading
from typing import Any, Callable

__all__ = ["learned_skipper", "learned_match", "SHAPES_MAX", "SHORT_MAX", "PATTERN_BYTES_MAX"]

SHAPES_MAX = 4              # shapes learned per run of fields
SHORT_MAX = 63              # the longest value whose length is one zig-zag byte
PATTERN_BYTES_MAX = 1 << 16  # a bound on one learned pattern (a table of thousands of columns)
UNROLLED_BYTES_MAX = 8192   # a block's like items are written out one by one up to this size: the C
                            # engine steps over 120 unrolled items of two varints 30% faster than {120}
WALK_DEPTH_MAX = 32
MISSES_MAX = 256            # values no learned shape matched, after which none is tried any more
_VARINT = rb"[\x80-\xff]{0,9}+[\x00-\x7f]"  # possessive: a varint never gives bytes back
_SHORT = b"(?:" + b"|".join(re.escape(bytes([2 * n])) + (b".{%d}" % n if n else b"")
                            for n in range(SHORT_MAX + 1)) + b")"

Reader = Callable[[bytes, int], tuple[Any, int]]


class _TooLarge(ValueError):
    """A learned pattern over PATTERN_BYTES_MAX: the shape is not learned (a ValueError, so
    that callers catching avro_container.DECODE_ERRORS catch it too)."""


def _long(buf: bytes, pos: int) -> tuple[int, int, bytes]:
    """A zig-zag varint, the position after it and its bytes as a literal pattern."""
    start, n, shift = pos, 0, 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return (n >> 1) ^ -(n & 1), pos, re.escape(buf[start:pos])
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def _walk(t: Any, buf: bytes, pos: int, out: list[bytes], depth: int) -> int:
    """Step over one value of `t` at `pos`, appending its shape to `out`."""
    if depth > WALK_DEPTH_MAX:
        raise ValueError("schema nested too deeply to learn")
    if isinstance(t, list):
        i, pos, literal = _long(buf, pos)
        if not 0 <= i < len(t):
            raise ValueError(f"union branch {i} of {len(t)}")
        out.append(literal)
        return _walk(t[i], buf, pos, out, depth + 1)
    kind = t.get("type") if isinstance(t, dict) else t
    if isinstance(kind, (list, dict)):
        return _walk(kind, buf, pos, out, depth + 1)
    if kind == "null":
        return pos
    if kind == "boolean":
        out.append(rb"[\x00\x01]")
        return pos + 1
    if kind in ("int", "long", "enum"):
        out.append(_VARINT)
        return _long(buf, pos)[1]
    if kind in ("float", "double", "fixed"):
        size = 4 if kind == "float" else 8 if kind == "double" else t["size"]
        out.append(b".{%d}" % size)
        return pos + size
    if kind in ("bytes", "string"):
        n, pos, literal = _long(buf, pos)
        if n < 0:
            raise ValueError(f"length {n}")
        out.append(_SHORT if n <= SHORT_MAX else literal + b".{%d}" % n)
        return pos + n
    if kind in ("record", "error"):
        for f in t.get("fields", []):
            pos = _walk(f.get("type"), buf, pos, out, depth + 1)
        return pos
    if kind in ("array", "map"):
        item = t.get("items") if kind == "array" else {"type": "record", "name": "entry", "fields": [
            {"name": "key", "type": "string"}, {"name": "value", "type": t.get("values")}]}
        while True:  # bounded by the data: every block but the last holds an item
            n, pos, literal = _long(buf, pos)
            out.append(literal)
            if n == 0:
                return pos
            if n < 0:
                n = -n
                pos = _long(buf, pos)[1]
                out.append(_VARINT)
            items: list[bytes] = []
            for _ in range(n):
                one: list[bytes] = []
                pos = _walk(item, buf, pos, one, depth + 1)
                items.append(b"".join(one))
            if len(set(items)) == 1 and len(items[0]) * n > UNROLLED_BYTES_MAX:
                out.append(b"(?:" + items[0] + b"){%d}" % n)  # like items: written once
            elif sum(map(len, items)) > PATTERN_BYTES_MAX:
                raise _TooLarge()
            else:
                out.extend(items)
    raise ValueError(f"unknown Avro type {kind!r}")


def learned_match(t: Any, buf: bytes, pos: int, end: int) -> Callable | None:
    """The compiled pattern's `match` of the shape of the value of `t` at `pos`, which a
    skipper stepped over to `end`; None where it cannot be learned (a type the walker does
    not know, damaged bytes, a pattern over PATTERN_BYTES_MAX) or does not end at `end`."""
    parts: list[bytes] = []
    try:
        walked = _walk(t, buf, pos, parts, 0)
        pattern = b"".join(parts)
        if len(pattern) > PATTERN_BYTES_MAX:
            raise _TooLarge()
        match = re.compile(pattern, re.S).match
    except (ValueError, IndexError, KeyError, TypeError, OverflowError, re.error, RecursionError):
        return None  # ValueError: _TooLarge as well
    found = match(buf, pos)
    if walked != end or found is None or found.end() != end:
        return None
    return match


def learned_skipper(types: list[Any], fallback: Reader) -> Reader:
    """A reader stepping over one value of each of `types` in turn (a run of record
    fields), by a learned shape where one matches, else by `fallback`."""
    record = {"type": "record", "name": "run", "fields": [{"name": f"f{i}", "type": t} for i, t in enumerate(types)]}
    matchers: list = []
    lock = threading.Lock()
    learned = [0]

    def learn(buf: bytes, pos: int, end: int) -> None:
        match = learned_match(record, buf, pos, end)
        with lock:
            if learned[0] >= SHAPES_MAX:
                return
            learned[0] += 1
            if match is not None:
                matchers.append(match)

    misses = [0]

    def skip(buf: bytes, pos: int):
        for match in matchers:
            m = match(buf, pos)
            if m is not None:
                return None, m.end()
        end = fallback(buf, pos)[1]
        if learned[0] < SHAPES_MAX:
            learn(buf, pos, end)
        elif matchers:
            misses[0] += 1
            if misses[0] > MISSES_MAX:  # values of too many shapes: trying patterns only costs
                matchers.clear()
        return None, end
    skip.shapes = matchers  # what was learned, for tests
    return skip
