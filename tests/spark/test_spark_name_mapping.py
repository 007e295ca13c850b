"""Spark reads of tables holding Parquet files committed by add-files without field ids
(impl/spark/name_mapped.py, reader.py, native_read.py, maintenance.py): both read paths
resolve them through the table's name mapping exactly as icefloe's own scan does."""
from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.impl.format import name_mapping as NM
from icefloe.impl.format import types as T
from icefloe.impl.format.parquet import DataFileError, read_data_file
from icefloe.impl.outcomes import Committed
from icefloe.impl.spark import read
from icefloe.impl.spark.name_mapped import layout_of
from icefloe.impl.table import schema_evolution as SE
from icefloe.impl.table.add_files import AddFiles, describe_file
from spark_helpers import SCHEMA, TABLE, load, make_table, rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "impl" / "table"))
from delete_writers import equality_delete_file, position_delete_file  # noqa: E402

pytestmark = pytest.mark.xdist_group("spark")


def _plain(tmp_path: Path, name: str, **columns) -> str:
    """A Parquet file as pandas or DuckDB writes it (no field ids); its file:// location."""
    path = tmp_path / name
    pq.write_table(pa.table(columns), path)
    assert all(not (f.metadata or {}) for f in pq.read_schema(path))
    return f"file://{path}"


def _add_files(table, *locations) -> None:
    """What `icefloe add-files` does: describe each file, commit them as one append."""
    table.refresh()
    described = [describe_file(table.io.get(p), p, table.metadata) for p in locations]
    commit = table.begin(AddFiles([d for d, _ in described], any(m for _, m in described), table.metadata))
    commit.run()
    assert isinstance(table.adopt(commit), Committed)


def _rename(table, old: str, new: str) -> None:
    commit = table.begin(SE.rename_column_change(old, new))
    commit.run()
    assert isinstance(table.adopt(commit), Committed)


def _tuples(rows_: list[dict], names) -> list[tuple]:
    return sorted(tuple(r[n] for n in names) for r in rows_)


def _spark_rows(df, names) -> list[tuple]:
    return _tuples([r.asDict() for r in df.collect()], names)


def _scan_rows(table, names, **kwargs) -> list[tuple]:
    table.refresh()
    return _tuples(table.scan(**kwargs).to_pylist(), names)


def test_the_layout_is_the_one_icefloe_scan_reads_by(tmp_path):
    """Goal: name_mapped.layout_of resolves a file exactly as parquet.read_data_file does,
    and refuses what it refuses. Method: a file without ids with its columns out of order,
    an old name and a column the mapping lacks; a file with ids; a nested column; no
    mapping: compare layouts with the columns read_data_file returns, and the errors."""
    schema = T.schema_from_arrow(SCHEMA)
    mapping = {"id": 1, "record_id": 1, "category": 2, "cat": 2, "v": 3}
    plain = pa.table({"v": [0.5], "zzz": ["unread"], "cat": ["x"], "record_id": pa.array([7], pa.int64())})
    out = tmp_path / "p.parquet"
    pq.write_table(plain, out)
    layout = layout_of(pq.read_schema(out), mapping, str(out))
    assert layout == ((1, "record_id"), (2, "cat"), (3, "v"))
    got = read_data_file(out.read_bytes(), schema, str(out), name_mapping=mapping).to_pylist()
    assert got == [{f.name: plain.column(dict(layout)[f.field_id])[0].as_py() for f in schema.fields}] \
        == [{"id": 7, "cat": "x", "v": 0.5}]
    ids = pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})])
    assert layout_of(ids, mapping, "x") is None and layout_of(ids, None, "x") is None
    with pytest.raises(DataFileError, match="no name mapping"):
        layout_of(pq.read_schema(out), None, str(out))
    nested = pa.schema([pa.field("cat", pa.struct([pa.field("a", pa.int32())]))])
    with pytest.raises(DataFileError, match="nested"):
        layout_of(nested, mapping, "x")
    with pytest.raises(DataFileError, match="nested"):
        read_data_file(_bytes(pa.table({"cat": [{"a": 1}]})), schema, "x", name_mapping=mapping)


def _bytes(t: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(t, sink)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize("path", ["source", "native"])
def test_added_files_read_through_spark_equal_icefloe_scan_before_and_after_a_rename(spark, opts, tmp_path, path):
    """Goal: a table holding files added without field ids reads in Spark (the Python data
    source and Spark's own Parquet reader) as icefloe's scan reads it, also after
    `schema rename-column`. Method: an icefloe append with ids; add-files of two plain
    files (columns out of order; one with int32 ids, a widening, and no v); read in Spark,
    compare with table.scan, also with a filter and incrementally; rename cat to category
    and add a file that uses the new name (two layouts now); compare again."""
    table = make_table(opts, None)
    table.append(rows(range(0, 4)))
    first = table.refresh().current_snapshot().snapshot_id
    _add_files(table,
               _plain(tmp_path, "a.parquet", v=[10.5, None], cat=["x", "y"], id=pa.array([10, 11], pa.int64())),
               _plain(tmp_path, "b.parquet", cat=["x"], id=pa.array([20], pa.int32())))
    assert NM.of(table.refresh().metadata.properties) == {"id": 1, "cat": 2, "v": 3}
    names = ("id", "cat", "v")
    want = _scan_rows(table, names)
    assert len(want) == 7 and (20, "x", None) in want and (10, "x", 10.5) in want
    assert _spark_rows(load(spark, opts, path), names) == want
    if path == "native":
        assert _spark_rows(read(spark, TABLE, opts, row_filter="cat = 'x'"), names) == \
            _scan_rows(table, names, row_filter="cat = 'x'")
        assert _spark_rows(read(spark, TABLE, opts, start_snapshot_id=first), names) == \
            _tuples(table.incremental_append_scan(first).to_pylist(), names)
    else:
        filtered = load(spark, opts, path).filter("cat = 'y'")
        assert _spark_rows(filtered, names) == _scan_rows(table, names, row_filter="cat = 'y'") == [(11, "y", None)]

    _rename(table, "cat", "category")
    _add_files(table, _plain(tmp_path, "c.parquet", id=pa.array([30], pa.int64()), category=["z"]))
    table.refresh()
    assert NM.of(table.metadata.properties) == {"id": 1, "category": 2, "cat": 2, "v": 3}
    names = ("id", "category", "v")
    want = _scan_rows(table, names)
    assert len(want) == 8 and (30, "z", None) in want and (11, "y", None) in want
    df = load(spark, opts, path)
    assert df.columns == list(names) and _spark_rows(df, names) == want
    if path == "native":
        got = read(spark, TABLE, opts, row_filter="category in ('x', 'z')")
    else:
        got = load(spark, opts, path).filter("category in ('x', 'z')")
    assert _spark_rows(got, names) == _scan_rows(table, names, row_filter="category in ('x', 'z')")
    assert len(_spark_rows(got, names)) == 3


def test_merge_on_read_and_compaction_of_added_files_in_spark(spark, opts, tmp_path, monkeypatch):
    """Goal: position and equality deletes against files added without field ids are
    applied by every Spark read path as icefloe's scan applies them, and Spark's compaction
    rewrites such files. Method: add two plain files, a position delete file on one and an
    equality delete on a key of the other; native reads merged a scan per file and in one
    scan matched by path, and the Python data source, equal table.scan; compact in Spark;
    the rows are unchanged and every live file now carries field ids."""
    import icefloe.impl.spark.native_read as NR
    from icefloe.impl.spark.maintenance import compact
    table = make_table(opts, None)
    table.append(rows(range(0, 3)))
    a = _plain(tmp_path, "a.parquet", id=pa.array([10, 11, 12], pa.int64()), cat=["x", "y", "x"])
    b = _plain(tmp_path, "b.parquet", cat=["z", "z"], id=pa.array([20, 21], pa.int64()), v=[1.0, 2.0])
    _add_files(table, a, b)
    assert isinstance(table.add_delete_files([position_delete_file(table, [(a, 1)])], [a]), Committed)
    table.refresh()
    assert isinstance(table.add_delete_files([equality_delete_file(table, "id", [21, 2])]), Committed)
    names = ("id", "cat", "v")
    want = _scan_rows(table, names)
    assert [r[0] for r in want] == [0, 1, 10, 12, 20]
    for branches in (NR.MERGE_BRANCHES_MAX, 0):  # a scan per file, or one scan (_merge_by_rows)
        monkeypatch.setattr(NR, "MERGE_BRANCHES_MAX", branches)
        assert _spark_rows(read(spark, TABLE, opts), names) == want, branches
        assert _spark_rows(read(spark, TABLE, opts, planning="distributed"), names) == want, branches
    monkeypatch.undo()
    assert _spark_rows(load(spark, opts, "source"), names) == want
    assert _spark_rows(load(spark, opts, "source", planning="distributed"), names) == want

    result = compact(spark, TABLE, opts, files_min=2)
    assert isinstance(result.outcome, Committed)
    assert _scan_rows(table, names) == want
    paths = table.tree.live_data_paths(table.current_snapshot())
    assert a not in paths and b not in paths
    for p in paths:
        assert all((f.metadata or {}).get(b"PARQUET:field_id") for f in pq.read_schema(p.removeprefix("file://")))
    assert _spark_rows(read(spark, TABLE, opts), names) == want
