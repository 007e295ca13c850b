"""Puffin files and the `deletion-vector-v1` blob (Iceberg Puffin spec: "File structure",
"Footer structure", "deletion-vector-v1 blob type"; table spec "Deletion Vectors").

A Puffin file is `Magic Blob1 ... BlobN Footer`, the footer `Magic FooterPayload
FooterPayloadSize Flags Magic`, the payload UTF-8 JSON (`blobs`, `properties`). icefloe
writes the payload uncompressed and reads uncompressed payloads only (an LZ4 footer is
refused by name: no LZ4 library is a dependency).

A deletion vector blob is `length (4 bytes, big-endian) | magic D1 D3 39 64 | vector |
CRC-32 of magic + vector (4 bytes, big-endian)`, the length counting magic + vector. The
vector is the 64-bit Roaring "portable" layout: the number of 32-bit bitmaps (8 bytes,
little-endian), then per bitmap, by unsigned key, the key (4 bytes, little-endian) and a
32-bit Roaring bitmap in its portable format. pyroaring's `BitMap64.serialize()` is that
layout (CRoaring's `roaring64_bitmap_portable_serialize`), checked in
tests/impl/format/test_puffin.py byte by byte against a layout built from 32-bit bitmaps,
and against a DV written by Iceberg-Java 1.10.2 in tests/java.

TLA+: none; a DV's content is opaque to the commit protocol (only its identity, the data
file it references, matters to validation).
"""
from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
from typing import Iterable

from icefloe.impl.format.types import FormatError

__all__ = ["PUFFIN_MAGIC", "DV_MAGIC", "DELETION_VECTOR_V1", "PuffinError", "BlobMetadata",
           "PuffinWriter", "read_footer", "serialize_dv", "deserialize_dv", "read_dv"]

PUFFIN_MAGIC = b"PFA1"
DV_MAGIC = bytes.fromhex("D1D33964")
DELETION_VECTOR_V1 = "deletion-vector-v1"
CREATED_BY = "icefloe"
_FLAG_COMPRESSED = 0x01
POSITION_MAX = (1 << 63) - 1  # "the most significant bit must be 0"


class PuffinError(FormatError):
    """A Puffin file or deletion vector blob that does not follow the spec (names the file)."""


def _roaring():
    try:
        import pyroaring
    except ImportError:  # pragma: no cover - the v3 extra installs it
        raise PuffinError("deletion vectors need pyroaring (pip install 'icefloe[v3]')") from None
    return pyroaring


# -- deletion-vector-v1 --------------------------------------------------------------------

def serialize_dv(positions: Iterable[int]) -> bytes:
    """The `deletion-vector-v1` blob of a set of row positions."""
    positions = sorted(set(positions))
    if positions and not (0 <= positions[0] and positions[-1] <= POSITION_MAX):
        raise PuffinError(f"a deleted position must be in 0..2^63-1, got {positions[0]}..{positions[-1]}")
    bitmap = _roaring().BitMap64(positions)
    bitmap.run_optimize()  # run containers where smaller, as Iceberg-Java writes its DVs
    vector = DV_MAGIC + bitmap.serialize()
    return struct.pack(">I", len(vector)) + vector + struct.pack(">I", zlib.crc32(vector))


def deserialize_dv(blob: bytes, where: str = "<blob>"):
    """The positions (a pyroaring BitMap64) of a `deletion-vector-v1` blob, its length
    prefix, magic, CRC and largest position (at most 2^63-1) checked."""
    if len(blob) < 12:
        raise PuffinError(f"{where}: a deletion vector blob has at least 12 bytes, got {len(blob)}")
    (length,) = struct.unpack(">I", blob[:4])
    if length != len(blob) - 8:
        raise PuffinError(f"{where}: length prefix {length} disagrees with the blob ({len(blob) - 8})")
    vector = blob[4:4 + length]
    if vector[:4] != DV_MAGIC:
        raise PuffinError(f"{where}: bad deletion vector magic {vector[:4].hex()}")
    (crc,) = struct.unpack(">I", blob[4 + length:])
    if crc != zlib.crc32(vector):
        raise PuffinError(f"{where}: deletion vector CRC-32 mismatch")
    try:
        bitmap = _roaring().BitMap64.deserialize(vector[4:])
    except (ValueError, OverflowError) as e:
        raise PuffinError(f"{where}: not a portable 64-bit Roaring bitmap ({e})") from None
    if bitmap and bitmap.max() > POSITION_MAX:  # readers view the positions as int64 (DeleteReader.dv_positions)
        raise PuffinError(f"{where}: a deleted position above 2^63-1 ({bitmap.max()}): "
                          "its most significant bit must be 0")
    return bitmap


# -- Puffin files --------------------------------------------------------------------------

@dataclass(frozen=True)
class BlobMetadata:
    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    properties: dict
    compression_codec: str | None = None


class PuffinWriter:
    """Blobs appended in order; `finish()` returns the file's bytes. Offsets are known as
    each blob is added (what a manifest's content_offset / content_size_in_bytes record)."""

    def __init__(self, properties: dict[str, str] | None = None):
        self._parts = [PUFFIN_MAGIC]
        self._size = len(PUFFIN_MAGIC)
        self._blobs: list[dict] = []
        self.properties = {"created-by": CREATED_BY, **(properties or {})}

    def add_dv(self, referenced_data_file: str, positions) -> tuple[int, int, int]:
        """Add the DV of `referenced_data_file`; returns (offset, length, cardinality).
        Snapshot id and sequence number are -1, as the spec asks of Puffin v1 DVs."""
        positions = sorted(set(positions))
        blob = serialize_dv(positions)
        offset = self._size
        self._parts.append(blob)
        self._size += len(blob)
        self._blobs.append({"type": DELETION_VECTOR_V1, "fields": [2147483645],  # _pos, as Java lists
                            "snapshot-id": -1, "sequence-number": -1, "offset": offset, "length": len(blob),
                            "properties": {"referenced-data-file": referenced_data_file,
                                           "cardinality": str(len(positions))}})
        return offset, len(blob), len(positions)

    def finish(self) -> bytes:
        payload = json.dumps({"blobs": self._blobs, "properties": self.properties},
                             separators=(",", ":")).encode("utf-8")
        footer = PUFFIN_MAGIC + payload + struct.pack("<i", len(payload)) + bytes(4) + PUFFIN_MAGIC
        return b"".join(self._parts) + footer


def read_footer(data: bytes, where: str = "<puffin>") -> tuple[list[BlobMetadata], dict]:
    """The blobs and properties a Puffin file's footer describes."""
    if len(data) < 16 or data[:4] != PUFFIN_MAGIC or data[-4:] != PUFFIN_MAGIC:
        raise PuffinError(f"{where}: not a Puffin file (magic)")
    (size,) = struct.unpack("<i", data[-12:-8])
    flags = data[-8:-4]
    start = len(data) - 12 - size
    if size < 0 or start < 8 or data[start - 4:start] != PUFFIN_MAGIC:
        raise PuffinError(f"{where}: bad footer payload size {size}")
    if flags[0] & _FLAG_COMPRESSED:
        raise PuffinError(f"{where}: an LZ4-compressed footer is not supported by icefloe")
    try:
        doc = json.loads(data[start:start + size].decode("utf-8"))
        blobs = [BlobMetadata(b["type"], tuple(b["fields"]), b["snapshot-id"], b["sequence-number"],
                              b["offset"], b["length"], dict(b.get("properties") or {}),
                              b.get("compression-codec")) for b in doc["blobs"]]
    except (ValueError, KeyError, TypeError) as e:
        raise PuffinError(f"{where}: unreadable footer ({type(e).__name__}: {e})") from None
    return blobs, dict(doc.get("properties") or {})


def read_dv(data: bytes, offset: int, length: int, where: str = "<puffin>"):
    """The positions of the DV blob at `offset` / `length` of a Puffin file's bytes (what a
    manifest's content_offset / content_size_in_bytes name: the footer need not be read)."""
    if offset < len(PUFFIN_MAGIC) or length < 12 or offset + length > len(data):
        raise PuffinError(f"{where}: blob at {offset} (+{length}) is outside the file ({len(data)} bytes)")
    return deserialize_dv(data[offset:offset + length], f"{where}@{offset}")
