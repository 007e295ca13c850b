"""Partition spec evolution, sort orders and column nullability from the command line
(impl/table/layout_evolution.py), on SQLite, S3 (moto) and `icefloe serve` (the `where`
fixture), with files written under each spec read back and pruned by their own spec."""
from __future__ import annotations

import json

import pyarrow as pa


def _describe(cli, where) -> dict:
    return json.loads(cli.ok(*where, "describe", "db.t", "--json"))


def _ids(cli, where, *args) -> list[int]:
    return sorted(r["id"] for r in json.loads(cli.ok(*where, "scan", "db.t", "--format", "json", *args)))


def test_partition_add_rename_remove_keeps_old_files_readable(cli, where):
    """Goal: each spec change is a new default spec with fresh field ids, old files keep
    theirs and scans prune each file by its own spec. Method: an unpartitioned table with
    rows; add cat (spec 1), append; add bucket(4, id) --name shard, rename it, remove cat;
    append again; then the files list three specs, the partitions are named per spec, a
    filtered scan returns the right rows, and ids were never reused; bad names refused."""
    cli.write("r.parquet", id=pa.array([1, 2, 3], pa.int64()), cat=["a", "b", "a"])
    cli.ok(*where, "create", "db.t", "--schema-from", "r.parquet")
    cli.ok(*where, "append", "db.t", "r.parquet")
    cli.ok(*where, "partition", "add", "db.t", "cat")
    cli.write("r2.parquet", id=pa.array([4, 5], pa.int64()), cat=["a", "c"])
    cli.ok(*where, "append", "db.t", "r2.parquet")
    cli.ok(*where, "partition", "add", "db.t", "bucket(4, id)", "--name", "shard")
    cli.ok(*where, "partition", "rename", "db.t", "shard", "id_shard")
    out = cli.ok(*where, "partition", "remove", "db.t", "cat")
    assert "default partition spec 4: id_shard = bucket[4](id)" in out
    cli.write("r3.parquet", id=pa.array([6], pa.int64()), cat=["a"])
    cli.ok(*where, "append", "db.t", "r3.parquet")
    spec = _describe(cli, where)["partition_spec"]
    assert spec["spec_id"] == 4 and [(f["name"], f["field_id"]) for f in spec["fields"]] == [("id_shard", 1001)]
    files = json.loads(cli.ok(*where, "inspect", "db.t", "files", "--format", "json"))
    assert sorted({f["spec_id"] for f in files}) == [0, 1, 4]
    assert sorted(f["partition"] for f in files if f["spec_id"] == 1) == ["cat=a", "cat=c"]
    assert _ids(cli, where, "--filter", "cat = 'a'") == [1, 3, 4, 6]
    assert _ids(cli, where) == [1, 2, 3, 4, 5, 6]
    assert "no partition field 'cat'" in cli.fails(*where, "partition", "remove", "db.t", "cat")
    assert "is taken" in cli.fails(*where, "partition", "add", "db.t", "cat", "--name", "id_shard")
    assert "already has" in cli.fails(*where, "partition", "add", "db.t", "bucket(4, id)", "--name", "other")


def test_sort_order_set_and_unset(cli, where):
    """Goal: a sort order is stored as the spec writes it and reused when set again.
    Method: set "id desc, cat nulls-last": describe shows desc nulls-last for id (the
    default for desc) and asc nulls-last for cat; unset: unsorted (order 0); set the same
    order again: its id (1) comes back; a bad order is refused, nothing committed."""
    cli.write("r.parquet", id=pa.array([1], pa.int64()), cat=["a"])
    cli.ok(*where, "create", "db.t", "--schema-from", "r.parquet")
    cli.ok(*where, "sort-order", "set", "db.t", "id desc, cat nulls-last")
    assert _describe(cli, where)["sort_order"] == "identity(id) desc nulls-last, identity(cat) asc nulls-last"
    assert "default sort order 0" in cli.ok(*where, "sort-order", "unset", "db.t")
    assert _describe(cli, where)["sort_order"] == "unsorted"
    assert "default sort order 1" in cli.ok(*where, "sort-order", "set", "db.t", "id desc, cat nulls-last")
    assert "nothing to do" in cli.ok(*where, "sort-order", "set", "db.t", "id desc, cat nulls-last")
    cli.fails(*where, "sort-order", "set", "db.t", "nosuch desc")


def test_required_and_optional_columns(cli, where):
    """Goal: a column is made required only when no live file may hold a null in it, and
    optional always. Method: cat holds a null: make-required exits 2 naming the file; id
    holds none: required (describe says so), then an append with a null id is refused;
    make-optional: the append goes through."""
    cli.write("r.parquet", id=pa.array([1, 2], pa.int64()), cat=pa.array(["a", None]))
    cli.ok(*where, "create", "db.t", "--schema-from", "r.parquet")
    cli.ok(*where, "append", "db.t", "r.parquet")
    assert "holds 1 null(s)" in cli.fails(*where, "schema", "make-required", "db.t", "cat")
    cli.ok(*where, "schema", "make-required", "db.t", "id")
    fields = {f["name"]: f["required"] for f in _describe(cli, where)["schema"]["fields"]}
    assert fields == {"id": True, "cat": False}
    cli.write("nulls.parquet", id=pa.array([None], pa.int64()), cat=["z"])
    assert "required" in cli.fails(*where, "append", "db.t", "nulls.parquet")
    assert "already required" in cli.fails(*where, "schema", "make-required", "db.t", "id")
    cli.ok(*where, "schema", "make-optional", "db.t", "id")
    cli.ok(*where, "append", "db.t", "nulls.parquet")
    assert len(json.loads(cli.ok(*where, "scan", "db.t", "--format", "json", "--filter", "id is null"))) == 1
