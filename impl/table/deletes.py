"""Merge-on-read: applying delete files and deletion vectors to the rows of a data file
(Iceberg spec "Row-level Deletes", "Deletion Vectors", "Scan Planning": which delete files
apply to which data files by data sequence number; spec/PROTOCOL.md 10 "Readers").

- a deletion vector (v3) applies to the one data file it references when its data sequence
  number is >= the data file's; where one applies, position delete files are ignored for
  that file (the DV holds every position they held: spec "Deletion Vectors"). It is applied
  as a row-index filter over the file's positions, never as a join;

- a position delete applies to a data file when its data sequence number is >= the data
  file's, it is in the file's partition (or unpartitioned), its file_path bounds may
  enclose the file's path (as Iceberg-Java's delete index prunes), and it names the path
  (paths compared in one spelling, since writers disagree on `file:/` versus `file:///`);
- an equality delete applies when its data sequence number is strictly > the data
  file's, and it is in the same partition of the same spec or its spec is unpartitioned;
  a row is deleted when its values of the delete's equality ids equal a delete row's
  (null equals null).
"""
from __future__ import annotations

import io as _io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe.impl.format import types as T
from icefloe.impl.format.integrity import CorruptMetadata, check_data_file
from icefloe.impl.format.manifest import DataFile, DataFileContent
from icefloe.impl.format.parquet import read_data_file
from icefloe.impl.io.base import ObjectStore
from icefloe.impl.io.locations import canonical_location, comparable_location


# Reserved field ids of a position delete file (Iceberg spec "Position Delete Files").
DELETE_FILE_PATH_ID = 2147483546
DELETE_POS_ID = 2147483545


def may_name_path(delete: DataFile, path: str) -> bool:
    """Whether a position delete file (or DV) may name `path`: the one data file it
    references when it says so (`referenced_data_file`, required of DVs), else by its
    file_path bounds (no bounds: it may name any path). A truncated bound still encloses
    every path it stands for (spec "Truncation"). The path is tried as written and in icefloe's one spelling, since
    writers disagree on `file:/` versus `file:///` and the rows are matched in that
    spelling (`DeleteReader.apply`)."""
    assert delete.content == DataFileContent.POSITION_DELETES
    if delete.referenced_data_file is not None:  # a DV, or a file-scoped position delete file:
        return comparable_location(delete.referenced_data_file) == comparable_location(path)  # that file only
    lo = (delete.lower_bounds or {}).get(DELETE_FILE_PATH_ID)
    hi = (delete.upper_bounds or {}).get(DELETE_FILE_PATH_ID)
    if lo is None or hi is None:
        return True
    return any(lo <= p.encode() <= hi for p in {path, comparable_location(path)})


def deletion_vector_applies(dv_seq: int, dv: DataFile, data_seq: int, data: DataFile) -> bool:
    assert dv.is_deletion_vector
    return dv_seq >= data_seq and comparable_location(dv.referenced_data_file or "") == \
        comparable_location(data.file_path)


def position_delete_applies(delete_seq: int, delete_spec_id: int, delete: DataFile,
                            data_seq: int, data_spec_id: int, data: DataFile,
                            unpartitioned_delete: bool) -> bool:
    assert delete.content == DataFileContent.POSITION_DELETES
    if delete_seq < data_seq:
        return False
    if not (unpartitioned_delete or (delete_spec_id == data_spec_id and delete.partition == data.partition)):
        return False
    return may_name_path(delete, data.file_path)


def equality_delete_applies(delete_seq: int, delete_spec_id: int, delete: DataFile,
                            data_seq: int, data_spec_id: int, data: DataFile,
                            unpartitioned_delete: bool) -> bool:
    assert delete.content == DataFileContent.EQUALITY_DELETES
    if delete_seq <= data_seq:
        return False
    return unpartitioned_delete or (delete_spec_id == data_spec_id and delete.partition == data.partition)


class DeleteReader:
    """Reads delete files once per scan (they are immutable) and applies them."""

    def __init__(self, io: ObjectStore):
        self.io = io
        self._position_arrays: dict[str, dict[str, np.ndarray]] = {}
        self._positions: dict[str, dict[str, set[int]]] = {}
        self._equalities: dict[tuple[str, tuple], set[tuple]] = {}
        self._puffins: dict[str, bytes] = {}

    def dv_positions(self, dv: DataFile) -> np.ndarray:
        """The deleted positions a deletion vector holds (sorted, unique, int64; a new array
        per call), its blob read at the
        manifest's content_offset / content_size_in_bytes and its cardinality checked
        against the entry's record_count."""
        from icefloe.impl.format.puffin import read_dv
        if dv.content_offset is None or dv.content_size_in_bytes is None or not dv.referenced_data_file:
            raise CorruptMetadata(dv.file_path, "a deletion vector without content_offset, "
                                  "content_size_in_bytes or referenced_data_file")
        data = self._puffins.get(dv.file_path)
        if data is None:
            data = self._puffins[dv.file_path] = self.io.get(dv.file_path)
        bitmap = read_dv(data, dv.content_offset, dv.content_size_in_bytes, dv.file_path)
        if len(bitmap) != dv.record_count:
            raise CorruptMetadata(dv.file_path, f"the deletion vector at {dv.content_offset} holds "
                                  f"{len(bitmap)} positions, its manifest entry says {dv.record_count}")
        # One copy in CRoaring (BitMap64.to_array, pyroaring >= 1.2, the v3 extra's pin), not
        # an int per position through Python; exact as int64 since read_dv refuses a position
        # above 2^63-1.
        return np.frombuffer(bitmap.to_array(), dtype=np.uint64).view(np.int64)

    def position_arrays(self, delete: DataFile) -> dict[str, np.ndarray]:
        """canonical data file path -> its deleted row positions, sorted and unique (int64,
        read-only: cached for the scan). The one reading of a position delete file, grouped
        in Arrow and numpy, never row by row in Python: file_path is read dictionary-encoded,
        each spelling canonicalised once (writers disagree on `file:/` versus `file:///`)."""
        cached = self._position_arrays.get(delete.file_path)
        if cached is None:
            table = pq.read_table(_io.BytesIO(self.io.get(delete.file_path)), columns=["file_path", "pos"],
                                  read_dictionary=["file_path"])
            check_data_file(delete, table.num_rows)
            paths, pos = table.column("file_path"), table.column("pos")
            if paths.null_count or pos.null_count:  # both are required (spec "Position Delete Files")
                raise CorruptMetadata(delete.file_path, "a position delete file with a null file_path or pos")
            path_type = paths.type.value_type if pa.types.is_dictionary(paths.type) else paths.type
            if not (pa.types.is_string(path_type) or pa.types.is_large_string(path_type)) \
                    or not pa.types.is_signed_integer(pos.type):
                raise CorruptMetadata(delete.file_path, f"a position delete file whose file_path is {path_type} or "
                                      f"pos is {pos.type} (they are string and long: spec \"Position Delete Files\")")
            cached = _grouped_positions(paths, pos.to_numpy().astype(np.int64, copy=False))
            self._position_arrays[delete.file_path] = cached
        return cached

    def merged_positions(self, deletes: list[DataFile], path: str) -> np.ndarray:
        """The positions the position delete files `deletes` name for the data file `path`
        (in any spelling): sorted, unique, int64, read-only."""
        key = canonical_location(path)
        found = [a for a in (self.position_arrays(d).get(key) for d in deletes) if a is not None]
        if len(found) == 1:
            return found[0]
        merged = _sorted_unique(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)
        merged.flags.writeable = False
        return merged

    def positions(self, delete: DataFile) -> dict[str, set[int]]:
        """canonical data file path -> deleted row positions, as sets (position_arrays'
        reading of the file, for callers that compare or merge sets)."""
        cached = self._positions.get(delete.file_path)
        if cached is None:
            cached = {path: set(a.tolist()) for path, a in self.position_arrays(delete).items()}
            self._positions[delete.file_path] = cached
        return cached

    def equality_keys(self, delete: DataFile, schema: T.Schema) -> tuple[tuple[int, ...], set[tuple]]:
        ids = tuple(delete.equality_ids or ())
        if not ids:
            raise CorruptMetadata(delete.file_path, "an equality delete file without equality ids")
        key = (delete.file_path, ids)
        cached = self._equalities.get(key)
        if cached is None:
            fields = [T.NestedField(f.field_id, f.name, f.type, False)
                      for f in (schema.find_field(i) for i in ids)]
            rows = read_data_file(self.io.get(delete.file_path), T.Schema(tuple(fields)), delete.file_path,
                                  data_file=delete)
            cached = set(zip(*(rows.column(i).to_pylist() for i in range(rows.num_columns))))
            self._equalities[key] = cached
        return ids, cached

    def apply(self, rows: pa.Table, data: DataFile, position_deletes: list[DataFile],
              equality_deletes: list[DataFile], schema: T.Schema,
              deletion_vector: DataFile | None = None) -> pa.Table:
        if deletion_vector is not None:
            keep = np.ones(rows.num_rows, dtype=bool)
            positions = self.dv_positions(deletion_vector)  # sorted, none negative
            keep[positions[:np.searchsorted(positions, rows.num_rows)]] = False
            rows = rows.filter(pa.array(keep)) if not keep.all() else rows
            position_deletes = []  # the DV replaced them (spec "Deletion Vectors")
        if not position_deletes and not equality_deletes:
            return rows
        n = rows.num_rows
        keep = np.ones(n, dtype=bool)  # a row-index mask: positions set, never a join
        if position_deletes:
            positions = self.merged_positions(position_deletes, data.file_path)
            lo, hi = np.searchsorted(positions, [0, n])  # sorted: the positions in 0..n-1 are one slice
            keep[positions[lo:hi]] = False
        for d in equality_deletes:
            ids, keys = self.equality_keys(d, schema)
            columns = [rows.column(schema.find_field(i).name).to_pylist() for i in ids]
            for i, values in enumerate(zip(*columns)):
                if values in keys:
                    keep[i] = False
        return rows.filter(pa.array(keep)) if not keep.all() else rows


def _grouped_positions(paths: pa.ChunkedArray, pos: np.ndarray) -> dict[str, np.ndarray]:
    """Rows (a dictionary-encoded file_path, an int64 pos) grouped by canonical path, each
    group's positions sorted and unique. A writer sorts a position delete file by file_path
    then pos (spec "Position Delete Files"), so the usual file needs no sort, only checks;
    any other order, duplicates and spellings of one path are grouped all the same."""
    groups: dict[str, int] = {}  # canonical path -> group number, in order of first appearance
    codes = []
    for chunk in paths.chunks:  # a dictionary per chunk (row group)
        lookup = np.array([groups.setdefault(canonical_location(v), len(groups))
                           for v in chunk.dictionary.to_pylist()], dtype=np.int64)
        codes.append(lookup[chunk.indices.to_numpy()])
    code = np.concatenate(codes) if codes else np.empty(0, dtype=np.int64)
    assert len(code) == len(pos), (len(code), len(pos))
    if len(code) and not (code[1:] >= code[:-1]).all():
        # kind="stable" for numpy's radix sort of 16-bit keys (26 -> 2 ms on 10^6 rows); the
        # order within a group does not matter (each is sorted below).
        order = np.argsort(code.astype(np.uint16) if len(groups) <= 1 << 16 else code, kind="stable")
        code, pos = code[order], pos[order]
    bounds = np.concatenate(([0], np.cumsum(np.bincount(code, minlength=len(groups)))))
    out = {}
    for path, g in groups.items():  # bounded by the spellings the file's dictionaries hold
        if bounds[g] < bounds[g + 1]:
            positions = _sorted_unique(pos[bounds[g]:bounds[g + 1]])
            positions.flags.writeable = False  # cached and shared by every caller of the scan
            out[path] = positions
    return out


def _sorted_unique(positions: np.ndarray) -> np.ndarray:
    """Sorted without duplicates, sorting only when out of order. (np.sort and a mask, not
    np.unique: numpy 2.4's np.unique took ~100x as long on 10^6 int64.)"""
    # Neighbours compared, not np.diff: a difference of int64s can wrap (a corrupt file's
    # -2 after 2^63-1 would look in order).
    if not (positions[1:] >= positions[:-1]).all():
        positions = np.sort(positions)
    new = positions[1:] != positions[:-1]
    return positions if new.all() else positions[np.concatenate(([True], new))]


def not_true(mask: pc.Expression) -> pc.Expression:
    """Rows for which a filter is not true (false or unknown): what a delete keeps."""
    return ~mask | mask.is_null()
