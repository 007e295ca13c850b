"""Hypothesis strategies for hostile inputs: byte-level mutations of a valid seed (flips,
cuts, insertions, deletions, splices, Avro block-boundary cuts), raw bytes, and
structure-aware JSON mutations (a node replaced by any JSON value, a key dropped or
added). EXAMPLES is each fuzz test's budget: a bounded share in `make test`, at least
10,000 inputs per parser in the deep run (HYPOTHESIS_PROFILE=deep)."""
from __future__ import annotations

import json
import os

from hypothesis import strategies as st

from icefloe.impl.format.avro_container import block_offsets

DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", 10_000 if DEEP else 300))

_positions = st.integers(0, 1 << 20)
_mutation = st.one_of(
    st.tuples(st.just("flip"), _positions, st.integers(1, 255)),
    st.tuples(st.just("cut"), _positions),
    st.tuples(st.just("insert"), _positions, st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("delete"), _positions, st.integers(1, 64)),
    st.tuples(st.just("splice"), _positions, _positions, st.integers(1, 256)),
    st.tuples(st.just("varint"), _positions, st.sampled_from([b"\x00", b"\x01", b"\x7f", b"\xff" * 9 + b"\x01",
                                                             b"\xfe\xff\xff\xff\x0f", b"\x81\x80\x80\x80\x10"])),
)


def apply(data: bytes, mutations) -> bytes:
    out = bytearray(data)
    for m in mutations:
        if not out:
            break
        pos = m[1] % len(out)
        if m[0] == "flip":
            out[pos] ^= m[2]
        elif m[0] == "cut":
            del out[pos:]
        elif m[0] == "insert":
            out[pos:pos] = m[2]
        elif m[0] == "delete":
            del out[pos:pos + m[2]]
        elif m[0] == "splice":  # a copy of another stretch of the file, e.g. a second block
            src = m[2] % len(out)
            out[pos:pos] = out[src:src + m[3]]
        elif m[0] == "varint":  # a length or count replaced by an extreme one
            out[pos:pos + 1] = m[2]
    return bytes(out)


def mutated(seed: bytes) -> st.SearchStrategy[bytes]:
    return st.one_of(st.lists(_mutation, min_size=1, max_size=4).map(lambda ms: apply(seed, ms)),
                     st.binary(max_size=256), st.integers(0, len(seed)).map(lambda n: seed[:n]))


def avro_mutated(seed: bytes) -> st.SearchStrategy[bytes]:
    """Mutations, plus cuts at block boundaries (valid, shorter containers) and a block
    dropped from the middle."""
    ends = block_offsets(seed)
    dropped = [seed[:a] + seed[b:] for a, b in zip(ends, ends[1:])]
    return st.one_of(mutated(seed), st.sampled_from(ends).map(lambda n: seed[:n]), st.sampled_from(dropped))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, path + (i,))


@st.composite
def json_mutated(draw, seed: bytes):
    """A JSON document with one to three nodes replaced, dropped or given a new key."""
    doc = json.loads(seed)
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "drop", "add"]))
        if not path:
            doc = draw(json_values) if op == "replace" else doc
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if op == "replace":
            parent[path[-1]] = draw(json_values)
        elif op == "drop":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(json_values)
        else:
            parent.append(draw(json_values))
        if not isinstance(doc, (dict, list)):
            break
    return json.dumps(doc).encode()
