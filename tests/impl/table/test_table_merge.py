"""Manifest merging (impl/table/merge.py, the commit.manifest-merge.* properties): which
manifests merge, what a merged manifest holds, and that merging changes no row, no data
sequence number, nothing time travel, expiry or orphan removal sees, and holds across a
retry."""
from __future__ import annotations

import pytest

from icefloe.impl.format.manifest import ManifestContent, ManifestEntryStatus, ManifestFile
from icefloe.impl.outcomes import Committed, InvalidArgument
from icefloe.impl.table import producer as P
from icefloe.impl.table.merge import MergePolicy, merge_manifests, pack_end

from table_helpers import ids_of, rival, rows
from delete_writers import data_file, equality_delete_file

MERGE_AT_2 = {"commit.manifest.min-count-to-merge": "2"}


def manifests_of(table, snapshot=None):
    return table.tree.manifests(snapshot or table.current_snapshot())


def statuses(table, snapshot=None) -> list:
    """(status, record ids) per entry of every data manifest of the snapshot."""
    out = []
    for m in manifests_of(table, snapshot):
        if m.content == ManifestContent.DATA:
            out += [e.status.name for e in table.tree.entries(m)]
    return sorted(out)


def fake(path: str, length: int, spec_id: int = 0, content=ManifestContent.DATA) -> ManifestFile:
    return ManifestFile(manifest_path=path, manifest_length=length, partition_spec_id=spec_id,
                        added_snapshot_id=1, content=content)


def test_pack_end_fills_bins_from_the_end_and_keeps_order():
    """Goal: bins of at most the target size, the under-filled one first (the newest list
    position merges next time), order kept. Method: known lengths against a target of 10."""
    ms = [fake(f"m{i}", n) for i, n in enumerate([4, 4, 4, 4, 12, 3])]
    bins = pack_end(ms, 10)
    assert [[m.manifest_path for m in b] for b in bins] == [["m0", "m1"], ["m2", "m3"], ["m4"], ["m5"]]


def test_a_bin_with_the_first_manifest_merges_only_at_the_minimum_count():
    """Goal: Java's rule: a bin holding the operation's first manifest merges only from
    min-count-to-merge manifests; a bin of older manifests merges at two; data and delete
    manifests never share a merge. Method: merge_manifests with a recording merge_bin."""
    merged = []

    def merge_bin(b):
        merged.append([m.manifest_path for m in b])
        return fake("+".join(m.manifest_path for m in b), 1, b[0].partition_spec_id, b[0].content)
    ms = [fake("new", 1), fake("a", 1), fake("b", 1), fake("d1", 1, content=ManifestContent.DELETES),
          fake("d2", 1, content=ManifestContent.DELETES)]
    kept = merge_manifests(ms, MergePolicy(min_count_to_merge=4), merge_bin)
    assert [m.manifest_path for m in kept] == ["new", "a", "b", "d1", "d2"] and merged == []
    kept = merge_manifests(ms, MergePolicy(min_count_to_merge=3), merge_bin)
    assert [m.manifest_path for m in kept] == ["new+a+b", "d1", "d2"]
    small = MergePolicy(min_count_to_merge=100, target_size_bytes=2)      # bins: [new] [a, b]
    assert [m.manifest_path for m in merge_manifests(ms[:3], small, merge_bin)] == ["new", "a+b"]
    assert merge_manifests(ms, MergePolicy(enabled=False, min_count_to_merge=2), merge_bin) == ms


def test_merge_properties_are_checked():
    """Goal: a bad commit.manifest-merge.* property is a typed error, never a silent default.
    Method: three bad values."""
    for props in ({"commit.manifest-merge.enabled": "yes"}, {"commit.manifest.min-count-to-merge": "two"},
                  {"commit.manifest.target-size-bytes": "0"}):
        with pytest.raises(InvalidArgument):
            MergePolicy.from_properties(props)
    assert MergePolicy.from_properties({}) == MergePolicy(True, 100, 8 * 1024 * 1024)


def test_a_delete_merges_the_manifests_and_carries_the_others_as_existing(mem):
    """Goal: at min-count-to-merge 2 a delete writes one data manifest: the removed file
    DELETED, the others EXISTING with their snapshot ids and data sequence numbers; rows,
    time travel and each file's data sequence number are unchanged. Method: three appends,
    delete one file; then the default table (100) keeps its manifests apart."""
    for props, merged in ((MERGE_AT_2, True), ({}, False)):
        table = mem.create(name="merged" if merged else "apart", properties=props)
        for i in (1, 2, 3):
            table.append(rows([i]))
        before = {t.data_file.file_path: t.data_sequence_number for t in table.plan_files()}
        older = table.current_snapshot().snapshot_id
        [gone] = [p for p, seq in before.items() if seq == 2]
        assert isinstance(table.delete_files([gone]), Committed)
        data = [m for m in manifests_of(table) if m.content == ManifestContent.DATA]
        if merged:
            assert len(data) == 1 and statuses(table) == ["DELETED", "EXISTING", "EXISTING"]
            existing = [e for e in table.tree.entries(data[0]) if e.status == ManifestEntryStatus.EXISTING]
            assert {e.snapshot_id for e in existing} == {s.snapshot_id for s in table.history()[::2]}
        else:
            assert len(data) == 3 and statuses(table) == ["ADDED", "ADDED", "DELETED"]
        assert ids_of(table.scan()) == [1, 3]
        assert {t.data_file.file_path: t.data_sequence_number for t in table.plan_files()} == \
            {p: s for p, s in before.items() if p != gone}
        assert ids_of(table.scan(snapshot_id=older)) == [1, 2, 3]


def test_merged_entries_keep_the_sequence_numbers_equality_deletes_depend_on(mem):
    """Goal: an equality delete still applies to the older file and not to the newer one
    after both were carried into a merged manifest (their sequence numbers kept). Method:
    append 5, delete id 5 by equality, append 5 again, append 7, delete the file of 7."""
    table = mem.create(properties=MERGE_AT_2)
    table.append(rows([5]))
    table.add_delete_files([equality_delete_file(table, "id", [5])])
    table.append(rows([5]))
    table.append(rows([7]))
    assert ids_of(table.scan()) == [5, 7]
    [seven] = [t.data_file.file_path for t in table.plan_files() if t.data_file.record_count == 1
               and t.data_sequence_number == 4]
    assert isinstance(table.delete_files([seven]), Committed)
    assert sum(m.content == ManifestContent.DATA for m in manifests_of(table)) == 1
    assert ids_of(table.scan()) == [5]


def test_expiry_and_orphan_removal_keep_what_a_merged_manifest_lists(mem):
    """Goal: files a merged manifest lists as EXISTING stay reachable: expiring every older
    snapshot and removing orphans deletes only what nothing retained lists. Method: three
    appends, a merging delete, expire down to the head, remove orphans, read."""
    table = mem.create(properties=MERGE_AT_2)
    for i in (1, 2, 3):
        table.append(rows([i]))
    [first] = [t.data_file.file_path for t in table.plan_files() if t.data_sequence_number == 1]
    assert isinstance(table.delete_files([first]), Committed)
    outcome, expired = table.expire_snapshots(older_than_ms=2 ** 62, retain_last=1)
    assert isinstance(outcome, Committed) and expired.complete
    assert first in expired                    # only the expired snapshots listed it
    orphans = table.remove_orphan_files(older_than_ms=2 ** 62)
    assert orphans.complete
    table.refresh()
    assert len(table.metadata.snapshots) == 1 and ids_of(table.scan()) == [2, 3]


def test_a_retry_reuses_an_unchanged_merge_and_merges_anew_over_a_rival(mem):
    """Goal: across attempts a merge is written once per bin: a retry whose bin changed (a
    rival's manifest joined it) writes a new merged manifest that carries the rival's file,
    so nothing the rival committed is lost. Method: a delete stepped to its swap, a rival
    append lands, the delete retries and commits; the rival's row is in the result."""
    table = mem.create(properties=MERGE_AT_2)
    for i in (1, 2):
        table.append(rows([i]))
    [one] = [t.data_file.file_path for t in table.plan_files() if t.data_sequence_number == 1]
    delete = table.new_commit(P.DeleteFiles([one]))
    while delete.phase != "swap":
        delete.step()
    merged_first = {m.manifest_path for m in delete.operation.manifests(delete)}
    table.append(rows([3]))
    outcome = delete.run()
    assert isinstance(outcome, Committed) and outcome.attempts == 2
    table.refresh()
    data = [m for m in manifests_of(table) if m.content == ManifestContent.DATA]
    assert len(data) == 1 and data[0].manifest_path not in merged_first
    assert ids_of(table.scan()) == [2, 3]


def test_a_manifest_merged_on_one_attempt_and_listed_alone_on_the_next_reads_back(mem):
    """Goal: a retry that lists its own new manifest unmerged (a rollback took away what it
    had merged it with) commits a manifest whose entries read with the list's sequence
    number through the same handle (seed gate, seed 6: a TypeError comparing None with a
    sequence number while planning). Method: an upsert-like row delta merges its delete
    manifest with an older one, a rollback removes that one, the delta retries and lands;
    the handle that ran it scans."""
    table = mem.create(properties=MERGE_AT_2)
    table.append(rows([1, 2]))
    before = table.current_snapshot().snapshot_id
    table.add_delete_files([equality_delete_file(table, "id", [1])])
    delta = table.begin(P.RowDelta([equality_delete_file(table, "id", [2])], [data_file(table, rows([7]))]))
    while delta.phase != "swap":
        delta.step()
    assert any(m.content == ManifestContent.DELETES and m.added_snapshot_id == delta.snapshot_id
               for m in delta.operation.manifests(delta))          # merged on attempt 1
    other = rival(mem)
    assert isinstance(other.rollback_to(before), Committed)
    delta.run()
    outcome = table.adopt(delta)
    assert isinstance(outcome, Committed) and outcome.attempts == 2, outcome
    assert ids_of(table.scan()) == [1, 7]
    assert {t.data_sequence_number for t in table.plan_files()} == {1, 3}
