"""Learned shapes (impl/format/avro_shapes.py): a run of Avro fields stepped over by a
regular expression learned from earlier values ends exactly where the compiled skipper
ends, for values of the learned shapes and of others."""
from __future__ import annotations

import io

import fastavro
from hypothesis import given, strategies as st

from icefloe.impl.format import avro_decode, avro_shapes

STATS_MAP = ["null", {"type": "array", "items": {"type": "record", "name": "kv", "fields": [
    {"name": "key", "type": "int"}, {"name": "value", "type": "long"}]}}]
BOUNDS_MAP = ["null", {"type": "array", "items": {"type": "record", "name": "kb", "fields": [
    {"name": "key", "type": "int"}, {"name": "value", "type": "bytes"}]}}]
RUN = [STATS_MAP, BOUNDS_MAP, ["null", "bytes"], ["null", {"type": "array", "items": "long"}], "boolean",
       "double", {"type": "fixed", "name": "f3", "size": 3}, ["null", "string", "int"],
       {"type": "map", "values": "float"}, {"type": "enum", "name": "e", "symbols": ["A", "B", "C"]}]
RECORD = {"type": "record", "name": "run", "fields": [{"name": f"f{i}", "type": t} for i, t in enumerate(RUN)]}

longs = st.integers(-(2**63), 2**63 - 1)
values = st.fixed_dictionaries({
    "f0": st.none() | st.lists(st.fixed_dictionaries({"key": st.integers(0, 2**31 - 1), "value": longs}),
                               max_size=4),
    "f1": st.none() | st.lists(st.fixed_dictionaries({"key": st.integers(0, 50), "value": st.binary(max_size=80)}),
                               max_size=3),
    "f2": st.none() | st.binary(max_size=70),
    "f3": st.none() | st.lists(longs, max_size=3),
    "f4": st.booleans(),
    "f5": st.floats(allow_nan=False),
    "f6": st.binary(min_size=3, max_size=3),
    "f7": st.none() | st.text(max_size=3) | st.integers(-5, 5),
    "f8": st.dictionaries(st.text(max_size=3), st.floats(allow_nan=False, width=32), max_size=2),
    "f9": st.sampled_from(["A", "B", "C"]),
})


def encode(records: list[dict]) -> bytes:
    out = io.BytesIO()
    schema = fastavro.parse_schema(RECORD)
    for r in records:
        fastavro.schemaless_writer(out, schema, r)
    return out.getvalue()


@given(st.lists(values, min_size=1, max_size=6), st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_a_learned_run_ends_where_the_skipper_ends(distinct, picks):
    """Goal: learned patterns are exact: each match is the value's one parse, and a value
    of another shape falls back. Method: Hypothesis values of ten field kinds (maps of
    counts and bounds, short and long bytes, unions, fixed, enum), a sequence repeating
    some of them; step over the sequence with the learned skipper and with the compiled
    one and compare every end position; the first value's shape must have been learned."""
    sequence = [distinct[i % len(distinct)] for i in picks]
    buf = encode(sequence)
    compiled = avro_decode.compile_reader(RECORD, skipping=True)
    learned = avro_shapes.learned_skipper(RUN, compiled)
    pos_a = pos_b = 0
    for _ in sequence:
        pos_a = compiled(buf, pos_a)[1]
        pos_b = learned(buf, pos_b)[1]
        assert pos_a == pos_b
    assert pos_b == len(buf)
    assert learned.shapes, "the first value's shape is learned"


def test_a_value_of_another_shape_is_not_matched():
    """Goal: a learned shape does not match a value with another count, branch or long
    length. Method: learn from one value, then match the pattern against values that differ
    in one of those ways; each must fall back and still end right."""
    first = {"f0": [{"key": 1, "value": 5}], "f1": [{"key": 1, "value": b"x" * 70}], "f2": None, "f3": [1],
             "f4": True, "f5": 1.0, "f6": b"abc", "f7": 3, "f8": {}, "f9": "A"}
    others = [dict(first, f0=[{"key": 1, "value": 5}] * 2), dict(first, f2=b"y"),
              dict(first, f1=[{"key": 1, "value": b"x" * 71}]), dict(first, f7="s")]
    compiled = avro_decode.compile_reader(RECORD, skipping=True)
    learned = avro_shapes.learned_skipper(RUN, compiled)
    buf = encode([first])
    assert learned(buf, 0)[1] == len(buf) and len(learned.shapes) == 1
    for other in others:
        buf = encode([other])
        assert learned.shapes[0](buf, 0) is None, other
        assert learned(buf, 0)[1] == len(buf)


def test_values_of_many_shapes_stop_the_patterns_being_tried():
    """Goal: a run whose values keep taking new shapes costs the skipper alone, not the
    skipper plus failed matches. Method: step over more than SHAPES_MAX + MISSES_MAX values
    each with another count of items; every end must be right and the learned patterns
    dropped at the end."""
    base = {"f0": None, "f1": None, "f2": None, "f3": None, "f4": False, "f5": 0.0, "f6": b"abc", "f7": None,
            "f8": {}, "f9": "B"}
    n = avro_shapes.SHAPES_MAX + avro_shapes.MISSES_MAX + 2
    sequence = [dict(base, f3=list(range(i + 1))) for i in range(n)]
    buf = encode(sequence)
    compiled = avro_decode.compile_reader(RECORD, skipping=True)
    learned = avro_shapes.learned_skipper(RUN, compiled)
    pos = 0
    for _ in sequence:
        end = compiled(buf, pos)[1]
        pos = learned(buf, pos)[1]
        assert pos == end
    assert pos == len(buf) and learned.shapes == []
