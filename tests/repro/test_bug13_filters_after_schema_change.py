"""Regression tests for ../shared/repro bug13: a --filter binds to the table's current
schema and resolves in each data file by field id, whatever was renamed, added or dropped
since the file was written, on every command that takes --filter (scan, delete, overwrite)."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.impl.cli import EXIT_OK, EXIT_USAGE, main as cli_main


class Run:
    def __init__(self, tmp_path: Path, capsys):
        self.tmp_path, self.capsys = tmp_path, capsys

    def __call__(self, *args) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = cli_main(["--catalog", f"sqlite:///{self.tmp_path}/icefloe.db",
                         "--warehouse", str(self.tmp_path / "warehouse"), *map(str, args)])
        out, err = self.capsys.readouterr()
        return code, out, err

    def ok(self, *args) -> str:
        code, out, err = self(*args)
        assert code == EXIT_OK, (args, out, err)
        return out

    def rows(self, *filter_args) -> list[dict]:
        return list(csv.DictReader(io.StringIO(self.ok("scan", "db.t", "--format", "csv", *filter_args))))

    def write(self, name: str, **columns) -> Path:
        path = self.tmp_path / name
        pq.write_table(pa.table(columns), path)
        return path


@pytest.fixture
def run(tmp_path, capsys) -> Run:
    """db.t (id long, cat string) with one file of 6 rows, written before any schema change."""
    r = Run(tmp_path, capsys)
    first = r.write("first.parquet", id=pa.array(range(6), pa.int64()), cat=pa.array(list("aabbcc")))
    r.ok("create", "db.t", "--schema-from", first)
    r.ok("append", "db.t", first)
    return r


def test_rename_then_scan_delete_overwrite_by_the_new_name(run):
    """Goal: after rename-column, the new name filters the file written before the rename,
    with no data commit in between. Method: rename cat to category; scan, delete and
    overwrite by `category`; the old name is refused (exit 2) since it names no column."""
    run.ok("schema", "rename-column", "db.t", "cat", "category")
    assert [r["id"] for r in run.rows("--filter", "category = 'b'")] == ["2", "3"]
    code, _, err = run("scan", "db.t", "--filter", "cat = 'b'")
    assert code == EXIT_USAGE and "no column 'cat'" in err
    run.ok("delete", "db.t", "--filter", "category = 'a' and id = 0")   # a partial file: survivors rewritten
    assert sorted(r["id"] for r in run.rows()) == ["1", "2", "3", "4", "5"]
    new = run.write("new.parquet", id=pa.array([40], pa.int64()), category=pa.array(["c"]))
    run.ok("overwrite", "db.t", new, "--filter", "category = 'c'")
    rows = run.rows()
    assert sorted((r["id"], r["category"]) for r in rows) == [("1", "a"), ("2", "b"), ("3", "b"), ("40", "c")]


def test_added_column_filters_old_files_as_null(run):
    """Goal: a column added after a file was written filters that file as null. Method:
    add-column country; `country is null` matches every old row, `country = 'x'` none
    (scan and delete), then a new file with country set is found by its value."""
    run.ok("schema", "add-column", "db.t", "country", "string")
    assert len(run.rows("--filter", "country is null")) == 6
    assert run.rows("--filter", "country = 'x'") == []
    assert "nothing to do" in run.ok("delete", "db.t", "--filter", "country = 'x'")
    more = run.write("more.parquet", id=pa.array([7], pa.int64()), cat=pa.array(["z"]), country=pa.array(["x"]))
    run.ok("append", "db.t", more)
    assert [r["id"] for r in run.rows("--filter", "country = 'x'")] == ["7"]
    run.ok("delete", "db.t", "--filter", "country is null and cat = 'a'")
    assert sorted(r["id"] for r in run.rows()) == ["2", "3", "4", "5", "7"]


def test_dropped_column_is_refused_and_a_readded_name_is_a_new_column(run):
    """Goal: a filter on a dropped column is refused (it names no column of the current
    schema), and a column re-added under the same name is a new field id that old files
    do not hold. Method: drop cat, filter by cat (exit 2 on scan, delete, overwrite); add
    cat again: `cat = 'a'` matches nothing of the old file, `cat is null` all of it."""
    run.ok("schema", "drop-column", "db.t", "cat")
    new = run.write("ids.parquet", id=pa.array([9], pa.int64()))
    for argv in (("scan", "db.t"), ("delete", "db.t"), ("overwrite", "db.t", new)):
        code, _, err = run(*argv, "--filter", "cat = 'a'")
        assert code == EXIT_USAGE and "no column 'cat'" in err, (argv, err)
    run.ok("schema", "add-column", "db.t", "cat", "string")
    assert run.rows("--filter", "cat = 'a'") == []
    assert len(run.rows("--filter", "cat is null")) == 6


def test_time_travel_filters_by_the_snapshot_schema(run):
    """Goal: a scan of an older snapshot reads, and filters, with that snapshot's schema
    (as it prints it). Method: rename after the first append; `--snapshot-id FIRST
    --filter "cat = 'a'"` finds the two rows under the old name."""
    first = int(run.ok("history", "db.t", "--json").split('"snapshot_id": ')[1].split(",")[0])
    run.ok("schema", "rename-column", "db.t", "cat", "category")
    rows = run.rows("--snapshot-id", first, "--filter", "cat = 'a'")
    assert [r["id"] for r in rows] == ["0", "1"] and "cat" in rows[0]
