"""Row-level deletes through Spark (impl/spark/native_delete.py; issue 29 item 2): merge-on-read
writes deletion vectors on v3 (one live DV per data file, an earlier DV or position deletes
merged and removed in the same snapshot) and position delete files on v2, copy-on-write
stays available, and the result is read back through icefloe and checked in the manifests."""
from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format import types as T
from icefloe.impl.format.manifest import DataFileContent, ManifestContent, ManifestEntryStatus
from icefloe.impl.format.metadata import UnsupportedFormatVersion
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.io.local import LocalStore
from icefloe.impl.outcomes import CommitConflictError, require_committed
from icefloe.impl.spark import delete, read
from icefloe.impl.spark.options import SparkOptionError
from icefloe.impl.table.deletes import DeleteReader
from icefloe.impl.table.files import LIVE
from icefloe.impl.spark.job import ValidationFailed
from icefloe.impl.table.table import Table, create_table
from spark_helpers import SCHEMA, TABLE, rows

pytestmark = pytest.mark.xdist_group("spark")


def _table(opts, format_version: int):
    schema = T.schema_from_arrow(SCHEMA)
    return create_table(SqlCatalog(opts["catalog-uri"], name="icefloe"), "db.t", schema,
                        parse_partition_spec("cat", schema), f"file://{opts['warehouse']}/db.db/t",
                        io=LocalStore(), format_version=format_version)


def _live_deletes(table) -> list:
    """The live delete files of the current snapshot."""
    out = []
    for m in table.tree.manifests(table.current_snapshot()):
        if m.content == ManifestContent.DELETES:
            out.extend(e.data_file for e in table.tree.entries(m) if e.status in LIVE)
    return out


def _removed_deletes(table) -> list:
    """The delete files the current snapshot removed (DELETED entries it wrote)."""
    snap = table.current_snapshot()
    out = []
    for m in table.tree.manifests(snap):
        if m.content == ManifestContent.DELETES and m.added_snapshot_id == snap.snapshot_id:
            out.extend(e.data_file for e in table.tree.entries(m) if e.status == ManifestEntryStatus.DELETED)
    return out


def _ids(table) -> list[int]:
    table.refresh()
    return sorted(table.scan().column("id").to_pylist())


def _data_file_of(table, cat: str, first_id: int) -> str:
    """The live data file of partition `cat` whose smallest id is `first_id`."""
    table.refresh()
    for _, e in table.tree.live_entries(table.current_snapshot(), ManifestContent.DATA):
        if e.data_file.partition == (cat,) and \
                e.data_file.lower_bounds[1] == first_id.to_bytes(8, "little", signed=True):
            return e.data_file.file_path
    raise AssertionError(f"no data file of {cat} from {first_id}")


def test_merge_on_read_on_v3_writes_one_live_dv_per_file(spark, opts, monkeypatch):
    """Goal: a Spark merge-on-read delete on v3 writes DVs, one live per data file, the
    second delete's DV holding the first's positions and the first removed in its snapshot.
    Method: two appends (200 rows, 4 partitions), Spark deletes of ids {1, 5, 150, 42} then
    {9, 151} (its files with a DV merged in one scan, _merge_by_rows); the manifests' DVs (referenced file, cardinality, positions) and removed
    entries, icefloe's scan and Spark's read against the expected ids."""
    table = _table(opts, 3)
    require_committed(table.append(rows(range(0, 100))))
    require_committed(table.append(rows(range(100, 200))))
    outcome = delete(spark, TABLE, opts, "id in (1, 5, 150, 42)", mode="merge-on-read")
    assert outcome.snapshot_id is not None
    table.refresh()
    assert table.current_snapshot().operation == "delete"
    first = _live_deletes(table)
    assert all(d.is_deletion_vector for d in first) and len(first) == 3  # b (1, 5), c (42), c (150)
    assert len({d.file_path for d in first}) == 1  # one Puffin file for the commit
    by_file = {d.referenced_data_file: d for d in first}
    assert len(by_file) == 3
    reader = DeleteReader(table.io)
    b_first = _data_file_of(table, "b", 1)
    assert by_file[b_first].record_count == 2
    assert reader.dv_positions(by_file[b_first]).tolist() == [0, 1]  # ids 1 and 5 are rows 0 and 1 of that file
    want = sorted(set(range(200)) - {1, 5, 150, 42})
    assert _ids(table) == want
    assert sorted(r.id for r in read(spark, TABLE, opts).collect()) == want

    import icefloe.impl.spark.native_read as NR
    monkeypatch.setattr(NR, "MERGE_BRANCHES_MAX", 0)  # the files with DVs read as one scan, rows matched by path
    delete(spark, TABLE, opts, "id in (9, 151)", mode="merge-on-read")
    monkeypatch.undo()
    table.refresh()
    second = _live_deletes(table)
    assert all(d.is_deletion_vector for d in second)
    referenced = [d.referenced_data_file for d in second]
    assert len(referenced) == len(set(referenced)) == 4  # one live DV per data file
    new_b = next(d for d in second if d.referenced_data_file == b_first)
    assert reader.dv_positions(new_b).tolist() == [0, 1, 2] and new_b.record_count == 3
    removed = _removed_deletes(table)  # b's first DV, superseded in this snapshot
    assert [d.referenced_data_file for d in removed] == [b_first]  # 151's file had none
    assert all(d.file_path == first[0].file_path for d in removed)
    want = sorted(set(want) - {9, 151})
    assert _ids(table) == want
    assert sorted(r.id for r in read(spark, TABLE, opts).collect()) == want
    # a delete matching nothing live commits nothing
    before = table.current_snapshot().snapshot_id
    delete(spark, TABLE, opts, "id in (1, 9, 1000)", mode="merge-on-read")
    table.refresh()
    assert table.current_snapshot().snapshot_id == before


def test_merge_on_read_on_v2_writes_position_deletes_then_a_dv_replaces_them(spark, opts):
    """Goal: on v2 a Spark merge-on-read delete writes one position delete file per data
    file; after an upgrade to v3 a Spark delete on the same file writes a DV holding those
    positions and removes the position delete file in the same snapshot. Method: a v2
    table, a Spark delete, its manifests (content, bounds naming one file) and icefloe's
    scan; upgrade; a second Spark delete; the DV's positions and the removed entry."""
    table = _table(opts, 2)
    require_committed(table.append(rows(range(0, 40))))
    delete(spark, TABLE, opts, "id in (2, 6, 7)", mode="merge-on-read")
    table.refresh()
    pos = _live_deletes(table)
    assert len(pos) == 2 and all(d.content == DataFileContent.POSITION_DELETES and not d.is_deletion_vector
                                 for d in pos)
    assert table.metadata.format_version == 2
    c_file = _data_file_of(table, "c", 2)
    reader = DeleteReader(table.io)
    held = {Path(k).name: sorted(v) for d in pos for k, v in reader.positions(d).items()}
    assert held == {Path(c_file).name: [0, 1], Path(_data_file_of(table, "d", 3)).name: [1]}  # 2, 6 in c; 7 in d
    assert _ids(table) == sorted(set(range(40)) - {2, 6, 7})

    require_committed(table.upgrade_format_version(3))
    delete(spark, TABLE, opts, "id = 10", mode="merge-on-read")  # c's third row
    table.refresh()
    live = _live_deletes(table)
    dvs = [d for d in live if d.is_deletion_vector]
    assert len(dvs) == 1 and dvs[0].referenced_data_file == c_file
    assert reader.dv_positions(dvs[0]).tolist() == [0, 1, 2]
    d_file = _data_file_of(table, "d", 3)
    assert [d.referenced_data_file for d in live if not d.is_deletion_vector] == [d_file]  # d's file keeps its own
    removed = _removed_deletes(table)
    assert len(removed) == 1 and not removed[0].is_deletion_vector
    assert _ids(table) == sorted(set(range(40)) - {2, 6, 7, 10})
    assert sorted(r.id for r in read(spark, TABLE, opts).collect()) == _ids(table)


def test_copy_on_write_and_refusals(spark, opts):
    """Goal: copy-on-write through the Spark entry point rewrites files and writes no delete
    file; merge-on-read on v1 and an unknown mode are refused by name. Method: a v3 table
    deleted copy-on-write (manifests, scan), a v1 table deleted merge-on-read, a bad mode."""
    table = _table(opts, 3)
    require_committed(table.append(rows(range(0, 20))))
    delete(spark, TABLE, opts, "id < 3", mode="copy-on-write")
    table.refresh()
    assert _live_deletes(table) == [] and _ids(table) == list(range(3, 20))
    assert table.current_snapshot().operation in ("overwrite", "delete")
    with pytest.raises(SparkOptionError, match="'merge-on-write'"):
        delete(spark, TABLE, opts, "id = 4", mode="merge-on-write")

    v1 = create_table(SqlCatalog(opts["catalog-uri"], name="icefloe"), "db.v1", T.schema_from_arrow(SCHEMA),
                      None, f"file://{opts['warehouse']}/db.db/v1", io=LocalStore(), format_version=1)
    require_committed(v1.append(rows(range(5))))
    with pytest.raises(UnsupportedFormatVersion, match="db.v1 is v1"):
        delete(spark, "icefloe.db.v1", opts, "id = 1", mode="merge-on-read")
    delete(spark, "icefloe.db.v1", opts, "id = 1")  # the default mode: copy-on-write
    v1.refresh()
    assert sorted(v1.scan().column("id").to_pylist()) == [0, 2, 3, 4]


def test_a_dv_racing_the_spark_job_is_a_conflict_and_its_puffin_goes(spark, opts, monkeypatch):
    """Goal: a DV committed for the same data file after the Spark job read the table makes
    the Spark delete fail (never two live DVs on one file), and its Puffin file is removed.
    Method: icefloe's own merge-on-read delete injected between the Spark job and the
    commit; the typed error, the live DVs and the table's data folder."""
    import icefloe.impl.spark.native_delete as ND
    table = _table(opts, 3)
    require_committed(table.append(rows(range(0, 20))))
    real = ND._matched_positions

    def racing(scan):
        found = real(scan)
        other = Table(SqlCatalog(opts["catalog-uri"], name="icefloe"), "db.t", LocalStore())  # another handle
        require_committed(other.delete("id = 5", mode="merge-on-read"))
        return found
    monkeypatch.setattr(ND, "_matched_positions", racing)
    with pytest.raises((CommitConflictError, ValidationFailed)):
        delete(spark, TABLE, opts, "id = 1", mode="merge-on-read")
    table.refresh()
    live = _live_deletes(table)
    assert len(live) == 1 and DeleteReader(table.io).dv_positions(live[0]).tolist() == [1]  # id 5 only
    puffins = sorted(Path(opts["warehouse"], "db.db", "t", "data").glob("*.puffin"))
    assert [f"file://{p}" for p in puffins] == [live[0].file_path]
    assert _ids(table) == [i for i in range(20) if i != 5]
