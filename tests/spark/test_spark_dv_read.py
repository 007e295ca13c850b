"""Deletion vectors (format v3) in Spark's reads (impl/spark/native_read.py, native_dvs.py;
issue 29 item 2): the native path applies each live DV as a row-index filter and gives
exactly icefloe's scan, in both planning modes and both merges; the data source too."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format import types as T
from icefloe.impl.format.manifest import ManifestContent
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.io.local import LocalStore
from icefloe.impl.outcomes import require_committed
from icefloe.impl.spark import plan, read
from icefloe.impl.spark.transforms_sql import NotNative
from icefloe.impl.table.files import LIVE
from icefloe.impl.table.table import create_table
from spark_helpers import SCHEMA, TABLE, open_table, rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "impl" / "table"))
from delete_writers import equality_delete_file, position_delete_file  # noqa: E402

pytestmark = pytest.mark.xdist_group("spark")


def _v3_table(opts, partition_by: str | None = "cat", format_version: int = 3):
    schema = T.schema_from_arrow(SCHEMA)
    spec = parse_partition_spec(partition_by, schema) if partition_by else None
    return create_table(SqlCatalog(opts["catalog-uri"], name="icefloe"), "db.t", schema, spec,
                        f"file://{opts['warehouse']}/db.db/t", io=LocalStore(), format_version=format_version)


def _live_dvs(table) -> dict:
    """referenced data file -> the live DV of the current snapshot."""
    snap = table.current_snapshot()
    out = {}
    for m in table.tree.manifests(snap):
        if m.content == ManifestContent.DELETES:
            for e in table.tree.entries(m):
                if e.status in LIVE and e.data_file.is_deletion_vector:
                    assert e.data_file.referenced_data_file not in out
                    out[e.data_file.referenced_data_file] = e.data_file
    return out


def _rows(df) -> list[tuple]:
    return sorted((r.id, r.cat, r.v) for r in df.collect())


def _scan_rows(table, snapshot_id) -> list[tuple]:
    t = table.scan(snapshot_id=snapshot_id)
    return sorted(zip(t.column("id").to_pylist(), t.column("cat").to_pylist(), t.column("v").to_pylist()))


def _count_merges(monkeypatch) -> dict:
    """Counts the calls of NativeScan's two merges (each still runs)."""
    from icefloe.impl.spark.native_read import NativeScan
    calls = {"_merge_by_files": 0, "_merge_by_rows": 0}
    for name in calls:
        def counted(self, *args, _name=name, _real=getattr(NativeScan, name)):
            calls[_name] += 1
            return _real(self, *args)
        monkeypatch.setattr(NativeScan, name, counted)
    return calls


def _dv_history(opts):
    """A v3 table partitioned by cat: two appends, a merge-on-read delete (DVs), a second one
    superseding a DV of the first on the same file, an equality delete, a later append."""
    table = _v3_table(opts)
    require_committed(table.append(rows(range(0, 100))))
    require_committed(table.append(rows(range(100, 200))))
    require_committed(table.delete("id in (1, 5, 150, 42)", mode="merge-on-read"))
    table.refresh()
    first = _live_dvs(table)
    require_committed(table.delete("id in (9, 151)", mode="merge-on-read"))
    table.refresh()
    require_committed(table.add_delete_files([equality_delete_file(table, "id", [13, 17, 101], ("b",))]))
    table.refresh()
    require_committed(table.append(rows([1, 9, 400, 401])))  # deleted keys again, in new files: visible
    table.refresh()
    return table, first


def test_native_reads_apply_deletion_vectors_as_icefloe_scan_does(spark, opts, monkeypatch):
    """Goal: every Spark read of a v3 table with DVs gives exactly icefloe's scan, at every
    snapshot (time travel before, between and after the DVs). Method: two merge-on-read
    deletes (the second's DV replaces the first's for one file and holds both deletes'
    positions), an equality delete and an append; native reads with local and executor
    planning, each merged a scan per file (a bitset filter per file, or the positions
    anti-joined) and in one scan (_merge_by_rows), and the data source, against
    table.scan(snapshot_id=...)."""
    table, first = _dv_history(opts)
    second = _live_dvs(table)
    replaced = {p for p in first if second[p].file_path != first[p].file_path}
    assert len(first) == 3 and len(second) == 4 and len(replaced) == 1  # the file of ids 1, 5 (cat 'b')
    (path,) = replaced
    assert (first[path].record_count, second[path].record_count) == (2, 3)  # 1, 5; then 1, 5, 9

    import icefloe.impl.spark.native_dvs as DV
    import icefloe.impl.spark.native_read as NR
    merges = _count_merges(monkeypatch)
    by_files, bitsets = NR.MERGE_BRANCHES_MAX, DV.BITSET_WORDS_MAX  # taken once: the loop changes them
    ways = (("local", by_files, bitsets), ("distributed", by_files, bitsets),
            ("local", by_files, 0),  # _merge_by_files with the positions anti-joined, no bitset
            ("local", 0, bitsets), ("distributed", 0, bitsets))  # _merge_by_rows
    checked = 0
    for snapshot in table.metadata.snapshots:
        want = _scan_rows(table, snapshot.snapshot_id)
        for planning, branches, words in ways:
            monkeypatch.setattr(NR, "MERGE_BRANCHES_MAX", branches)
            monkeypatch.setattr(DV, "BITSET_WORDS_MAX", words)
            got = _rows(read(spark, TABLE, opts, snapshot_id=snapshot.snapshot_id, planning=planning))
            assert got == want, (snapshot.summary, planning, branches, words)
            checked += 1
        source = spark.read.format("icefloe").options(**opts).option("snapshot-id", str(snapshot.snapshot_id))
        assert _rows(source.load(TABLE)) == want, snapshot.summary
    assert checked == 5 * 6 and merges == {"_merge_by_files": 12, "_merge_by_rows": 8}  # 4 snapshots with deletes
    monkeypatch.setattr(DV, "BITSET_WORDS_MAX", bitsets)
    final = [r[0] for r in _scan_rows(table, None)]
    assert len(final) == 204 - 6 - 3 and final.count(1) == 1 and final.count(9) == 1  # 6 by DVs, 3 by equality
    assert not {5, 42, 150, 151, 13, 17} & set(final)
    filtered = _rows(read(spark, TABLE, opts, row_filter="cat = 'b' and id < 30"))
    assert [r[0] for r in filtered] == [1, 9, 21, 25, 29]
    scanned = plan(spark, TABLE, opts, planning="local").plan
    with_dv = scanned.filter(scanned.column("deletion_vector").is_valid())
    assert with_dv.num_rows == 4 and with_dv.column("position_deletes").null_count == 4


def test_deletion_vectors_too_many_for_the_driver_fall_back_to_the_data_source(spark, opts, monkeypatch):
    """Goal: when the DVs hold more positions than the driver may decode, the native path
    refuses (NotNative) and read() falls back to the data source, never reading wrong rows.
    Method: DRIVER_DV_POSITIONS_MAX set to 1 over a table whose DVs hold 6 positions;
    plan().to_dataframe() raises, read() equals icefloe's scan."""
    table, _ = _dv_history(opts)
    import icefloe.impl.spark.native_dvs as DV
    monkeypatch.setattr(DV, "DRIVER_DV_POSITIONS_MAX", 1)
    with pytest.raises(NotNative, match="DRIVER_DV_POSITIONS_MAX"):
        plan(spark, TABLE, opts, planning="local").to_dataframe()
    assert _rows(read(spark, TABLE, opts)) == _scan_rows(open_table(opts), None)


def test_a_dv_replaces_the_position_delete_files_of_its_file_on_an_upgraded_table(spark, opts, monkeypatch):
    """Goal: on a v2 table upgraded to v3, a file with a DV is read with its DV only, and a
    file that still has a (multi-file) position delete file with it, in both merges and both
    planning modes, as icefloe's scan reads them. Method: a position delete file over two
    files (v2), the upgrade, a merge-on-read delete on one of them (its DV holds the old
    position and the new one; the position delete file stays live for the other); the
    plan's lists and the rows read natively against table.scan()."""
    table = _v3_table(opts, partition_by=None, format_version=2)
    require_committed(table.append(rows(range(100))))
    (first,) = [t.data_file.file_path for t in table.plan_files()]  # ids 0..99
    require_committed(table.append(rows(range(100, 200))))
    (other,) = {t.data_file.file_path for t in table.plan_files()} - {first}
    require_committed(table.add_delete_files([position_delete_file(table, [(first, 3), (other, 4)])], [first, other]))
    table.refresh()
    require_committed(table.upgrade_format_version(3))
    table.refresh()
    require_committed(table.delete("id = 10", mode="merge-on-read"))
    table.refresh()
    (dv,) = _live_dvs(table).values()
    assert dv.referenced_data_file == first and dv.record_count == 2

    import icefloe.impl.spark.native_read as NR
    planned = plan(spark, TABLE, opts, planning="local")
    lists = dict(zip(planned.plan.column("file_path").to_pylist(),
                     zip(planned.plan.column("position_deletes").to_pylist(),
                         planned.plan.column("deletion_vector").to_pylist())))
    (pos_index,) = lists[other][0]
    assert lists[first][0] is None and planned.deletes[lists[first][1]][2] == dv
    assert lists[other][1] is None and not planned.deletes[pos_index][2].is_deletion_vector
    import icefloe.impl.spark.native_dvs as DV
    merges = _count_merges(monkeypatch)
    by_files, bitsets = NR.MERGE_BRANCHES_MAX, DV.BITSET_WORDS_MAX
    want = _scan_rows(table, None)
    assert len(want) == 197 and not {3, 104, 10} & {r[0] for r in want}
    for planning, branches, words in (("local", by_files, bitsets), ("distributed", by_files, bitsets),
                                      ("local", by_files, 0), ("local", 0, bitsets), ("distributed", 0, bitsets)):
        monkeypatch.setattr(NR, "MERGE_BRANCHES_MAX", branches)
        monkeypatch.setattr(DV, "BITSET_WORDS_MAX", words)
        assert _rows(read(spark, TABLE, opts, planning=planning)) == want, (planning, branches, words)
    assert merges == {"_merge_by_files": 3, "_merge_by_rows": 2}


def test_spark_compaction_rewrites_a_lone_file_whose_only_delete_is_a_deletion_vector(spark, opts):
    """Goal: Spark's compaction counts a DV as a delete (a file with one applies its deletes
    when rewritten, and the DV goes with it), as it counts position and equality delete files.
    Method: a v3 table with one file per partition, a merge-on-read delete in one of them, then
    compact with files_min above the file count: the file with the DV is rewritten, the DV is
    no longer live, the rows equal the scan before."""
    from icefloe.impl.spark.maintenance import compact
    table = _v3_table(opts)
    require_committed(table.append(rows(range(0, 20))))
    require_committed(table.delete("id in (3, 7)", mode="merge-on-read"))
    table.refresh()
    assert _live_dvs(table)
    want = _scan_rows(table, table.metadata.current_snapshot_id)
    result = compact(spark, TABLE, opts, files_min=100)
    require_committed(result.outcome)
    table.refresh()
    assert not _live_dvs(table)
    assert _scan_rows(table, table.metadata.current_snapshot_id) == want
