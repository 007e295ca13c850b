"""The native merge-on-read over several files in one scan (impl/spark/native_read.py
`_merge_by_files`, native_dvs.py `bitset_literal` / `kept_by_bitset`; issue 29 item 6):
each row told its file by Spark's `_metadata.file_path`, its deleted positions looked up
in one bitset literal by the row index (Spark's internal `_tmp_metadata_row_index`
where the probe passes, else `_metadata.row_index`). Exact rows and exact (file, position)
pairs where files have several row groups and are split across Spark partitions, for
deletion vectors (v3) and position delete files (v2)."""
from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format import parquet as P
from icefloe.impl.format import types as T
from icefloe.impl.io.local import LocalStore
from icefloe.impl.io.locations import canonical_location
from icefloe.impl.outcomes import require_committed
from icefloe.impl.spark import delete, plan, read
from icefloe.impl.spark.transforms_sql import NotNative
from icefloe.impl.table.table import create_table
from spark_helpers import SCHEMA, TABLE, open_table, rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "impl" / "table"))
from delete_writers import position_delete_file  # noqa: E402

pytestmark = pytest.mark.xdist_group("spark")

ROWS_PER_FILE, ROW_GROUP_ROWS, FILES = 3000, 700, 3
# deleted: each file's first and last row, rows on both sides of row group bounds, every 7th of the rest
DELETED = sorted({f * ROWS_PER_FILE + p for f in range(FILES)
                  for p in (0, ROWS_PER_FILE - 1, 699, 700, 1400, 2099, 2100, *range(3, ROWS_PER_FILE, 7))})


def _table(opts, version: int, monkeypatch):
    """An unpartitioned table of FILES files of ROWS_PER_FILE rows (ids in file order), each
    in row groups of ROW_GROUP_ROWS rows, then DELETED deleted merge-on-read by Spark's
    delete (DVs on v3, a position delete file per data file on v2)."""
    monkeypatch.setitem(P.write_data_file.__kwdefaults__, "row_group_rows_max", ROW_GROUP_ROWS)
    table = create_table(SqlCatalog(opts["catalog-uri"], name="icefloe"), "db.t", T.schema_from_arrow(SCHEMA),
                         None, f"file://{opts['warehouse']}/db.db/t", io=LocalStore(), format_version=version)
    for f in range(FILES):
        require_committed(table.append(rows(range(f * ROWS_PER_FILE, (f + 1) * ROWS_PER_FILE))))
    return table


def _delete(spark, opts, table, version: int):
    """DELETED deleted merge-on-read: on v3 by icefloe's delete (DVs), in two commits (the
    second's DVs hold the first's positions); on v2 by a position delete file per data file;
    then the last two of DELETED (in the last file) by Spark's delete: a DV superseding
    that file's, or one more position delete file for it."""
    bulk, last = DELETED[:-2], DELETED[-2:]
    if version == 3:
        for half in (bulk[::2], bulk[1::2]):
            require_committed(table.delete(f"id in ({', '.join(map(str, half))})", mode="merge-on-read"))
            table.refresh()
    else:
        by_file = {}
        for t in table.plan_files():
            ids = pq.read_table(t.data_file.file_path.removeprefix("file://"), columns=["id"]).column("id")
            by_file[t.data_file.file_path] = ids[0].as_py() // ROWS_PER_FILE
        files = []
        for path, f in sorted(by_file.items()):
            pairs = [(path, i - f * ROWS_PER_FILE) for i in bulk if i // ROWS_PER_FILE == f]
            files.append(position_delete_file(table, pairs))
        require_committed(table.add_delete_files(files, sorted(by_file)))
        table.refresh()
    delete(spark, TABLE, opts, f"id in ({', '.join(map(str, last))})", mode="merge-on-read")


def _ids(df) -> list[int]:
    return sorted(r.id for r in df.select("id").collect())


def _positions(table) -> dict[tuple[str, int], int]:
    """(canonical data file, row position) -> id of every row of the live data files."""
    out = {}
    for path in table.tree.live_data_paths(table.current_snapshot()):
        ids = pq.read_table(path.removeprefix("file://"), columns=["id"]).column("id").to_pylist()
        out.update({(canonical_location(path), pos): i for pos, i in enumerate(ids)})
    return out


class _SplitFiles:
    """Spark conf under which each data file is read as several partitions."""

    def __init__(self, spark):
        self.spark = spark

    def __enter__(self):
        keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
        self.before = {k: self.spark.conf.get(k, None) for k in keys}
        for k in keys:
            self.spark.conf.set(k, "8192")
        return self

    def __exit__(self, *exc):
        for k, v in self.before.items():
            if v is None:
                self.spark.conf.unset(k)
            else:
                self.spark.conf.set(k, v)


@pytest.mark.parametrize("version", [3, 2])
def test_merge_on_read_of_split_multi_row_group_files_is_exact(spark, opts, monkeypatch, version):
    """Goal: the native read of files with several row groups, each split across Spark
    partitions, drops exactly the deleted rows, and positions_frame gives each live row's
    own (file, row position), with DVs (v3) and with position delete files (v2). Method:
    3 files of 3000 rows in row groups of 700, deletes at each file's first and last row,
    on both sides of row group bounds and every 7th row, by Spark's merge-on-read delete
    in several commits; reads with partitions of 8 KiB (more partitions than files,
    checked), by the bitset, by the anti-join (no bitset words) and with the bitset for
    one file only, with Spark's internal row index column and with `_metadata.row_index`; rows against icefloe's scan and the deleted ids, pairs against the
    positions read from the files by pyarrow."""
    import icefloe.impl.spark.native_dvs as DV
    table = _table(opts, version, monkeypatch)
    _delete(spark, opts, table, version)
    table = open_table(opts)
    paths = sorted(table.tree.live_data_paths(table.current_snapshot()))
    assert len(paths) == FILES and all(pq.ParquetFile(p.removeprefix("file://")).metadata.num_row_groups == 5
                                       for p in paths)
    scanned = plan(spark, TABLE, opts, planning="local").plan
    kind = "deletion_vector" if version == 3 else "position_deletes"
    assert scanned.column(kind).null_count == 0  # every file has deletes of that kind
    want = sorted(set(range(FILES * ROWS_PER_FILE)) - set(DELETED))
    assert sorted(table.scan().column("id").to_pylist()) == want
    positions = _positions(table)
    live = {pair for pair, i in positions.items() if i not in set(DELETED)}
    words = DV.bitset_words(ROWS_PER_FILE)
    assert DV.internal_row_index(spark)  # (this Spark fills the internal row index column)
    with _SplitFiles(spark):
        # all bitsets; all anti-joined; one file each way; all bitsets by `_metadata.row_index`
        for budget, internal in ((DV.BITSET_WORDS_MAX, True), (0, True), (words, True), (DV.BITSET_WORDS_MAX, False)):
            monkeypatch.setattr(DV, "BITSET_WORDS_MAX", budget)
            monkeypatch.setattr(DV, "internal_row_index", lambda spark, internal=internal: internal)
            df = read(spark, TABLE, opts)
            assert df.rdd.getNumPartitions() > FILES
            assert _ids(df) == want, budget
            got = plan(spark, TABLE, opts, planning="local").positions_frame().collect()
            assert len(got) == len(live) and {(r[0], r[1]) for r in got} == live, budget
            filtered = _ids(read(spark, TABLE, opts, row_filter=f"id >= {ROWS_PER_FILE + 690} and id < 4000"))
            assert filtered == [i for i in want if ROWS_PER_FILE + 690 <= i < 4000], budget


def test_files_of_equal_size_and_odd_paths_each_get_their_own_deletes(spark, tmp_path, monkeypatch):
    """Goal: each row is told its own file (by the partition values of its link,
    linked_files.py), files of equal size and paths Spark percent-encodes included, so
    each file gets its own deletes and positions_frame names each row's own file. Method:
    a warehouse whose path has a space, '+', '%20' and a quote in it; a v2 table of three
    files, two of the same rows (equal sizes, checked) and one other; a position delete
    file with other positions in each; a read and positions_frame (its files named by a
    CASE, then by a join) against the ids and
    pyarrow's positions (a file read with the other's deletes gives other ids, or other
    pairs); then the bitset words of two files swapped in their links
    (linked_files.linked given other constants; the twins, then a twin and the other file): the
    pairs, then the ids, are wrong, so the links are what tells the files apart."""
    import icefloe.impl.spark.linked_files as LF
    import icefloe.impl.spark.native_read as NR
    from icefloe.impl.io.locations import local_path
    warehouse = tmp_path / "ware house+x%20y'z"
    warehouse.mkdir()
    opts = {"catalog-uri": f"sqlite:///{tmp_path / 'catalog.db'}", "warehouse": str(warehouse)}
    table = _table(opts, 2, monkeypatch)  # ids 0..8999 in 3 files
    require_committed(table.append(rows(range(0, ROWS_PER_FILE))))  # the first file's rows again
    table.refresh()
    twins = sorted(t.data_file.file_path for t in table.plan_files()
                   if pq.read_table(local_path(t.data_file.file_path), columns=["id"]).column("id")[0].as_py() == 0)
    assert len(twins) == 2 and len({Path(local_path(p)).stat().st_size for p in twins}) == 1
    other = sorted({t.data_file.file_path for t in table.plan_files()} - set(twins))[0]
    deletes = {twins[0]: [0, 1, 700], twins[1]: [2, 2999], other: [5]}
    require_committed(table.add_delete_files(
        [position_delete_file(table, [(p, pos) for p, found in deletes.items() for pos in found])], sorted(deletes)))
    table = open_table(opts)
    want = sorted(table.scan().column("id").to_pylist())
    assert len(want) == 4 * ROWS_PER_FILE - 6 and (want.count(0), want.count(2), want.count(3)) == (1, 1, 2)
    gone = {(canonical_location(p), pos) for p, found in deletes.items() for pos in found}
    live = set(_positions(table)) - gone
    assert _ids(read(spark, TABLE, opts)) == want
    for case_max in (NR.FILE_CASE_MAX, 0):  # each row's file by a CASE on IDX, then by a join on it
        monkeypatch.setattr(NR, "FILE_CASE_MAX", case_max)
        got = plan(spark, TABLE, opts, planning="local").positions_frame().collect()
        assert {(r[0], r[1]) for r in got} == live and len(got) == len(live), case_max
    linked = LF.linked

    def swapping(a, b):
        def swapped(spark, paths, constants):  # the bitset words of files a and b exchanged (not their IDX)
            i, j = paths.index(a), paths.index(b)
            constants = [dict(c) for c in constants]
            for key in (NR.WORD, NR.ROWS):
                constants[i][key], constants[j][key] = constants[j][key], constants[i][key]
            return linked(spark, paths, constants)
        return swapped
    monkeypatch.setattr(LF, "linked", swapping(twins[0], twins[1]))  # (same rows: the ids cannot tell)
    got = plan(spark, TABLE, opts, planning="local").positions_frame().collect()
    assert {(r[0], r[1]) for r in got} != live
    monkeypatch.setattr(LF, "linked", swapping(twins[0], other))
    assert _ids(read(spark, TABLE, opts)) != want


def test_the_packed_bitset_literal_holds_the_folded_ones_words(spark):
    """Goal: the bitset literal built in the JVM from the words' bytes (native_dvs
    `_packed_literal`, Spark's UnsafeArrayData) holds exactly the words of the literal
    Spark folds from their decimal spelling (`_folded_literal`), sign bits, a file without
    words and a position past its file included. Method: both literals of the same
    positions read back through Spark, against the words numpy computes."""
    import numpy as np
    import icefloe.impl.spark.native_dvs as DV
    positions = {0: np.array([0, 63, 64, 127, 1000, 5000], np.int64), 1: np.array([], np.int64),
                 2: np.array([1, 62, 63], np.int64)}
    rows = [1001, 0, 64]  # 5000 lies past file 0's rows: ignored
    packed, offsets = DV.bitset_literal(positions, rows, spark)
    folded, same = DV.bitset_literal(positions, rows)
    assert offsets == same == {0: 0, 1: 16, 2: 16}
    want = [0] * 17
    for k, found in positions.items():
        for p in found[found < rows[k]]:
            want[offsets[k] + p // 64] |= 1 << (p % 64)
    want = [w - (1 << 64) if w >= 1 << 63 else w for w in want]
    got = spark.range(1).select(packed.alias("p"), folded.alias("f")).collect()[0]
    assert list(got.p) == list(got.f) == want and want[0] < 0 and want[16] < 0


def test_a_file_column_named_like_sparks_row_index_column_is_never_read_as_the_row_index(spark, opts, monkeypatch):
    """Goal: a data file holding a column named like Spark's internal row index column
    (`_tmp_metadata_row_index`) is never read with that column as its row index: Spark
    4.3's vectorized reader returns a file's column of that name as the internal column
    and as `_metadata.row_index` alike, even where columns are matched by field id, so the
    native merge-on-read refuses such files (NotNative) and `read()` falls back to the
    Python data source, exact. Method: a v3 table of 2 files of 3000 rows in row groups of
    700 whose column of that name holds no row index (i * 7 % 5), the column dropped (the
    files keep it), then rows deleted merge-on-read (DVs); reads against icefloe's scan;
    positions_frame and the one scan matched by path (`_merge_by_rows`) refused too; then
    the guard (holds_row_index_column) disabled, with either row index and by path: the rows
    are wrong, so the guard is what keeps the read exact."""
    import pyarrow as pa
    import icefloe.impl.spark.native_dvs as DV
    from icefloe.impl.table import schema_evolution as SE
    assert DV.internal_row_index(spark)
    monkeypatch.setitem(P.write_data_file.__kwdefaults__, "row_group_rows_max", ROW_GROUP_ROWS)
    arrow = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field(DV.ROW_INDEX_COLUMN, pa.int64())])
    table = create_table(SqlCatalog(opts["catalog-uri"], name="icefloe"), "db.t", T.schema_from_arrow(arrow),
                         None, f"file://{opts['warehouse']}/db.db/t", io=LocalStore(), format_version=3)
    for f in range(2):
        ids = list(range(f * ROWS_PER_FILE, (f + 1) * ROWS_PER_FILE))
        require_committed(table.append(pa.table({"id": ids, DV.ROW_INDEX_COLUMN: [i * 7 % 5 for i in ids]},
                                                schema=arrow)))
    commit = table.begin(SE.drop_column_change(DV.ROW_INDEX_COLUMN))
    commit.run()
    require_committed(table.adopt(commit))
    gone = [i for i in DELETED if i < 2 * ROWS_PER_FILE]
    require_committed(table.delete(f"id in ({', '.join(map(str, gone))})", mode="merge-on-read"))
    table = open_table(opts)
    want = sorted(set(range(2 * ROWS_PER_FILE)) - set(gone))
    assert sorted(table.scan().column("id").to_pylist()) == want
    assert all(DV.ROW_INDEX_COLUMN in pq.read_schema(p.removeprefix("file://")).names
               for p in table.tree.live_data_paths(table.current_snapshot()))
    with pytest.raises(NotNative):
        plan(spark, TABLE, opts, planning="local").to_dataframe()
    with pytest.raises(NotNative):  # positions_frame (a Spark delete's first job): every file through the links
        plan(spark, TABLE, opts, planning="local").positions_frame()
    import icefloe.impl.spark.native_read as NR
    with monkeypatch.context() as m:  # one scan matched by path (_merge_by_rows): `_metadata.row_index` there
        m.setattr(NR, "MERGE_BRANCHES_MAX", 0)
        with pytest.raises(NotNative):
            plan(spark, TABLE, opts, planning="local").to_dataframe()
    df = read(spark, TABLE, opts)  # (Spark's Python data source: icefloe's scan per file)
    assert DV.ROW_INDEX_COLUMN not in df.columns and _ids(df) == want
    monkeypatch.setattr(DV, "holds_row_index_column", lambda paths, names: False)
    for internal in (True, False):  # the file's column read as the row index either way: wrong rows
        monkeypatch.setattr(DV, "internal_row_index", lambda spark, internal=internal: internal)
        assert _ids(plan(spark, TABLE, opts, planning="local").to_dataframe()) != want
    monkeypatch.setattr(NR, "MERGE_BRANCHES_MAX", 0)  # and by path: `_metadata.row_index` is that column too
    assert _ids(plan(spark, TABLE, opts, planning="local").to_dataframe()) != want


def test_a_read_whose_links_cannot_be_made_falls_back_to_the_data_source(spark, opts, monkeypatch):
    """Goal: where the merge-on-read's links cannot be made (linked_files.py: a file system
    without symbolic links, a directory not writable), the native plan says NotNative and
    `read()` falls back to the Python data source, exact, rather than fail or drop the
    deletes. Method: a v3 table with DVs, a fresh links root, os.symlink made to fail;
    the ids against icefloe's scan."""
    import icefloe.impl.spark.linked_files as LF
    table = _table(opts, 3, monkeypatch)
    require_committed(table.delete(f"id in ({', '.join(map(str, DELETED[:5]))})", mode="merge-on-read"))
    table = open_table(opts)
    want = sorted(table.scan().column("id").to_pylist())
    assert len(want) == FILES * ROWS_PER_FILE - 5
    fresh: dict = {}
    monkeypatch.setattr(LF, "_ROOTS", fresh)

    def refused(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(LF.os, "symlink", refused)
    with pytest.raises(NotNative):
        plan(spark, TABLE, opts, planning="local").to_dataframe()
    assert _ids(read(spark, TABLE, opts)) == want
    for root in fresh.values():  # (this test's root only)
        LF.remove(root)
