"""Table and namespace commands of the CLI: list, describe, namespace, delete, overwrite,
drop [--purge]; each result read back by pyiceberg."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from pyiceberg.exceptions import NoSuchTableError


def _table(cli, partition: str | None = None):
    cli.write("rows.parquet", id=pa.array([1, 2, 3, 4], pa.int64()), cat=["a", "b", "a", "c"])
    cli.ok("create", "db.t", "--schema-from", "rows.parquet", *(["--partition-by", partition] if partition else []))
    cli.ok("append", "db.t", "rows.parquet")


def test_list_describe_and_namespaces(cli):
    """Goal: a user finds their tables and sees what one is. Method: create tables in two
    namespaces and an empty one; list, list NAMESPACE, describe (text and JSON), then
    namespace drop refuses a namespace with tables and removes an empty one; pyiceberg
    lists the same namespaces."""
    _table(cli, "bucket(4, id)")
    cli.ok("create", "other.u", "--schema-from", "rows.parquet")
    assert "created namespace empty" in cli.ok("namespace", "create", "empty")
    assert cli.ok("list").splitlines() == ["db.t", "empty.  (empty namespace)", "other.u"]
    assert cli.ok("list", "db").splitlines() == ["db.t"]
    assert cli.ok("namespace", "list").splitlines() == ["db", "empty", "other"]
    assert sorted(cli.pyiceberg("db.t").catalog.list_namespaces()) == [("db",), ("empty",), ("other",)]
    text = cli.ok("describe", "db.t")
    for expected in ("schema 0", "id", "long", "partition spec 0: id_bucket = bucket[4](id)",
                     "main             branch", "current snapshot", "total-records = 4"):
        assert expected in text, (expected, text)
    d = json.loads(cli.ok("describe", "db.t", "--json"))
    assert [f["name"] for f in d["schema"]["fields"]] == ["id", "cat"]
    assert d["current_snapshot"]["snapshot_id"] == cli.pyiceberg().current_snapshot().snapshot_id
    assert d["refs"]["main"]["type"] == "branch"
    assert "NamespaceNotEmpty" in cli.fails("namespace", "drop", "db")
    assert "NoSuchNamespace" in cli.fails("namespace", "drop", "nope")
    assert "NamespaceAlreadyExists" in cli.fails("namespace", "create", "empty")
    cli.ok("namespace", "drop", "empty")
    assert cli.ok("namespace", "list").splitlines() == ["db", "other"]


def test_delete_and_overwrite_by_filter_read_by_pyiceberg(cli):
    """Goal: delete --filter and overwrite FILE --filter replace exactly the matching rows.
    Method: on a partitioned table, delete one partition's rows and one row inside a
    file; overwrite one category with new rows; after each commit pyiceberg reads the
    expected rows and the snapshot the CLI printed is pyiceberg's current one."""
    _table(cli, "cat")
    out = cli.ok("delete", "db.t", "--filter", "cat = 'b' or id = 3")
    assert cli.pyiceberg().current_snapshot().snapshot_id == cli.snapshot(out)
    assert sorted(cli.pyiceberg().scan().to_arrow().column("id").to_pylist()) == [1, 4]
    cli.write("fix.parquet", id=pa.array([10, 11], pa.int64()), cat=["a", "a"])
    out = cli.ok("overwrite", "db.t", "fix.parquet", "--filter", "cat = 'a'")
    t = cli.pyiceberg()
    assert t.current_snapshot().snapshot_id == cli.snapshot(out)
    assert t.current_snapshot().summary.operation.value == "overwrite"
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [4, 10, 11]
    assert "nothing to do" in cli.ok("delete", "db.t", "--filter", "id > 100")
    assert "ExpressionError" in cli.fails("delete", "db.t", "--filter", "id >>> 1")
    cli.write("bad.parquet", id=pa.array(["x"]), cat=["a"])
    assert "column 'id'" in cli.fails("overwrite", "db.t", "bad.parquet")
    assert sorted(cli.pyiceberg().scan().to_arrow().column("id").to_pylist()) == [4, 10, 11]


def test_drop_keeps_files_and_purge_deletes_only_inside_the_table(cli, tmp_path):
    """Goal: drop removes the catalog entry; --purge deletes the table's files and nothing
    outside its location. Method: drop one table (files stay, pyiceberg no longer finds
    it); for another, plant a metadata-log entry naming a file outside the table, then
    drop --purge: every file under the table goes, the outside file survives and is
    reported as refused."""
    _table(cli)
    cli.ok("append", "db.t", "rows.parquet")
    kept = sorted(p for p in (tmp_path / "warehouse/db/t").rglob("*") if p.is_file())
    assert "its files are kept" in cli.ok("drop", "db.t")
    assert kept == sorted(p for p in (tmp_path / "warehouse/db/t").rglob("*") if p.is_file())
    with pytest.raises(NoSuchTableError):
        cli.pyiceberg("db.t")
    assert "NoSuchTable" in cli.fails("drop", "db.t")

    cli.ok("create", "db.u", "--schema-from", "rows.parquet")
    cli.ok("append", "db.u", "rows.parquet")
    outside = tmp_path / "outside.metadata.json"
    outside.write_text("{}")
    (current,) = sorted((tmp_path / "warehouse/db/u/metadata").glob("00001-*.metadata.json"))
    doc = json.loads(current.read_text())
    doc["metadata-log"].append({"timestamp-ms": 1, "metadata-file": f"file://{outside}"})
    current.write_text(json.dumps(doc))
    res = cli("drop", "db.u", "--purge")
    assert res.returncode == 0, res.stderr
    assert "refused 1 outside the table" in res.stdout and "purge incomplete" in res.stderr
    assert outside.exists()
    assert not (tmp_path / "warehouse/db/u").exists() or not any(
        p.is_file() for p in (tmp_path / "warehouse/db/u").rglob("*"))
    assert cli.ok("list", "db").splitlines() == ["no tables in namespace db"]


def test_purge_refuses_a_table_it_cannot_read_and_drops_nothing(cli, tmp_path):
    """Goal: a purge never leaves a table dropped with its files unknown. Method: delete a
    manifest list of the table, then drop --purge: refused in one line, the table is
    still listed and readable by its metadata."""
    _table(cli)
    (manifest_list,) = (tmp_path / "warehouse/db/t/metadata").glob("snap-*.avro")
    os.unlink(manifest_list)
    assert "PurgeRefused" in cli.fails("drop", "db.t", "--purge")
    assert cli.ok("list").splitlines() == ["db.t"]
