"""The commands a pyiceberg or Spark SQL user reaches for next (issue 33 item 4): inspect
(metadata tables), scan --from-snapshot/--to-snapshot, properties set/unset and register,
each on a local SQLite catalog, on S3 (moto's server) and through `icefloe serve` (REST):
the `where` fixture (conftest.py)."""
from __future__ import annotations

import json

import pyarrow as pa


def _json(cli, *args) -> list[dict]:
    return json.loads(cli.ok(*args, "--format", "json"))


def _three_appends(cli, where) -> list[int]:
    """db.t partitioned by cat with three appends; their snapshot ids."""
    ids = []
    cli.write("r0.parquet", id=pa.array([1, 2], pa.int64()), cat=["a", "b"])
    cli.ok(*where, "create", "db.t", "--schema-from", "r0.parquet", "--partition-by", "cat")
    for i in range(3):
        cli.write(f"r{i}.parquet", id=pa.array([10 * i + 1, 10 * i + 2], pa.int64()), cat=["a", "b"])
        ids.append(cli.snapshot(cli.ok(*where, "append", "db.t", f"r{i}.parquet")))
    return ids


def test_inspect_metadata_tables(cli, where):
    """Goal: each metadata table says what the metadata holds, in scan's formats. Method:
    three appends to a table partitioned by cat, then a delete of cat 'b': snapshots and
    history list 4 snapshots, refs main; files and partitions hold two partitions with
    the right counts; entries of the delete snapshot show the deleted files; manifests
    count them; --snapshot-id reads an older state; csv has scan's header form."""
    ids = _three_appends(cli, where)
    delete = cli.snapshot(cli.ok(*where, "delete", "db.t", "--filter", "cat = 'b'"))
    snaps = _json(cli, *where, "inspect", "db.t", "snapshots")
    assert [s["snapshot_id"] for s in snaps] == [*ids, delete]
    assert [s["operation"] for s in snaps] == ["append"] * 3 + ["delete"]
    assert json.loads(snaps[0]["summary"])["added-records"] == "2"
    assert [h["snapshot_id"] for h in _json(cli, *where, "inspect", "db.t", "history")] == [*ids, delete]
    assert [(r["name"], r["snapshot_id"]) for r in _json(cli, *where, "inspect", "db.t", "refs")] == [("main", delete)]
    files = _json(cli, *where, "inspect", "db.t", "files")
    assert sorted((f["partition"], f["record_count"]) for f in files) == [("cat=a", 1)] * 3
    parts = _json(cli, *where, "inspect", "db.t", "partitions")
    assert [(p["partition"], p["record_count"], p["file_count"]) for p in parts] == [("cat=a", 3, 3)]
    old_parts = _json(cli, *where, "inspect", "db.t", "partitions", "--snapshot-id", str(ids[2]))
    assert [(p["partition"], p["record_count"], p["last_updated_snapshot_id"]) for p in old_parts] == \
        [("cat=a", 3, ids[2]), ("cat=b", 3, ids[2])]
    entries = _json(cli, *where, "inspect", "db.t", "entries")
    assert sorted(e["status"] for e in entries if e["snapshot_id"] == delete) == ["deleted"] * 3
    manifests = _json(cli, *where, "inspect", "db.t", "manifests")
    assert sum(m["deleted_files_count"] or 0 for m in manifests) == 3
    csv_out = cli.ok(*where, "inspect", "db.t", "refs", "--format", "csv")
    assert csv_out.splitlines()[0].startswith('"name","type","snapshot_id"')
    assert "--snapshot-id" in cli.fails(*where, "inspect", "db.t", "snapshots", "--snapshot-id", str(ids[0]))


def test_scan_between_snapshots_reads_appended_rows(cli, where):
    """Goal: `scan --from-snapshot A --to-snapshot B` returns the rows appended after A up
    to B, and refuses a range holding a delete or a range off one line of ancestry.
    Method: three appends; (first, last] is the last two files' rows, with --filter and
    --columns; without --to-snapshot it runs to the current snapshot; after a delete, a
    range across it exits 2 naming the snapshot; a reversed range exits 2."""
    ids = _three_appends(cli, where)
    rows = _json(cli, *where, "scan", "db.t", "--from-snapshot", str(ids[0]), "--to-snapshot", str(ids[2]))
    assert sorted(r["id"] for r in rows) == [11, 12, 21, 22]
    rows = _json(cli, *where, "scan", "db.t", "--from-snapshot", str(ids[1]), "--filter", "cat = 'a'",
                 "--columns", "id")
    assert rows == [{"id": 21}]
    delete = cli.snapshot(cli.ok(*where, "delete", "db.t", "--filter", "id = 1"))
    err = cli.fails(*where, "scan", "db.t", "--from-snapshot", str(ids[0]))
    assert str(delete) in err and "not an append" in err
    err = cli.fails(*where, "scan", "db.t", "--from-snapshot", str(ids[2]), "--to-snapshot", str(ids[0]))
    assert "not an ancestor" in err
    assert "one or the other" in cli.fails(*where, "scan", "db.t", "--from-snapshot", str(ids[0]),
                                           "--snapshot-id", str(ids[1]))


def test_properties_set_unset(cli, where):
    """Goal: properties change in a metadata-only commit; reserved keys and unknown keys
    are refused. Method: set two, unset one, describe --json shows the rest; format-version
    is refused (exit 2); unsetting a key not set is refused unless --if-exists."""
    _three_appends(cli, where)
    before = len(_json(cli, *where, "inspect", "db.t", "snapshots"))
    assert "metadata change" in cli.ok(*where, "properties", "set", "db.t", "owner=data", "commit.retry.num-retries=8")
    cli.ok(*where, "properties", "unset", "db.t", "owner")
    props = json.loads(cli.ok(*where, "describe", "db.t", "--json"))["properties"]
    assert props.get("commit.retry.num-retries") == "8" and "owner" not in props
    assert "format-version" in cli.fails(*where, "properties", "set", "db.t", "format-version=3")
    assert "no property 'owner'" in cli.fails(*where, "properties", "unset", "db.t", "owner")
    assert "nothing to do" in cli.ok(*where, "properties", "unset", "db.t", "owner", "--if-exists")
    assert len(_json(cli, *where, "inspect", "db.t", "snapshots")) == before


def test_register_a_dropped_table_and_refuse_a_twin(cli, where):
    """Goal: register points the catalog at an existing metadata file, and refuses a
    second name for a live table. Method: register db.t's current metadata file as db.u
    while db.t is live (exit 2); drop db.t (files kept), register it as db.u: the scan
    holds db.t's rows and history; a file that is not table metadata is refused."""
    _three_appends(cli, where)
    location = json.loads(cli.ok(*where, "describe", "db.t", "--json"))["metadata_location"]
    rows = _json(cli, *where, "scan", "db.t")
    cli.fails(*where, "register", "db.u", location)
    cli.ok(*where, "drop", "db.t")
    assert "registered db.u" in cli.ok(*where, "register", "db.u", location)
    assert _json(cli, *where, "scan", "db.u") == rows
    assert len(_json(cli, *where, "inspect", "db.u", "snapshots")) == 3
    (cli.path / "not-metadata.metadata.json").write_text("{}")
    cli.fails(*where, "register", "db.v", str(cli.path / "not-metadata.metadata.json"))


def test_rename_keeps_files_history_and_refuses_taken_names(cli, where):
    """Goal: rename changes the name only, atomically where the catalog can. Method: three
    appends, rename db.t to db.u (SQL and REST): db.u scans the same rows with the same
    history and location, db.t is gone; renaming onto a taken name is refused (exit 2);
    the S3 pointer catalog refuses rename as unsupported and keeps db.t."""
    _three_appends(cli, where)
    rows = _json(cli, *where, "scan", "db.t")
    before = json.loads(cli.ok(*where, "describe", "db.t", "--json"))
    if where and where[1].startswith("s3://"):
        assert "not supported" in cli.fails(*where, "rename", "db.t", "db.u")
        assert _json(cli, *where, "scan", "db.t") == rows
        return
    cli.ok(*where, "rename", "db.t", "other.u")
    after = json.loads(cli.ok(*where, "describe", "other.u", "--json"))
    assert _json(cli, *where, "scan", "other.u") == rows
    assert (after["location"], after["snapshots"]) == (before["location"], before["snapshots"])
    assert "NoSuchTable" in cli.fails(*where, "scan", "db.t")
    cli.write("x.parquet", id=pa.array([1], pa.int64()), cat=["a"])
    cli.ok(*where, "create", "db.x", "--schema-from", "x.parquet")
    assert "TableAlreadyExists" in cli.fails(*where, "rename", "db.x", "other.u")


def test_namespaces_and_list_on_every_catalog(cli, where):
    """Goal: list and namespace create|list|drop behave alike on every catalog, the REST
    one included (nested namespaces listed level by level). Method: tables db.t and
    db.sub.u, an empty namespace x; list and namespace list; drop x; dropping db, which
    holds tables, is refused (exit 2)."""
    cli.write("r.parquet", id=pa.array([1], pa.int64()))
    cli.ok(*where, "create", "db.t", "--schema-from", "r.parquet")
    cli.ok(*where, "create", "db.sub.u", "--schema-from", "r.parquet")
    cli.ok(*where, "namespace", "create", "x")
    assert cli.ok(*where, "list").splitlines() == ["db.t", "db.sub.u", "x.  (empty namespace)"]
    assert cli.ok(*where, "namespace", "list").splitlines() == ["db", "db.sub", "x"]
    cli.ok(*where, "namespace", "drop", "x")
    assert "NamespaceNotEmpty" in cli.fails(*where, "namespace", "drop", "db")
    assert cli.ok(*where, "namespace", "list").splitlines() == ["db", "db.sub"]


def test_inspect_columns_match_their_rows_and_an_empty_table_keeps_its_header(cli):
    """Goal: each metadata table has one column list, shown even with no rows. Method: on a
    table with no snapshot, every kind in csv is its header alone (files etc. of no
    snapshot are empty); after an append, each kind's json rows have exactly those keys."""
    from icefloe.impl.cli.metadata_tables import COLUMNS
    cli.write("r.parquet", id=pa.array([1], pa.int64()))
    cli.ok("create", "db.t", "--schema-from", "r.parquet")
    for kind, columns in COLUMNS.items():
        out = cli.ok("inspect", "db.t", kind, "--format", "csv")
        assert out.splitlines() == [",".join(f'"{c}"' for c in columns)], (kind, out)
    cli.ok("append", "db.t", "r.parquet")
    for kind, columns in COLUMNS.items():
        rows = json.loads(cli.ok("inspect", "db.t", kind, "--format", "json"))
        assert rows and all(tuple(r) == columns for r in rows), (kind, rows)
