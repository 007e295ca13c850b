"""Integrity cross-checks on read (impl/format/integrity.py): a manifest list against its
snapshot's summary, a manifest against its list entry, a data file against its manifest
entry; a commit never builds on a base that fails them."""
from __future__ import annotations

import io
import sys
import threading
from dataclasses import replace
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, strategies as st

from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.format.avro_container import block_offsets
from icefloe.impl.format.integrity import CorruptMetadata, check_manifest_list
from icefloe.impl.format.manifest import (
    DataFile, DataFileContent, ManifestContent, ManifestEntry, ManifestEntryStatus, ManifestError,
    ManifestFile, manifest_file_of,
)
from icefloe.impl.format.manifest_reader import ManifestReader, Projection, read_manifest_list
from icefloe.impl.format.manifest_writer import write_manifest
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.io.local import LocalStore
from icefloe.impl.outcomes import Committed
from icefloe.impl.table.table import Table, create_table

ROWS = pa.table({"cat": pa.array(list("aabbc")), "id": pa.array(range(5), pa.int64())})
SCHEMA = schema_from_arrow(ROWS.schema)
SPEC = parse_partition_spec("cat", SCHEMA)


def local_path(location: str) -> Path:
    return Path(location.removeprefix("file://"))


def table_with_appends(tmp_path: Path, appends: int = 3) -> Table:
    catalog, store = MemoryCatalog(), LocalStore(fsync=False)
    create_table(catalog, "db.t", SCHEMA, SPEC, location=(tmp_path / "t").as_uri(), io=store)
    table = Table(catalog, "db.t", store)
    for _ in range(appends):
        assert isinstance(table.append(ROWS), Committed)
    return table


def test_manifest_list_cut_after_its_header_is_corrupt_and_no_commit_builds_on_it(tmp_path):
    """Goal: a manifest list cut at a block boundary (bug6) is CorruptMetadata naming the
    list, for a scan and for the next commit, which writes nothing. Method: three
    appends, cut the current list after its header, scan and append on fresh handles."""
    table = table_with_appends(tmp_path)
    snapshot = table.current_snapshot()
    path = local_path(snapshot.manifest_list)
    data = path.read_bytes()
    path.write_bytes(data[:block_offsets(data)[0]])
    before = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    fresh = Table(table.catalog, "db.t", table.io)
    with pytest.raises(CorruptMetadata, match="total-data-files=9") as info:
        fresh.scan()
    assert info.value.location == snapshot.manifest_list
    with pytest.raises(CorruptMetadata):
        Table(table.catalog, "db.t", table.io).append(ROWS)
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == before
    assert table.catalog.load(table.identifier) == fresh.metadata_location


def test_manifest_cut_at_a_block_boundary_is_corrupt(tmp_path):
    """Goal: a manifest of several Avro blocks cut after any block but the last is
    CorruptMetadata naming it, never fewer entries. Method: rewrite an appended manifest
    with small blocks (its list entry keeps the original counts, length patched in the
    list so only the entry counts can tell), cut it after each block, read it through the
    table's tree in every projection."""
    table = table_with_appends(tmp_path, 1)
    (m,) = table.tree.manifests(table.current_snapshot())
    path = local_path(m.manifest_path)
    reader = fastavro.reader(io.BytesIO(path.read_bytes()))
    schema, records, meta = reader.writer_schema, list(reader), reader.metadata
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec="deflate", sync_interval=1,
                    metadata={k: v for k, v in meta.items() if not k.startswith("avro.")})
    data = out.getvalue()
    ends = block_offsets(data)
    assert len(ends) == 1 + len(records) == 4  # one block per entry
    for end in ends[:-1]:
        path.write_bytes(data[:end])
        cut = replace(m, manifest_length=end)  # a list entry whose length agrees with the cut file
        for projection in Projection:
            with pytest.raises(CorruptMetadata, match="added entries") as info:
                ManifestReader(data[:end], cut).read_entries(projection)
            assert info.value.location == m.manifest_path
        with pytest.raises(CorruptMetadata, match="bytes, its manifest list entry says"):
            Table(table.catalog, "db.t", table.io).scan()


@given(st.integers(1, 12), st.data())
def test_a_manifest_read_with_its_list_entry_never_returns_fewer_entries(n, data):
    """Goal: however a manifest is cut, a read with its list entry gives all its entries
    or a typed error. Method: write n entries in one-entry blocks, cut at a random byte
    (block boundaries included), read in every projection and selectively."""
    entries = [ManifestEntry(ManifestEntryStatus.ADDED, DataFile(f"f{i}", "PARQUET", ("a",), i + 1, 10), 1, 1, 1)
               for i in range(n)]
    reader = fastavro.reader(io.BytesIO(write_manifest(entries, SCHEMA, SPEC)))
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(reader.writer_schema), list(reader), sync_interval=1)
    whole = out.getvalue()
    cut = data.draw(st.sampled_from(block_offsets(whole)) | st.integers(0, len(whole)))
    mf = manifest_file_of(entries, SCHEMA, SPEC, manifest_path="m.avro", manifest_length=len(whole),
                          added_snapshot_id=1, sequence_number=1)
    for length in (len(whole), cut):  # the list entry's length right, or agreeing with the cut
        for projection in Projection:
            try:
                got = ManifestReader(whole[:cut], replace(mf, manifest_length=length)).read_entries(projection)
            except (CorruptMetadata, ManifestError):
                continue
            assert len(got) == n and cut == len(whole)


def test_data_file_with_fewer_rows_than_its_entry_is_corrupt(tmp_path):
    """Goal: a data file replaced by one with fewer rows is CorruptMetadata naming it, not
    a short scan. Method: overwrite one appended data file with its first row only; scan."""
    table = table_with_appends(tmp_path, 1)
    task = next(t for t in table.plan_files() if t.data_file.record_count == 2)
    path = local_path(task.data_file.file_path)
    pq.write_table(pq.read_table(path).slice(0, 1), path)
    with pytest.raises(CorruptMetadata, match="holds 1 rows, its manifest entry says record_count=2") as info:
        Table(table.catalog, "db.t", table.io).scan()
    assert info.value.location == task.data_file.file_path


def _listed(content, added, existing, rows) -> ManifestFile:
    return ManifestFile("m", 1, 0, 1, content, 1, 1, added, existing, 0, rows, 0, 0)


def test_summary_totals_of_data_and_delete_files_are_checked():
    """Goal: each total the summary has is compared; an absent or unparsable one and a
    list entry without counts are no evidence. Method: check_manifest_list on lists
    that agree and that disagree with hand-made summaries."""
    lists = [_listed(ManifestContent.DATA, 2, 1, 30), _listed(ManifestContent.DELETES, 1, 0, 4)]
    good = {"total-data-files": "3", "total-records": "30", "total-delete-files": "1",
            "total-position-deletes": "3", "total-equality-deletes": "1"}
    check_manifest_list(lists, good, "snap.avro", 7)
    check_manifest_list(lists, {}, "snap.avro")
    check_manifest_list(lists, {"total-records": "many"}, "snap.avro")
    check_manifest_list([replace(lists[0], added_rows_count=None)], {"total-records": "1"}, "snap.avro")
    for key, value in (("total-data-files", "4"), ("total-records", "29"), ("total-delete-files", "0"),
                       ("total-position-deletes", "4")):
        with pytest.raises(CorruptMetadata, match=f"{key}") as info:
            check_manifest_list(lists, {**good, key: value}, "snap.avro", 7)
        assert info.value.location == "snap.avro" and "snapshot 7" in str(info.value)


def test_delete_file_row_counts_are_checked():
    """Goal: a manifest entry's rows per status are compared, for delete manifests too.
    Method: a delete manifest whose list entry claims one row more than its entries."""
    d = DataFile("d.parquet", "PARQUET", ("a",), 3, 10, DataFileContent.POSITION_DELETES)
    entries = [ManifestEntry(ManifestEntryStatus.ADDED, d, 1, 1, 1)]
    data = write_manifest(entries, SCHEMA, SPEC, ManifestContent.DELETES)
    mf = manifest_file_of(entries, SCHEMA, SPEC, manifest_path="d.avro", manifest_length=len(data),
                          added_snapshot_id=1, content=ManifestContent.DELETES, sequence_number=1)
    assert ManifestReader(data, mf).read_entries() == entries
    with pytest.raises(CorruptMetadata, match="has 3 rows in added entries, its manifest list entry says 4"):
        ManifestReader(data, replace(mf, added_rows_count=4)).read_entries()


def test_a_list_written_by_icefloe_agrees_with_its_summary(tmp_path):
    """Goal: what icefloe writes passes its own checks after appends, an overwrite and a
    delete (no false alarm). Method: run them, read every snapshot's list fresh."""
    table = table_with_appends(tmp_path, 2)
    assert isinstance(table.overwrite(ROWS.slice(0, 2), "cat = 'a'"), Committed)
    assert isinstance(table.delete("id = 4"), Committed)
    fresh = Table(table.catalog, "db.t", table.io)
    for snapshot in fresh.metadata.snapshots:
        read_manifest_list(table.io.get(snapshot.manifest_list))
        for m in fresh.tree.manifests(snapshot):
            fresh.tree.entries(m)
    assert fresh.scan().num_rows == 2 * 5 - 4 + 2 - 2  # 'a' rows replaced by two, id 4 deleted


def test_one_reader_shared_by_threads_gives_every_entry_to_each():
    """Goal: a ManifestReader shared by threads (a table handle's cache) answers every
    projection fully while another thread's full decode releases the bytes. Method: 8
    threads, each reading one projection (with and without keep) twice, on each of 100 fresh readers,
    with the interpreter switching threads every microsecond so that reads interleave."""
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        _threads_share_one_reader()
    finally:
        sys.setswitchinterval(switch)


def _threads_share_one_reader():
    entries = [ManifestEntry(ManifestEntryStatus.ADDED, DataFile(f"f{i}", "PARQUET", ("a",), 1, 10), 1, 1, 1)
               for i in range(200)]
    data = write_manifest(entries, SCHEMA, SPEC)
    mf = manifest_file_of(entries, SCHEMA, SPEC, manifest_path="m.avro", manifest_length=len(data),
                          added_snapshot_id=1, sequence_number=1)
    for _ in range(100):  # fresh readers: the races are in the first decodes
        reader, failures = ManifestReader(data, mf), []

        def work(projection, keep):
            try:
                for _ in range(2):
                    assert len(reader.read_entries(projection, keep)) == 200
            except Exception as e:  # collected: the main thread asserts there were none
                failures.append(e)
        threads = [threading.Thread(target=work, args=(p, k))
                   for p in Projection for k in (None, lambda e: True) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == []
