"""Puffin files and deletion-vector-v1 blobs (impl/format/puffin.py)."""
from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings, strategies as st
from pyroaring import BitMap

from icefloe.impl.format.puffin import (
    DV_MAGIC, PUFFIN_MAGIC, PuffinError, PuffinWriter, deserialize_dv, read_dv, read_footer, serialize_dv,
)


def portable_layout(positions) -> bytes:
    """The spec's layout built independently: count (8 LE), then per high key in unsigned
    order the key (4 LE) and that key's 32-bit Roaring bitmap in its portable format."""
    by_key: dict[int, list[int]] = {}
    for p in positions:
        by_key.setdefault(p >> 32, []).append(p & 0xFFFFFFFF)
    out = struct.pack("<Q", len(by_key))
    for key in sorted(by_key):
        bitmap = BitMap(by_key[key])
        bitmap.run_optimize()
        out += struct.pack("<I", key) + bitmap.serialize()
    return out


POSITIONS = st.sets(st.one_of(st.integers(0, 70_000), st.integers(0, (1 << 63) - 1),
                              st.integers((1 << 32) - 5, (1 << 32) + 5)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(POSITIONS)
def test_dv_blob_is_the_portable_layout_with_length_magic_and_crc(positions):
    """Goal: pyroaring's BitMap64 serialization is the spec's portable layout, framed as the
    blob type says. Method: build the layout from 32-bit bitmaps per key and compare bytes."""
    blob = serialize_dv(positions)
    vector = DV_MAGIC + portable_layout(positions)
    assert blob == struct.pack(">I", len(vector)) + vector + struct.pack(">I", zlib.crc32(vector))
    assert set(deserialize_dv(blob)) == set(positions)


def test_damaged_dv_blobs_are_refused_by_name():
    """Goal: a bad length, magic, CRC or position is a PuffinError. Method: one damage each."""
    blob = bytearray(serialize_dv([1, 2, 3]))
    for i, message in ((0, "length prefix"), (5, "magic"), (len(blob) - 1, "CRC")):
        bad = bytearray(blob)
        bad[i] ^= 0xFF
        with pytest.raises(PuffinError, match=message):
            deserialize_dv(bytes(bad))
    with pytest.raises(PuffinError, match="2\\^63"):
        serialize_dv([1 << 63])
    with pytest.raises(PuffinError):
        deserialize_dv(b"\x00" * 5)


def test_puffin_file_holds_several_dvs_at_the_offsets_it_reports():
    """Goal: each DV is read back from the (offset, length) add_dv returned, and the footer
    says the same. Method: two DVs in one file; read by offset and by footer."""
    writer = PuffinWriter()
    a = writer.add_dv("s3://b/t/data/a.parquet", [0, 7, 9])
    b = writer.add_dv("s3://b/t/data/b.parquet", range(1000))
    data = writer.finish()
    assert data[:4] == PUFFIN_MAGIC and data[-4:] == PUFFIN_MAGIC
    assert list(read_dv(data, a[0], a[1])) == [0, 7, 9] and a[2] == 3
    assert list(read_dv(data, b[0], b[1])) == list(range(1000)) and b[2] == 1000
    blobs, props = read_footer(data)
    assert props["created-by"] == "icefloe"
    assert [(x.offset, x.length, x.properties["referenced-data-file"], x.properties["cardinality"])
            for x in blobs] == [(a[0], a[1], "s3://b/t/data/a.parquet", "3"),
                                (b[0], b[1], "s3://b/t/data/b.parquet", "1000")]
    assert all(x.type == "deletion-vector-v1" and x.snapshot_id == -1 and x.sequence_number == -1
               and x.compression_codec is None for x in blobs)
    with pytest.raises(PuffinError, match="outside"):
        read_dv(data, b[0], len(data))
    compressed = data[:-8] + bytes([1, 0, 0, 0]) + PUFFIN_MAGIC
    with pytest.raises(PuffinError, match="LZ4"):
        read_footer(compressed)
