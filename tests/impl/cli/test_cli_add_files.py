"""`icefloe add-files`: existing Parquet files without field ids committed by name mapping
(pyiceberg's add_files), on SQLite, S3 (moto) and `icefloe serve` (the `where` fixture);
files that do not fit are refused with nothing committed; pyiceberg reads the result."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq


def _plain(cli, name: str, **columns) -> str:
    """A Parquet file as pandas or DuckDB writes it: no Iceberg field ids."""
    pq.write_table(pa.table(columns), cli.path / name)
    assert all(not (f.metadata or {}) for f in pq.read_schema(cli.path / name))
    return name


def _scan(cli, where, *args) -> list[dict]:
    return json.loads(cli.ok(*where, "scan", "db.t", "--format", "json", *args))


def _snapshots(cli, where) -> int:
    return len(json.loads(cli.ok(*where, "inspect", "db.t", "snapshots", "--format", "json")))


def test_files_without_field_ids_are_added_by_name_and_survive_a_rename(cli, where):
    """Goal: files with no field ids become one append, read by name through the name
    mapping the commit sets, and keep reading after a rename, a delete and a compaction.
    Method: a table partitioned by cat with one append; add two plain files (one with an
    int column where the table has long: a widening); scan; rename cat, filter on the new
    name; delete a row of an added file (copy-on-write) and compact; the rows are right."""
    cli.write("base.parquet", id=pa.array([1, 2], pa.int64()), cat=["a", "a"])
    cli.ok(*where, "create", "db.t", "--schema-from", "base.parquet", "--partition-by", "cat")
    cli.ok(*where, "append", "db.t", "base.parquet")
    a = _plain(cli, "a.parquet", id=pa.array([3, 4], pa.int64()), cat=["a", "a"])
    b = _plain(cli, "b.parquet", id=pa.array([7], pa.int32()), cat=["b"])
    out = cli.ok(*where, "add-files", "db.t", a, b)
    assert "2 existing file(s), 3 row(s) added" in out and "name mapping set" in out
    props = json.loads(cli.ok(*where, "describe", "db.t", "--json"))["properties"]
    assert {e["field-id"]: e["names"] for e in json.loads(props["schema.name-mapping.default"])} == \
        {1: ["id"], 2: ["cat"]}
    assert sorted(r["id"] for r in _scan(cli, where)) == [1, 2, 3, 4, 7]
    files = json.loads(cli.ok(*where, "inspect", "db.t", "files", "--format", "json"))
    assert sorted(f["partition"] for f in files) == ["cat=a", "cat=a", "cat=b"]
    assert {f["file_path"].rsplit("/", 1)[-1] for f in files} >= {"a.parquet", "b.parquet"}
    cli.ok(*where, "schema", "rename-column", "db.t", "cat", "category")
    assert [r["id"] for r in _scan(cli, where, "--filter", "category = 'b'")] == [7]
    cli.ok(*where, "delete", "db.t", "--filter", "id = 3")
    cli.ok(*where, "compact", "db.t")
    assert sorted((r["id"], r["category"]) for r in _scan(cli, where)) == [(1, "a"), (2, "a"), (4, "a"), (7, "b")]


def test_files_that_do_not_fit_are_refused_and_nothing_is_committed(cli, where):
    """Goal: add-files refuses, naming the file and why, anything the table cannot hold as
    it is, and commits nothing when one file of several does not fit. Method: a column the
    table lacks, strings where the table has long, rows of two partitions, a file already
    added, a file that is not Parquet; each exits 2; the snapshot count is unchanged."""
    cli.write("base.parquet", id=pa.array([1], pa.int64()), cat=["a"])
    cli.ok(*where, "create", "db.t", "--schema-from", "base.parquet", "--partition-by", "cat")
    cli.ok(*where, "append", "db.t", "base.parquet")
    good = _plain(cli, "good.parquet", id=pa.array([2], pa.int64()), cat=["a"])
    cases = {
        "not a column of the table": _plain(cli, "extra.parquet", id=pa.array([3], pa.int64()), zzz=["x"]),
        "column 'id'": _plain(cli, "strings.parquet", id=["3"], cat=["a"]),
        "2 partitions": _plain(cli, "mixed.parquet", id=pa.array([4, 5], pa.int64()), cat=["a", "b"]),
    }
    (cli.path / "junk.parquet").write_bytes(b"not parquet at all")
    cases["not a readable Parquet file"] = "junk.parquet"
    before = _snapshots(cli, where)
    for words, name in cases.items():
        err = cli.fails(*where, "add-files", "db.t", good, name)
        assert words in err and name in err and "nothing was committed" in err, (words, err)
    assert _snapshots(cli, where) == before
    cli.ok(*where, "add-files", "db.t", good)
    assert "already a data file" in cli.fails(*where, "add-files", "db.t", good)
    assert sorted(r["id"] for r in _scan(cli, where)) == [1, 2]


def test_pyiceberg_reads_added_files_through_the_name_mapping(cli):
    """Goal: the name mapping icefloe writes is the spec's, so another reader resolves the
    added files too. Method: add a plain file to a local table; pyiceberg 0.12 scans it."""
    cli.write("base.parquet", id=pa.array([1], pa.int64()), cat=["a"])
    cli.ok("create", "db.t", "--schema-from", "base.parquet")
    cli.ok("append", "db.t", "base.parquet")
    cli.ok("add-files", "db.t", _plain(cli, "p.parquet", id=pa.array([2, 3], pa.int64()), cat=["b", "c"]))
    rows = cli.pyiceberg().scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["cat"]) for r in rows) == [(1, "a"), (2, "b"), (3, "c")]


def test_merge_on_read_delete_of_added_rows_on_v3(cli):
    """Goal: a merge-on-read delete (deletion vector, format v3) finds its rows in a file
    added without field ids, through the name mapping. Method: a v3 table, a plain file
    added, `delete --mode merge-on-read` of one of its rows; the scan lacks it and the
    file is still the table's (a DV, no rewrite)."""
    cli.write("base.parquet", id=pa.array([1], pa.int64()), cat=["a"])
    cli.ok("create", "db.t", "--schema-from", "base.parquet", "--format-version", "3")
    cli.ok("add-files", "db.t", _plain(cli, "p.parquet", id=pa.array([2, 3], pa.int64()), cat=["b", "c"]))
    cli.ok("delete", "db.t", "--filter", "id = 2", "--mode", "merge-on-read")
    assert [r["id"] for r in _scan(cli, [])] == [3]
    files = json.loads(cli.ok("inspect", "db.t", "files", "--format", "json"))
    assert any(f["file_path"].endswith("/p.parquet") and f["content"] == "data" for f in files)
