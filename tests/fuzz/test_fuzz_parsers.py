"""Hostile input against every parser (issue 14 item 7): only typed errors, and no read
that silently returns fewer entries or rows than the object's description says. Method:
Hypothesis mutations of a valid seed of each kind (tests/fuzz/mutations.py) fed to the
targets of tests/fuzz/fuzz_targets.py; EXAMPLES inputs per parser (a bounded share in
`make test`, 10,000 in the deep run)."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

import fuzz_targets as F
from icefloe.impl.format.avro_container import block_offsets
from mutations import EXAMPLES, avro_mutated, json_mutated, mutated


def test_every_seed_is_accepted():
    """Goal: the seeds are valid (else their mutations test nothing). Method: run each
    target on its seed; the manifest and list seeds span several Avro blocks."""
    for name, target in F.TARGETS.items():
        target(F.SEEDS[name]())
    assert len(block_offsets(F.seed_manifest()[0])) > 2 and len(block_offsets(F.seed_manifest_list()[0])) > 2


@settings(max_examples=EXAMPLES)
@given(st.one_of(mutated(F.seed_metadata()), json_mutated(F.seed_metadata())))
@example(b"[" * 100_000)
@example(b'{"format-version": 2}')
def test_metadata_json(data):
    """Goal: metadata JSON of any shape is a MetadataError or a table that writes back
    readably. Method: byte and JSON-node mutations of a valid metadata file."""
    F.metadata_json(data)


@settings(max_examples=EXAMPLES)
@given(avro_mutated(F.seed_manifest_list()[0]))
def test_manifest_list(data):
    """Goal: a manifest list of any bytes is ManifestError or CorruptMetadata, or reads
    with the live file count its snapshot summary gives. Method: byte mutations and
    block-boundary cuts of a valid list, read and checked as a commit's refresh does."""
    F.manifest_list(data)


@settings(max_examples=EXAMPLES)
@given(avro_mutated(F.seed_manifest()[0]))
def test_manifest(data):
    """Goal: a manifest of any bytes is ManifestError or CorruptMetadata, or reads with
    every entry its list entry counts, in every projection. Method: byte mutations,
    block-boundary cuts and dropped blocks of a valid multi-block manifest."""
    F.manifest(data)


@settings(max_examples=EXAMPLES)
@given(st.one_of(mutated(F.seed_pointer()), json_mutated(F.seed_pointer())))
def test_s3_pointer(data):
    """Goal: an S3 catalog pointer object of any bytes is a CatalogError or names a
    metadata location. Method: byte and JSON-node mutations of a valid pointer."""
    F.s3_pointer(data)


def test_s3_pointer_deeply_nested():
    """Goal: a pointer object nested 100,000 deep is a CatalogError, not a RecursionError.
    Method: decode `[` * 100,000 (what the metadata JSON reader already refuses)."""
    F.s3_pointer(b"[" * 100_000)


@settings(max_examples=EXAMPLES)
@given(st.one_of(mutated(F.seed_parquet()[0]),
                 st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(1, 255)), min_size=1, max_size=3).map(
                     lambda flips: _flip_footer(F.seed_parquet()[0], flips))))
def test_parquet_footer(data):
    """Goal: a data file of any bytes is DataFileError or CorruptMetadata, or holds the
    rows its manifest entry counts. Method: byte mutations anywhere and flips inside the
    Thrift footer of a valid Parquet file, read as a scan task reads it."""
    F.parquet(data)


def _flip_footer(data: bytes, flips) -> bytes:
    length = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - length
    out = bytearray(data)
    for pos, xor in flips:
        out[start + pos % length] ^= xor
    return bytes(out)


_names = st.text(st.characters(codec="utf-8"), max_size=12)


@settings(max_examples=EXAMPLES)
@given(st.one_of(mutated(F.SEEDS["identifier"]()),
                 st.lists(_names, max_size=5).map(lambda parts: ".".join(parts).encode("utf-8", "surrogatepass"))))
@example(b"db./some/dir/t")
@example(b"db...t")
def test_identifier(data):
    """Goal: a table identifier of any text is an InvalidIdentifier (a CatalogError) or
    parses back from its own text. Method: mutations of `db.events` and dotted joins of
    arbitrary names."""
    F.identifier(data)


_filter_tokens = st.sampled_from(["id", "cat", "amount", "nope", "and", "or", "not", "(", ")", "=", "<", ">=",
                                  "!=", "in", "is", "null", "nan", "starts_with", ",", "'a'", "''", "1", "-1.5e309",
                                  "99999999999999999999", "true", "\"cat\"", "`id`", "'", "\x00"])


@settings(max_examples=EXAMPLES)
@given(st.one_of(mutated(F.SEEDS["filter"]()),
                 st.lists(_filter_tokens, max_size=24).map(lambda ts: " ".join(ts).encode()),
                 st.integers(0, 5000).map(lambda n: b"(" * n + b"id = 1" + b")" * n),
                 st.integers(0, 5000).map(lambda n: b"not " * n + b"id = 1")))
def test_filter(data):
    """Goal: a row filter of any text is an ExpressionError or binds to the schema.
    Method: mutations of a valid filter, token soups, deep nesting."""
    F.filter_text(data)


REGRESSIONS = sorted((Path(__file__).resolve().parent / "regressions").iterdir())


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.name for p in REGRESSIONS])
def test_inputs_the_deep_run_found(path):
    """Goal: every input a deep run found stays handled. Method: each file of
    tests/fuzz/regressions/ (named TARGET-what.ext) through its target: a Parquet footer
    whose row group claims 80 billion rows (the reader allocated for them), a manifest
    list with a block dropped and its row counts made optional (read as fewer files)."""
    F.TARGETS[path.name.split("-", 1)[0]](path.read_bytes())
