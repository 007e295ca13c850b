"""`overwrite FILE --filter F` refuses rows of FILE that F does not match (exit 2, nothing
written), unless --allow-rows-outside-filter; so a rerun of an overwrite is idempotent."""
from __future__ import annotations

import json

import pyarrow as pa


def _rows(cli) -> list[tuple]:
    return sorted((r["id"], r["cat"]) for r in json.loads(cli.ok("scan", "db.t", "--format", "json")))


def _snapshots(cli) -> int:
    return len(json.loads(cli.ok("history", "db.t", "--json")))


def _table(cli):
    cli.write("base.parquet", id=pa.array([1, 2, 3], pa.int64()), cat=["a", "b", None])
    cli.ok("create", "db.t", "--schema-from", "base.parquet")
    cli.ok("append", "db.t", "base.parquet")


def test_rows_outside_the_filter_are_refused_and_nothing_is_written(cli):
    """Goal: an overwrite whose file holds a row its filter does not match (false, or null
    on the filter's column) is refused as input. Method: two files, one with cat 'b', one
    with a null cat, under --filter "cat = 'a'"; each exits 2 with one line naming the
    count, the first such row and the flag; the table keeps its rows and snapshots."""
    _table(cli)
    before = _snapshots(cli)
    cli.write("wrong.parquet", id=pa.array([10, 11], pa.int64()), cat=["a", "b"])
    cli.write("null.parquet", id=pa.array([12], pa.int64()), cat=pa.array([None], pa.string()))
    err = cli.fails("overwrite", "db.t", "wrong.parquet", "--filter", "cat = 'a'")
    assert "RowsOutsideFilter" in err and "1 of 2 row(s)" in err and "'id': 11" in err
    assert "--allow-rows-outside-filter" in err
    err = cli.fails("overwrite", "db.t", "null.parquet", "--filter", "cat = 'a'")
    assert "1 of 1 row(s)" in err
    assert _snapshots(cli) == before and _rows(cli) == [(1, "a"), (2, "b"), (3, None)]


def test_matching_rows_replace_and_a_rerun_is_idempotent(cli):
    """Goal: rows that all match are written, and the same overwrite run twice leaves the
    same rows. Method: overwrite cat 'a' with two 'a' rows, twice; compare the scans."""
    _table(cli)
    cli.write("a.parquet", id=pa.array([10, 11], pa.int64()), cat=["a", "a"])
    for _ in range(2):
        cli.ok("overwrite", "db.t", "a.parquet", "--filter", "cat = 'a'")
        assert _rows(cli) == [(2, "b"), (3, None), (10, "a"), (11, "a")]


def test_the_flag_writes_rows_outside_the_filter(cli):
    """Goal: --allow-rows-outside-filter is the explicit way to write such rows. Method:
    the refused file with the flag: committed; its 'b' row sits beside the old 'b' row."""
    _table(cli)
    cli.write("wrong.parquet", id=pa.array([10, 11], pa.int64()), cat=["a", "b"])
    cli.ok("overwrite", "db.t", "wrong.parquet", "--filter", "cat = 'a'", "--allow-rows-outside-filter")
    assert _rows(cli) == [(2, "b"), (3, None), (10, "a"), (11, "b")]


def test_without_a_filter_everything_is_replaced(cli):
    """Goal: the check is the filter's; a whole-table overwrite has none. Method: overwrite
    with no --filter: the file's rows are the table's."""
    _table(cli)
    cli.write("all.parquet", id=pa.array([7], pa.int64()), cat=["z"])
    cli.ok("overwrite", "db.t", "all.parquet")
    assert _rows(cli) == [(7, "z")]
