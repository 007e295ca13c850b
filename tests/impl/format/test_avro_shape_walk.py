"""The shape walker shared by avro_decode's learned skippers and the Spark planner's
manifest decoder (impl/format/avro_shapes.py, learned_match): a pattern is learned only
from a value the walker parses whole and that ends where the skipper ended; damaged bytes
and schemas it refuses give no pattern, never an exception."""
from __future__ import annotations

import io

import fastavro
import pytest

from icefloe.impl.format import avro_decode, avro_shapes


def encode(schema, value) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


ERROR = {"type": "error", "name": "failure", "fields": [
    {"name": "code", "type": "int"}, {"name": "tag", "type": {"type": "fixed", "name": "t2", "size": 2}},
    {"name": "note", "type": ["null", "string"]}]}


def test_a_learned_pattern_matches_the_value_it_was_learned_from():
    """Goal: an Avro error record (a record by another name), fixed, union and string
    fields are learned, and the pattern matches only values of their shape. Method: learn
    from one value; match it, a value of the same shape and values of other branches and
    lengths."""
    buf = encode(ERROR, {"code": 7, "tag": b"ab", "note": "x"})
    end = avro_decode.compile_reader(ERROR, skipping=True)(buf, 0)[1]
    match = avro_shapes.learned_match(ERROR, buf, 0, end)
    assert end == len(buf) and match is not None and match(buf, 0).end() == end
    alike = encode(ERROR, {"code": -300, "tag": b"zz", "note": "y"})
    assert match(alike, 0).end() == len(alike)
    for other in ({"code": 7, "tag": b"ab", "note": None}, {"code": 7, "tag": b"ab", "note": "x" * 70}):
        assert match(encode(ERROR, other), 0) is None, other


def test_a_pattern_not_ending_where_the_skipper_ended_is_not_kept():
    """Goal: the skipper's end decides. Method: learn a good value with an end one byte
    short and one byte long."""
    buf = encode(ERROR, {"code": 7, "tag": b"ab", "note": "x"}) + b"\x00"
    assert avro_shapes.learned_match(ERROR, buf, 0, len(buf) - 1) is not None
    assert avro_shapes.learned_match(ERROR, buf, 0, len(buf) - 2) is None
    assert avro_shapes.learned_match(ERROR, buf, 0, len(buf)) is None


def _nested_arrays(depth: int):
    t: object = "long"
    for _ in range(depth):
        t = {"type": "array", "items": t}
    return t


@pytest.mark.parametrize("schema, buf, end", [
    # branch -1 of [null, long] (zig-zag byte 0x01), then a long: a walker indexing t[-1] would end at 2
    (["null", "long"], b"\x01\x02", 2),
    # a string of length -1
    ("string", b"\x01", 0),
    # a varint of eleven bytes
    ("long", b"\x80" * 10 + b"\x01", 11),
    # a value cut short
    ({"type": "fixed", "name": "f", "size": 4}, b"ab", 4),
    # a schema nested deeper than the walker goes (the skipper goes to avro_decode.SCHEMA_DEPTH_MAX)
    (_nested_arrays(avro_shapes.WALK_DEPTH_MAX + 1), b"\x02" * (avro_shapes.WALK_DEPTH_MAX + 1) + b"\x04"
     + b"\x00" * (avro_shapes.WALK_DEPTH_MAX + 1), 2 * (avro_shapes.WALK_DEPTH_MAX + 1) + 1),
])
def test_what_the_walker_refuses_gives_no_pattern(schema, buf, end):
    """Goal: damaged bytes and schemas too deep are not learned, and say so by None rather
    than an exception (the readers then keep their skipper). Method: one of each, with the
    end a walker that accepted it would reach."""
    assert avro_shapes.learned_match(schema, buf, 0, end) is None


def test_a_schema_as_deep_as_the_walker_goes_is_learned():
    """Goal: the depth bound is the walker's own, not lower (the Spark decoder's walker
    stopped at 16). Method: nested arrays at WALK_DEPTH_MAX - 1, one item each."""
    depth = avro_shapes.WALK_DEPTH_MAX - 1
    schema = _nested_arrays(depth)
    buf = b"\x02" * depth + b"\x04" + b"\x00" * depth
    assert avro_decode.compile_reader(schema, skipping=True)(buf, 0)[1] == len(buf)
    assert avro_shapes.learned_match(schema, buf, 0, len(buf)) is not None
