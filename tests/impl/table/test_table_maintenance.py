"""Expiry and orphan removal (spec/PROTOCOL.md 11 "Expiry", 12 "Orphan removal"): files are
deleted only when no retained snapshot of any ref reaches them, only after the expiry's own
acknowledged swap, never outside the table location, and orphans only past the age threshold."""
from __future__ import annotations

from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.format.parquet import write_data_file
from icefloe.impl.io.memory import MemoryStore
from icefloe.impl.outcomes import Committed
from icefloe.impl.table import operations as ops
from icefloe.impl.table import producer as P
from icefloe.impl.table.table import Table

from table_helpers import SCHEMA, Stack, ids_of, rows

FAR_FUTURE_MS = 10 ** 15


def locations(stack, table) -> set:
    return {i.location for i in stack.io.list(table.location + "/")}


def reach_all(table) -> set:
    out = set()
    for s in table.metadata.snapshots:
        out |= table.tree.reach(s)
    return out


def test_expire_deletes_only_what_no_retained_snapshot_reaches(stack):
    """After overwrites, expiring all but the head deletes exactly the unreachable data files,
    manifests and lists; the head reads the same and every metadata file stays."""
    table = stack.create()
    table.append(rows([1]))
    table.append(rows([2]))
    table.overwrite(rows([3]), "id = 1")
    before = locations(stack, table)
    live_rows = ids_of(table.scan())
    outcome, deleted = table.expire_snapshots(older_than_ms=FAR_FUTURE_MS, retain_last=1)
    assert isinstance(outcome, Committed) and len(table.metadata.snapshots) == 1
    assert deleted and not (set(deleted) & reach_all(table))
    assert not any(d.endswith(".metadata.json") for d in deleted)
    assert locations(stack, table) == (before - set(deleted)) | {table.metadata_location}
    assert ids_of(table.scan()) == live_rows == [2, 3]


def test_expire_keeps_files_live_again_after_rollback(mem):
    """14.6 / apache/iceberg #17304: a file removed by an expired snapshot but live in the
    retained head (after a rollback) is not deleted."""
    table = mem.create()
    s1 = table.append(rows([1])).snapshot_id
    table.delete("id = 1")
    table.set_current_snapshot(s1)
    outcome, deleted = table.expire_snapshots(older_than_ms=FAR_FUTURE_MS, retain_last=1)
    assert isinstance(outcome, Committed)
    assert [s.snapshot_id for s in table.metadata.snapshots] == [s1]
    assert ids_of(table.scan()) == [1]
    assert not (set(deleted) & reach_all(table))


def test_expire_respects_every_ref(mem):
    """apache/iceberg #13568: files reachable only from a branch or a tag survive expiry of main."""
    table = mem.create()
    s1 = table.append(rows([1])).snapshot_id
    table.create_tag("keep", s1)
    s2 = table.append(rows([2])).snapshot_id
    table.create_branch("side", s2)
    table.append(rows([9]), branch="side")
    table.delete("id = 1 or id = 2")
    table.append(rows([4]))
    outcome, deleted = table.expire_snapshots(older_than_ms=FAR_FUTURE_MS, retain_last=1)
    assert isinstance(outcome, Committed)
    assert ids_of(table.scan(ref="keep")) == [1]
    assert ids_of(table.scan(ref="side")) == [1, 2, 9]
    assert ids_of(table.scan()) == [4]
    assert not (set(deleted) & reach_all(table))


def test_expire_never_deletes_outside_the_table_location(mem):
    """11.3: a file the table references under another prefix is not the table's to delete."""
    table = mem.create()
    outside = "memory://elsewhere/imported.parquet"
    data, data_file = write_data_file(rows([7]), SCHEMA, outside)
    mem.io.put_if_absent(outside, data)
    assert isinstance(table._run(P.RowDelta([], [data_file])), Committed)
    table.append(rows([8]))
    table.delete_files([outside])
    outcome, deleted = table.expire_snapshots(older_than_ms=FAR_FUTURE_MS, retain_last=1)
    assert isinstance(outcome, Committed) and deleted
    assert outside not in deleted and mem.io.get(outside) == data


def test_expire_whose_ack_was_lost_deletes_nothing(mem):
    """11.4: an expiry that ends Committed through Resolve leaves deletion to orphan removal."""
    table = mem.create()
    table.append(rows([1]))
    table.overwrite(rows([2]))
    before = locations(mem, table)
    commit = table.new_commit(ops.ExpireSnapshots(FAR_FUTURE_MS, 1))
    for _ in range(3):
        commit.step()
    mem.catalog.lose_acknowledgements(1)
    outcome = commit.run()
    assert isinstance(outcome, Committed) and commit.operation.deleted_files == []
    assert before <= locations(mem, table)


def test_orphan_removal_honours_the_age_threshold():
    """12: only objects unreachable from every retained snapshot and older than the threshold
    go; metadata files are never touched; this is the only place `list` is called."""
    now = [1_000_000]
    stack = Stack("memory", MemoryCatalog(), MemoryStore(now_ms=lambda: now[0]), "memory://warehouse")
    table = stack.create(env=stack.env(wall_ms=lambda: now[0]))  # one clock for store and writer
    table.append(rows([1]))
    table.overwrite(rows([2]))
    table.expire_snapshots(older_than_ms=FAR_FUTURE_MS, retain_last=1)
    old_orphan = f"{table.location}/data/old-orphan.parquet"
    stack.io.put_if_absent(old_orphan, b"x")
    now[0] += 10_000
    young_orphan = f"{table.location}/metadata/young-m0.avro"
    stack.io.put_if_absent(young_orphan, b"y")
    lists = stack.io.counts["list"]
    deleted = table.remove_orphan_files(older_than_ms=now[0] - 5_000)
    assert deleted == [old_orphan]
    assert stack.io.counts["list"] == lists + 1
    remaining = locations(stack, table)
    assert young_orphan in remaining and reach_all(table) <= remaining
    assert ids_of(table.scan()) == [2]
    assert table.remove_orphan_files() == []  # default threshold: 3 days


def test_orphans_of_an_unknown_commit_survive_the_default_threshold(mem):
    """12.2: objects of an in-flight (Unknown) commit are younger than 3 days: kept."""
    table = mem.create(properties={"commit.retry.num-retries": "0"})
    commit = table.new_commit(P.FastAppend(rows([1])))
    for _ in range(5):
        commit.step()
    mem.catalog.delay_swaps(1)
    assert type(commit.run()).__name__ == "Unknown"
    assert table.remove_orphan_files() == []
    mem.catalog.deliver(mem.catalog.pending[0])
    assert ids_of(Table(mem.catalog, "db.t", mem.io).scan()) == [1]
