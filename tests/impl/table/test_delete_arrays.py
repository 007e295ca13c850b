"""DeleteReader's arrays (impl/table/deletes.py): position_arrays against a row-by-row reading
of the same position delete file, positions() against position_arrays, dv_positions against
the deletion vector's bitmap, and the refusals of a file or blob that breaks the spec
(Iceberg spec "Position Delete Files", "Deletion Vectors"; Puffin "deletion-vector-v1")."""
from __future__ import annotations

import io
import struct
import uuid
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st
from pyroaring import BitMap64

from icefloe.impl.format import types as T
from icefloe.impl.format.integrity import CorruptMetadata
from icefloe.impl.format.manifest import DataFile, DataFileContent
from icefloe.impl.format.puffin import DV_MAGIC, PuffinError, PuffinWriter
from icefloe.impl.io.locations import canonical_location
from icefloe.impl.io.memory import MemoryStore
from icefloe.impl.table.deletes import DeleteReader

# Three data files, each in several spellings (writers disagree on file:/ versus file:///).
SPELLINGS = {
    "file:///t/data/a.parquet": ["file:///t/data/a.parquet", "file:/t/data/a.parquet", "/t/data/a.parquet"],
    "file:///t/data/b.parquet": ["file:/t/data/b.parquet", "file:///t/data/b.parquet"],
    "s3://bucket/t/data/c.parquet": ["s3://bucket/t/data/c.parquet"],
}
ALL_SPELLINGS = [s for spellings in SPELLINGS.values() for s in spellings]
# Negative and extreme positions too (a corrupt file's): positions() has always kept them.
POSITIONS = st.one_of(st.integers(0, 40), st.integers(0, (1 << 40)), st.integers(-3, -1),
                      st.sampled_from([-(1 << 63), (1 << 63) - 1]))
ROWS = st.lists(st.tuples(st.sampled_from(ALL_SPELLINGS), POSITIONS), max_size=80)


def position_delete_file(store: MemoryStore, rows: list[tuple], name: str = "pos.parquet",
                         row_group_size: int | None = None, record_count: int | None = None,
                         schema: pa.Schema | None = None) -> DataFile:
    """A position delete file holding `rows` (file_path, pos) in the order given."""
    table = pa.table({"file_path": [p for p, _ in rows], "pos": [n for _, n in rows]},
                     schema=schema or pa.schema([("file_path", pa.string()), ("pos", pa.int64())]))
    out = io.BytesIO()
    pq.write_table(table, out, row_group_size=row_group_size)
    location = f"mem://t/data/{name}"
    store.put_if_absent(location, out.getvalue())
    return DataFile(location, "PARQUET", (), len(rows) if record_count is None else record_count,
                    len(out.getvalue()), content=DataFileContent.POSITION_DELETES)


def by_row(rows: list[tuple]) -> dict[str, list[int]]:
    """The reference: each row's path canonicalised in Python, positions gathered in sets."""
    held: dict[str, set[int]] = {}
    for path, pos in rows:
        held.setdefault(canonical_location(path), set()).add(pos)
    return {path: sorted(ps) for path, ps in held.items()}


@settings(max_examples=200, deadline=None)
@given(ROWS, st.booleans(), st.sampled_from([None, 1, 7]))
def test_position_arrays_are_the_rows_grouped_by_canonical_path(rows, writer_sorted, row_group_size):
    """Goal: position_arrays holds, per canonical path, exactly the file's positions, sorted
    and unique, whatever the row order, duplicates, spellings and row groups; positions()
    holds the same as sets. Method: compare with a row-by-row reading in Python."""
    if writer_sorted:  # as a writer sorts (spec): by file_path then pos, the grouping's fast path
        rows = sorted(rows)
    store = MemoryStore()
    delete = position_delete_file(store, rows, row_group_size=row_group_size)
    reader = DeleteReader(store)
    arrays = reader.position_arrays(delete)
    expected = by_row(rows)
    assert {path: a.tolist() for path, a in arrays.items()} == expected
    for a in arrays.values():
        assert a.dtype == np.int64 and not a.flags.writeable
    assert reader.positions(delete) == {path: set(ps) for path, ps in expected.items()}


@settings(max_examples=100, deadline=None)
@given(st.lists(ROWS, max_size=3), st.sampled_from(ALL_SPELLINGS + ["file:///t/data/none.parquet"]))
def test_merged_positions_are_the_union_over_delete_files(files, path):
    """Goal: merged_positions is, for one data file in any spelling, the sorted union of what
    each delete file names for it. Method: compare with the union of positions() sets."""
    store = MemoryStore()
    deletes = [position_delete_file(store, rows, f"pos-{k}.parquet") for k, rows in enumerate(files)]
    reader = DeleteReader(store)
    merged = reader.merged_positions(deletes, path)
    expected = set().union(*(reader.positions(d).get(canonical_location(path), set()) for d in deletes))
    assert merged.dtype == np.int64 and not merged.flags.writeable
    assert merged.tolist() == sorted(expected)


def test_one_reading_of_a_position_delete_file_for_arrays_and_sets():
    """Goal: positions() and position_arrays share one reading per delete file (cached per
    reader). Method: count the store's gets and compare the objects returned twice."""
    store = MemoryStore()
    delete = position_delete_file(store, [("file:/t/data/a.parquet", 3), ("file:///t/data/a.parquet", 1)])
    reader = DeleteReader(store)
    before = store.counts["get"]
    arrays = reader.position_arrays(delete)
    sets = reader.positions(delete)
    assert reader.position_arrays(delete) is arrays and reader.positions(delete) is sets
    assert store.counts["get"] - before == 1
    assert sets == {"file:///t/data/a.parquet": {1, 3}}
    assert arrays["file:///t/data/a.parquet"].tolist() == [1, 3]


def test_sixteen_data_files_in_several_row_groups():
    """Goal: a spec-shaped file (sorted by path then pos) naming 16 data files over row groups
    that split paths is grouped right. Method: compare with numpy's own grouping."""
    rng = np.random.default_rng(7)
    files = np.sort(rng.integers(0, 16, 5_000))
    pos = rng.integers(0, 1_000, 5_000)
    order = np.lexsort((pos, files))
    rows = [(f"file:///t/data/f{f:02d}.parquet", int(p)) for f, p in zip(files[order], pos[order])]
    store = MemoryStore()
    arrays = DeleteReader(store).position_arrays(position_delete_file(store, rows, row_group_size=333))
    assert sorted(arrays) == sorted({p for p, _ in rows})
    for k in range(16):
        expected = np.unique(pos[files == k]) if (files == k).any() else None
        got = arrays.get(f"file:///t/data/f{k:02d}.parquet")
        assert (got is None) == (expected is None)
        if got is not None:
            np.testing.assert_array_equal(got, expected)


def test_a_file_out_of_path_order_naming_more_than_65536_data_files():
    """Goal: a position delete file out of path order (the spec sorts by file_path, not every
    writer does) naming more data files than a 16-bit group number holds is grouped by whole
    path: the 16-bit radix keys serve up to 65,536 groups only. Method: 70,000 data files,
    each named twice in two passes over all of them (so the groups are out of order),
    compared with the row-by-row reading; the files on both sides of 2^16 checked by name."""
    n = 70_000
    path = "file:///t/data/f{:05d}.parquet".format
    rows = [(path(k), k % 5 + 1) for k in range(n)] + [(path(k), k % 3) for k in range(n)]
    store = MemoryStore()
    arrays = DeleteReader(store).position_arrays(position_delete_file(store, rows))
    for k in (0, 1, 65_535, 65_536, 65_537, n - 1):
        assert arrays[path(k)].tolist() == sorted({k % 5 + 1, k % 3}), k
    assert {p: a.tolist() for p, a in arrays.items()} == by_row(rows)

@pytest.mark.parametrize("rows", [[(None, 1), ("file:///t/data/a.parquet", 2)],
                                  [("file:///t/data/a.parquet", None), ("file:///t/data/a.parquet", 2)]],
                         ids=["null file_path", "null pos"])
def test_a_null_file_path_or_pos_is_refused_as_corrupt_metadata(rows):
    """Goal: both columns are required (spec); a null is refused naming the file, through
    arrays and sets alike. Method: write one null and read it both ways."""
    store = MemoryStore()
    delete = position_delete_file(store, rows)
    for read in (DeleteReader.position_arrays, DeleteReader.positions):
        with pytest.raises(CorruptMetadata, match="null file_path or pos") as e:
            read(DeleteReader(store), delete)
        assert delete.file_path in str(e.value)


@pytest.mark.parametrize("schema", [pa.schema([("file_path", pa.string()), ("pos", pa.string())]),
                                    pa.schema([("file_path", pa.int64()), ("pos", pa.int64())]),
                                    pa.schema([("file_path", pa.string()), ("pos", pa.uint64())])],
                         ids=["string pos", "long file_path", "unsigned pos"])
def test_columns_of_another_type_are_refused_as_corrupt_metadata(schema):
    """Goal: file_path is a string and pos a long (spec); other types are refused, not read
    as something else. Method: write each wrong type and read."""
    store = MemoryStore()
    path = 7 if pa.types.is_integer(schema.field("file_path").type) else "file:///t/data/a.parquet"
    pos = "3" if pa.types.is_string(schema.field("pos").type) else 3
    delete = position_delete_file(store, [(path, pos)], schema=schema)
    with pytest.raises(CorruptMetadata, match="spec \"Position Delete Files\""):
        DeleteReader(store).position_arrays(delete)


def test_a_record_count_other_than_the_file_is_refused():
    """Goal: the manifest's record_count is checked against the file. Method: say 3 for 2 rows."""
    store = MemoryStore()
    delete = position_delete_file(store, [("file:///t/data/a.parquet", 1)] * 2, record_count=3)
    with pytest.raises(CorruptMetadata, match="record_count=3"):
        DeleteReader(store).position_arrays(delete)


def test_apply_drops_exactly_the_positions_in_range_of_every_delete_file():
    """Goal: apply removes the rows at the positions any applicable delete file names for the
    data file under any spelling, ignoring negative and out-of-range positions and other
    files' positions. Method: compare the kept ids with a set difference."""
    store = MemoryStore()
    n = 50
    first = position_delete_file(store, [("file:/t/data/a.parquet", 48), ("file:/t/data/a.parquet", 3),
                                         ("file:///t/data/b.parquet", 4), ("/t/data/a.parquet", -1),
                                         ("/t/data/a.parquet", 50), ("/t/data/a.parquet", 3)], "one.parquet")
    second = position_delete_file(store, [("file:///t/data/a.parquet", 0), ("file:///t/data/a.parquet", 10)],
                                  "two.parquet")
    schema = T.Schema((T.NestedField(1, "id", T.LONG, True),))
    data = DataFile("/t/data/a.parquet", "PARQUET", (), n, 1)
    kept = DeleteReader(store).apply(pa.table({"id": pa.array(range(n), pa.int64())}), data, [first, second], [],
                                     schema)
    assert kept.column("id").to_pylist() == sorted(set(range(n)) - {0, 3, 10, 48})  # -1 is not the last row


# -- deletion vectors ----------------------------------------------------------------------

DV_POSITIONS = st.sets(st.one_of(st.integers(0, 70_000), st.integers((1 << 32) - 3, (1 << 32) + 3),
                                 st.integers(0, (1 << 63) - 1)), max_size=60)


def deletion_vector(store: MemoryStore, positions, record_count: int | None = None) -> DataFile:
    writer = PuffinWriter()
    offset, length, cardinality = writer.add_dv("file:///t/data/a.parquet", positions)
    location = f"mem://t/data/dv-{uuid.uuid4()}.puffin"
    store.put_if_absent(location, writer.finish())
    return DataFile(location, "PUFFIN", (), cardinality if record_count is None else record_count, 0,
                    content=DataFileContent.POSITION_DELETES, referenced_data_file="file:///t/data/a.parquet",
                    content_offset=offset, content_size_in_bytes=length)


@settings(max_examples=150, deadline=None)
@given(DV_POSITIONS)
def test_dv_positions_are_the_bitmaps_positions_in_order(positions):
    """Goal: dv_positions returns every position of the DV, sorted int64, including those
    above 2^32 and up to 2^63-1. Method: compare with the positions written and with
    iterating the bitmap read back."""
    store = MemoryStore()
    got = DeleteReader(store).dv_positions(deletion_vector(store, positions))
    assert got.dtype == np.int64
    assert got.tolist() == sorted(positions) == list(BitMap64(positions))


def test_a_dv_whose_cardinality_is_not_its_record_count_is_refused():
    """Goal: the manifest's record_count is checked against the DV. Method: say 2 for 3."""
    store = MemoryStore()
    with pytest.raises(CorruptMetadata, match="holds 3 positions, its manifest entry says 2"):
        DeleteReader(store).dv_positions(deletion_vector(store, [1, 2, 1 << 40], record_count=2))


def test_a_dv_position_with_its_top_bit_set_is_refused():
    """Goal: a position above 2^63-1 (spec: the most significant bit must be 0) is refused,
    never wrapped to a negative int64. Method: frame a bitmap holding 2^63 as a valid blob."""
    vector = DV_MAGIC + BitMap64([5, 1 << 63]).serialize()
    blob = struct.pack(">I", len(vector)) + vector + struct.pack(">I", zlib.crc32(vector))
    store = MemoryStore()
    store.put_if_absent("mem://t/data/top.puffin", b"PFA1" + blob)
    dv = DataFile("mem://t/data/top.puffin", "PUFFIN", (), 2, 0, content=DataFileContent.POSITION_DELETES,
                  referenced_data_file="file:///t/data/a.parquet", content_offset=4, content_size_in_bytes=len(blob))
    with pytest.raises(PuffinError, match="above 2\\^63-1"):
        DeleteReader(store).dv_positions(dv)


def test_apply_with_a_dv_drops_its_positions_in_range_only():
    """Goal: a DV removes the rows at its positions below the row count and replaces the
    position delete files. Method: compare the kept ids with a set difference."""
    store = MemoryStore()
    dv = deletion_vector(store, [0, 7, 19, 20, 1 << 33])
    ignored = position_delete_file(store, [("file:///t/data/a.parquet", 5)])
    schema = T.Schema((T.NestedField(1, "id", T.LONG, True),))
    data = DataFile("file:///t/data/a.parquet", "PARQUET", (), 20, 1)
    kept = DeleteReader(store).apply(pa.table({"id": pa.array(range(20), pa.int64())}), data, [ignored], [],
                                     schema, deletion_vector=dv)
    assert kept.column("id").to_pylist() == sorted(set(range(20)) - {0, 7, 19})
