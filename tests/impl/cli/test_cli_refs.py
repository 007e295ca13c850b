"""Branches, tags, rollback, set-current and cherry-pick from the CLI; pyiceberg reads
every ref and snapshot they leave."""
from __future__ import annotations

import json

import pyarrow as pa


def _ids(table, **kw):
    return sorted(table.scan(**kw).to_arrow().column("id").to_pylist())


def test_branch_append_cherry_pick_tag_and_drop(cli):
    """Goal: write-audit-publish works from the command line. Method: create a branch,
    append to it (main unchanged), cherry-pick its snapshot onto main after main moved
    on (a new snapshot with source-snapshot-id) and onto a second branch still at the
    parent (a fast-forward); tag, scan by tag and branch; refusals: a taken name, a
    second pick, a tag dropped as a branch, an append to a tag. pyiceberg reads each
    ref's rows."""
    cli.write("a.parquet", id=pa.array([1, 2], pa.int64()))
    cli.write("b.parquet", id=pa.array([3], pa.int64()))
    cli.write("c.parquet", id=pa.array([4], pa.int64()))
    cli.ok("create", "db.t", "--schema-from", "a.parquet")
    base = cli.snapshot(cli.ok("append", "db.t", "a.parquet"))
    assert "branch audit -> snapshot" in cli.ok("branch", "create", "db.t", "audit")
    cli.ok("branch", "create", "db.t", "ff")
    staged = cli.snapshot(cli.ok("append", "db.t", "b.parquet", "--branch", "audit"))
    t = cli.pyiceberg()
    assert t.current_snapshot().snapshot_id == base and _ids(t) == [1, 2]
    assert t.refs()["audit"].snapshot_id == staged
    assert _ids(t, snapshot_id=staged) == [1, 2, 3]
    assert "RefExists" in cli.fails("branch", "create", "db.t", "audit")

    cli.ok("append", "db.t", "c.parquet")                       # main moves on
    picked = cli.snapshot(cli.ok("cherry-pick", "db.t", staged))
    t = cli.pyiceberg()
    assert t.current_snapshot().snapshot_id == picked != staged
    assert t.current_snapshot().summary["source-snapshot-id"] == str(staged)
    assert _ids(t) == [1, 2, 3, 4]
    assert "already on 'main'" in cli.fails("cherry-pick", "db.t", staged)
    out = cli.ok("cherry-pick", "db.t", staged, "--branch", "ff")
    assert "no snapshot: metadata change" in out and "fast-forwarded" in out
    assert cli.pyiceberg().refs()["ff"].snapshot_id == staged

    cli.ok("tag", "create", "db.t", "v1", "--snapshot-id", base)
    assert json.loads(cli.ok("scan", "db.t", "--tag", "v1", "--format", "json")) == [{"id": 1}, {"id": 2}]
    assert [r["id"] for r in json.loads(cli.ok("scan", "db.t", "--ref", "audit", "--format", "json"))] == [3, 1, 2]
    t = cli.pyiceberg()
    assert t.refs()["v1"].snapshot_ref_type.value == "tag" and t.refs()["v1"].snapshot_id == base
    assert "is a tag, not a branch" in cli.fails("branch", "drop", "db.t", "v1")
    assert "is a tag" in cli.fails("append", "db.t", "c.parquet", "--branch", "v1")
    assert "no branch 'nope'" in cli.fails("append", "db.t", "c.parquet", "--branch", "nope")
    cli.ok("tag", "drop", "db.t", "v1")
    cli.ok("branch", "drop", "db.t", "audit")
    assert sorted(cli.pyiceberg().refs()) == ["ff", "main"]
    assert "main cannot be dropped" in cli.fails("branch", "drop", "db.t", "main")


def test_cherry_pick_refuses_what_is_not_an_append(cli):
    """Goal: cherry-pick only where the model allows it. Method: a delete snapshot on a
    branch is refused in one line and nothing is committed."""
    cli.write("a.parquet", id=pa.array([1, 2], pa.int64()))
    cli.ok("create", "db.t", "--schema-from", "a.parquet")
    cli.ok("append", "db.t", "a.parquet")
    cli.ok("branch", "create", "db.t", "dev")
    deleted = cli.snapshot(cli.ok("delete", "db.t", "--filter", "id = 1", "--branch", "dev"))
    cli.ok("append", "db.t", "a.parquet")
    before = cli.pyiceberg().current_snapshot().snapshot_id
    assert "only append snapshots" in cli.fails("cherry-pick", "db.t", deleted)
    assert cli.pyiceberg().current_snapshot().snapshot_id == before


def test_rollback_is_undone_by_set_current(cli):
    """Goal: a rollback can be undone, and rollback says how when asked to go forward.
    Method: two appends, roll back to the first (output names no snapshot None), a
    rollback to the newer one is refused naming set-current, set-current restores it;
    pyiceberg's current snapshot follows each step."""
    cli.write("a.parquet", id=pa.array([1], pa.int64()))
    cli.ok("create", "db.t", "--schema-from", "a.parquet")
    first = cli.snapshot(cli.ok("append", "db.t", "a.parquet"))
    second = cli.snapshot(cli.ok("append", "db.t", "a.parquet"))
    out = cli.ok("rollback", "db.t", first)
    assert "None" not in out and "no snapshot: metadata change" in out and f"main -> snapshot {first}" in out
    assert cli.pyiceberg().current_snapshot().snapshot_id == first
    assert f"icefloe set-current db.t {second}" in cli.fails("rollback", "db.t", second)
    out = cli.ok("set-current", "db.t", second)
    assert "None" not in out and f"main -> snapshot {second}" in out
    t = cli.pyiceberg()
    assert t.current_snapshot().snapshot_id == second and _ids(t) == [1, 1]
    assert "not retained" in cli.fails("set-current", "db.t", 12345)
