"""Avro object container files, read (Avro spec "Object Container Files": the header, the
blocks and their codecs; "Schema Resolution" is not needed, a file is read with its own
writer schema).

The header is a magic, a map of byte values and a sync marker; the writer schema is the
JSON in its `avro.schema` entry. `open_container` parses the header and expands the
schema's references to named types (Java writes a repeated type once and refers to it by
name later), so that one reader compiled by avro_decode.compile_reader decodes every
value. `decode_blocks` decodes every record of every block.

Every codec of the Avro spec is read: null, deflate, bzip2 and xz with the standard
library, zstandard and snappy when their Python packages are installed (the same ones
fastavro needs). A block is decompressed to at most BLOCK_BYTES_MAX bytes, so a hostile
file cannot exhaust memory. Malformed input raises ValueError (or IndexError, KeyError,
TypeError, struct.error from the value readers); the caller turns those into its own
typed error naming the file.
"""
from __future__ import annotations

import bz2
import io
import json
import lzma
import struct
import zlib
from array import array
from dataclasses import dataclass
from typing import Any

from icefloe.impl.format.avro_decode import Reader, read_long

__all__ = ["Container", "RecordPositions", "open_container", "decode_blocks", "block_offsets", "expand_names", "MAGIC", "SYNC_SIZE",
           "BLOCK_BYTES_MAX", "NAMED_TYPES_MAX", "DECODE_ERRORS"]

MAGIC = b"Obj\x01"
SYNC_SIZE = 16
BLOCK_BYTES_MAX = 64 << 20      # one decompressed block; Java's blocks are about 64 KB
HEADER_ENTRIES_MAX = 10_000     # key-value pairs in the header
NAMED_TYPES_MAX = 10_000        # a schema defining more named types than this is refused
# What decoding hostile bytes may raise; a reader catches exactly these.
DECODE_ERRORS = (ValueError, IndexError, KeyError, TypeError, struct.error, OverflowError, RecursionError)

_PRIMITIVE = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


@dataclass(frozen=True)
class Container:
    """A parsed header: the expanded writer schema, the key-value metadata as text (the
    `avro.*` entries included), the sync marker, the codec and where the first block starts."""
    schema: Any
    metadata: dict[str, str]
    sync: bytes
    codec: str
    start: int


def _text_length(data: bytes, pos: int) -> tuple[int, int]:
    n, pos = read_long(data, pos)
    if n < 0 or pos + n > len(data):
        raise ValueError(f"header value of {n} bytes outside the file")
    return pos + n, pos


def _header_map(data: bytes, pos: int) -> tuple[dict[str, bytes], int]:
    out: dict[str, bytes] = {}
    while True:
        count, pos = read_long(data, pos)
        if count == 0:
            return out, pos
        if count < 0:  # a block that states its byte size
            count = -count
            _, pos = read_long(data, pos)
        if len(out) + count > HEADER_ENTRIES_MAX:
            raise ValueError(f"more than {HEADER_ENTRIES_MAX} header entries")
        for _ in range(count):
            end, pos = _text_length(data, pos)
            key = data[pos:end].decode("utf-8")
            end2, pos = _text_length(data, end)
            out[key] = data[pos:end2]
            pos = end2


def open_container(data: bytes) -> Container:
    """Parse the header of an object container file."""
    if data[:4] != MAGIC:
        raise ValueError("not an Avro container file (bad magic)")
    meta, pos = _header_map(data, 4)
    sync = data[pos:pos + SYNC_SIZE]
    if len(sync) != SYNC_SIZE:
        raise ValueError("header ends before its sync marker")
    metadata = {k: v.decode("utf-8") for k, v in meta.items()}
    if "avro.schema" not in metadata:
        raise ValueError("header has no avro.schema")
    codec = metadata.get("avro.codec", "null") or "null"
    _decompressor(codec)  # an unknown or unavailable codec is refused before any block
    return Container(expand_names(json.loads(metadata["avro.schema"])), metadata, sync, codec,
                     pos + SYNC_SIZE)


def _limited(d, block: bytes, codec: str) -> bytes:
    """Decompress with a standard-library decompressor object, to at most BLOCK_BYTES_MAX."""
    try:
        out = d.decompress(block, BLOCK_BYTES_MAX + 1)
    except (zlib.error, OSError, EOFError, lzma.LZMAError) as e:
        raise ValueError(f"{codec} block does not decompress: {e}") from None
    if not d.eof:
        raise ValueError(f"{codec} block truncated, or larger than {BLOCK_BYTES_MAX} bytes")
    return out


def _deflate(block: bytes) -> bytes:
    return _limited(zlib.decompressobj(-15), block, "deflate")


def _bzip2(block: bytes) -> bytes:
    return _limited(bz2.BZ2Decompressor(), block, "bzip2")


def _xz(block: bytes) -> bytes:
    return _limited(lzma.LZMADecompressor(), block, "xz")


def _zstandard(block: bytes) -> bytes:
    import zstandard
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(block)) as reader:
            out = reader.read(BLOCK_BYTES_MAX + 1)
    except zstandard.ZstdError as e:
        raise ValueError(f"zstandard block does not decompress: {e}") from None
    if len(out) > BLOCK_BYTES_MAX:
        raise ValueError(f"a zstandard block decompresses to more than {BLOCK_BYTES_MAX} bytes")
    return out


def _snappy(block: bytes) -> bytes:
    # Avro's snappy block: raw snappy data, then the CRC-32 of the uncompressed bytes. The
    # raw data opens with the uncompressed length (an unsigned varint): checked first,
    # so that a hostile length is refused before anything is allocated.
    size, shift, pos = 0, 0, 0
    while pos < min(len(block), 5):
        size |= (block[pos] & 0x7F) << shift
        shift += 7
        pos += 1
        if block[pos - 1] < 0x80:
            break
    if len(block) < 4 + pos or size > BLOCK_BYTES_MAX:
        raise ValueError(f"snappy block of {len(block)} bytes claims {size} uncompressed bytes")
    from cramjam import DecompressionError, snappy
    try:
        out = bytes(snappy.decompress_raw(block[:-4]))
    except DecompressionError as e:
        raise ValueError(f"snappy block does not decompress: {e}") from None
    if zlib.crc32(out) != int.from_bytes(block[-4:], "big"):
        raise ValueError("snappy block fails its checksum")
    return out


_CODECS = {"null": bytes, "deflate": _deflate, "bzip2": _bzip2, "xz": _xz,
           "zstandard": _zstandard, "snappy": _snappy}
_PACKAGES = {"zstandard": "zstandard", "snappy": "cramjam"}  # the packages fastavro needs too


def _decompressor(codec: str):
    if codec not in _CODECS:
        raise ValueError(f"unknown Avro codec {codec!r}")
    if codec in _PACKAGES:
        try:
            __import__(_PACKAGES[codec])
        except ImportError:
            raise ValueError(f"the {codec} codec needs the Python package {_PACKAGES[codec]!r}") from None
    return _CODECS[codec]


def _raw_blocks(data: bytes, container: Container):
    """(record count, raw block bytes, offset after the block) of each block, in order."""
    pos, end = container.start, len(data)
    while pos < end:
        count, pos = read_long(data, pos)
        size, pos = read_long(data, pos)
        if count < 0 or size < 0 or pos + size + SYNC_SIZE > end:
            raise ValueError(f"block of {count} records, {size} bytes, outside the file")
        block = data[pos:pos + size]
        pos += size
        if data[pos:pos + SYNC_SIZE] != container.sync:
            raise ValueError("sync marker does not match the header")
        pos += SYNC_SIZE
        yield count, block, pos


def block_offsets(data: bytes) -> list[int]:
    """Where the first block starts and where each block ends: the lengths at which the
    file is a valid, shorter container (what integrity.py guards against)."""
    container = open_container(data)
    return [container.start] + [end for _, _, end in _raw_blocks(data, container)]


class RecordPositions:
    """Where each record of a container starts: `positions[i]` is (its decoded block, its
    offset in it). Kept as arrays, not a tuple per record: a manifest's positions live as
    long as its cached reader, and tens of thousands of small long-lived objects are what
    makes the garbage collector's full collections expensive."""

    def __init__(self):
        self.blocks: list[bytes] = []
        self.block_of = array("L")
        self.offset = array("Q")

    def __len__(self) -> int:
        return len(self.offset)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        return self.blocks[self.block_of[index]], self.offset[index]


def decode_blocks(data: bytes, container: Container, read: Reader,
                  positions: RecordPositions | None = None) -> list:
    """Every record of the file's blocks, each read by `read`. With `positions`, where
    each record starts is recorded in it, so that a record can be decoded again later
    with another reader."""
    decompress = _decompressor(container.codec)
    out: list = []
    for count, block, _ in _raw_blocks(data, container):
        block = decompress(block)
        if count > len(block):  # a record of a manifest or manifest list is never empty
            raise ValueError(f"block of {count} records in {len(block)} bytes")
        p = 0
        if positions is not None:
            positions.blocks.append(block)
            number = len(positions.blocks) - 1
        for _ in range(count):
            if positions is not None:
                positions.block_of.append(number)
                positions.offset.append(p)
            value, p = read(block, p)
            out.append(value)
        if p != len(block):
            raise ValueError(f"block has {len(block) - p} bytes after its {count} records")
    return out


def expand_names(schema: Any) -> Any:
    """The schema with references to named types (a later use of "decimal_9_2", as Java
    writes for a repeated type) replaced by their definitions."""
    named: dict[str, Any] = {}

    def visit(t: Any, namespace: str) -> Any:
        if isinstance(t, str):
            if t in _PRIMITIVE:
                return t
            return named.get(t) or named.get(f"{namespace}.{t}") or t
        if isinstance(t, list):
            return [visit(b, namespace) for b in t]
        if not isinstance(t, dict):
            return t
        kind = t.get("type")
        if kind in ("record", "error", "fixed", "enum") and isinstance(t.get("name"), str):
            ns = t.get("namespace", namespace) if "." not in t["name"] else t["name"].rsplit(".", 1)[0]
            if len(named) >= NAMED_TYPES_MAX:
                raise ValueError("too many named types")
            out = dict(t)
            short = t["name"].rsplit(".", 1)[-1]
            for key in {t["name"], short, f"{ns}.{short}"}:
                named[key] = out
            if kind in ("record", "error"):
                fields = t.get("fields", [])
                if not isinstance(fields, list) or not all(isinstance(f, dict) for f in fields):
                    raise ValueError(f"record {t['name']!r} has malformed fields")
                out["fields"] = [dict(f, type=visit(f.get("type"), ns)) for f in fields]
            return out
        if kind == "array":
            return dict(t, items=visit(t.get("items"), namespace))
        if kind == "map":
            return dict(t, values=visit(t.get("values"), namespace))
        if isinstance(kind, (dict, list)):  # {"type": {...}} wraps a type
            return visit(kind, namespace)
        if isinstance(kind, str) and kind not in _PRIMITIVE:  # {"type": "a_name"}
            return visit(kind, namespace)
        return t  # a primitive, possibly with a logical type
    return visit(schema, "")
