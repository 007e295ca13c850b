"""Format v3 through the Table API (issue 29 items 2-4): deletion vectors (one live DV per
data file, merged with what came before, dropped with their data file), row lineage
(first-row-id assigned on every attempt from that attempt's base) and default values."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from icefloe.impl.format.manifest import DataFileContent, ManifestContent
from icefloe.impl.format.puffin import read_dv, read_footer
from icefloe.impl.outcomes import Committed, Conflict, require_committed
from icefloe.impl.table import producer as P
from icefloe.impl.table import schema_evolution as SE
from icefloe.impl.table.commit import SWAP
from icefloe.impl.table.files import LIVE
from icefloe.impl.table.row_deletes import DeleteRows
from icefloe.impl.table.table import Table, create_table

from table_helpers import FAST_RETRY, SCHEMA, ids_of, memory_stack, rows, step_to


def _v3(stack, name="t", partition=None, version=3):
    from icefloe.impl.format.transforms import parse_partition_spec
    spec = parse_partition_spec(partition, SCHEMA) if partition else None
    return create_table(stack.catalog, f"db.{name}", SCHEMA, spec, f"{stack.root}/db/{name}", FAST_RETRY,
                        io=stack.io, env=stack.env(), format_version=version)


def _live_deletes(table: Table) -> list:
    snap = table.current_snapshot()
    return [e.data_file for m in table.tree.manifests(snap) if m.content == ManifestContent.DELETES
            for e in table.tree.entries(m) if e.status in LIVE]


def _positions(stack, dv) -> list[int]:
    return list(read_dv(stack.io.get(dv.file_path), dv.content_offset, dv.content_size_in_bytes))


def test_merge_on_read_deletes_write_one_dv_per_file_holding_every_earlier_position():
    """Goal: a DV delete writes a Puffin DV the manifest points into; a second delete on
    the same file writes a DV with both deletes and removes the first in the same
    snapshot; reads apply it. Method: two merge-on-read deletes on a one-file table."""
    stack = memory_stack()
    table = _v3(stack)
    require_committed(table.append(rows(range(10))))
    (data,) = [t.data_file for t in table.plan_files()]
    require_committed(table.delete("id in (1, 2)", mode="merge-on-read"))
    (dv,) = _live_deletes(table)
    assert dv.is_deletion_vector and dv.content == DataFileContent.POSITION_DELETES
    assert (dv.referenced_data_file, dv.record_count, _positions(stack, dv)) == (data.file_path, 2, [1, 2])
    blobs, _ = read_footer(stack.io.get(dv.file_path))
    assert [(b.offset, b.length) for b in blobs] == [(dv.content_offset, dv.content_size_in_bytes)]
    assert ids_of(table.scan()) == [0, 3, 4, 5, 6, 7, 8, 9]
    require_committed(table.delete("id = 7 or id = 1", mode="merge-on-read"))
    (dv2,) = _live_deletes(table)
    assert dv2 != dv and _positions(stack, dv2) == [1, 2, 7] and dv2.record_count == 3
    again = Table(stack.catalog, "db.t", stack.io)
    assert ids_of(again.scan()) == [0, 3, 4, 5, 6, 8, 9]
    assert again.current_snapshot().operation == "delete"
    assert [t.data_file.file_path for t in again.plan_files()] == [data.file_path]


def test_concurrent_dvs_for_one_file_never_leave_two():
    """Goal: two merge-on-read deletes of one data file, interleaved: the second is refused
    (validation), so the table keeps one DV and stays readable. Method: step writer A to
    its swap, commit writer B, let A retry."""
    stack = memory_stack()
    table = _v3(stack)
    require_committed(table.append(rows(range(6))))
    other = Table(stack.catalog, "db.t", stack.io, stack.env())
    a = table.new_commit(DeleteRows("id = 1"))
    step_to(a, SWAP)
    require_committed(other.delete("id = 4", mode="merge-on-read"))
    outcome = a.run()
    assert isinstance(outcome, Conflict) and "delete" in outcome.reason
    table.refresh()
    assert len(_live_deletes(table)) == 1 and ids_of(table.scan()) == [0, 1, 2, 3, 5]


def test_dvs_of_rewritten_or_deleted_files_are_dropped():
    """Goal: compaction and copy-on-write deletes remove the DVs of the data files they
    remove, in the same snapshot. Method: DV deletes on two files, compact, then check no
    DV is live and the rows are unchanged."""
    stack = memory_stack()
    table = _v3(stack)
    require_committed(table.append(rows([1, 2, 3])))
    require_committed(table.append(rows([4, 5, 6])))
    require_committed(table.delete("id in (2, 5)", mode="merge-on-read"))
    assert len(_live_deletes(table)) == 2
    require_committed(table.rewrite_files())
    assert _live_deletes(table) == [] and ids_of(table.scan()) == [1, 3, 4, 6]
    require_committed(table.delete("id = 3", mode="merge-on-read"))
    require_committed(table.delete("id < 4"))  # copy-on-write: the file goes, with its DV
    assert _live_deletes(table) == [] and ids_of(table.scan()) == [4, 6]


@pytest.mark.parametrize("exact_bounds", [True, False])
def test_a_dv_replaces_the_v2_position_deletes_of_an_upgraded_table(exact_bounds):
    """Goal: on a table upgraded from v2, the first DV of a file holds the positions of the
    position delete files that apply to it; one whose file_path bounds show it names that
    file alone is removed in the same snapshot, one that may name others (truncated
    bounds) stays and is ignored where the DV applies. Method: v2 position delete,
    upgrade, DV delete, with full-length and truncated bounds."""
    from dataclasses import replace
    from delete_writers import position_delete_file
    from icefloe.impl.table.deletes import DELETE_FILE_PATH_ID
    stack = memory_stack()
    table = _v3(stack, version=2)
    require_committed(table.append(rows(range(5))))
    (data,) = [t.data_file for t in table.plan_files()]
    pos = position_delete_file(table, [(data.file_path, 0)])
    if exact_bounds:  # as Iceberg-Java writes them: file_path bounds are not truncated
        full = data.file_path.encode()
        pos = replace(pos, lower_bounds={**pos.lower_bounds, DELETE_FILE_PATH_ID: full},
                      upper_bounds={**pos.upper_bounds, DELETE_FILE_PATH_ID: full})
    require_committed(table.add_delete_files([pos], [data.file_path]))
    require_committed(table.upgrade_format_version(3))
    require_committed(table.delete("id = 3", mode="merge-on-read"))
    live = _live_deletes(table)
    (dv,) = [d for d in live if d.is_deletion_vector]
    assert _positions(stack, dv) == [0, 3]
    assert [d.file_path for d in live if not d.is_deletion_vector] == ([] if exact_bounds else [pos.file_path])
    assert ids_of(Table(stack.catalog, "db.t", stack.io).scan()) == [1, 2, 4]


def test_row_ids_are_first_row_id_plus_position_and_next_row_id_counts_the_rows():
    """Goal: _row_id = first_row_id + position, _last_updated_sequence_number = the file's
    data sequence number, next-row-id advanced by exactly the rows added, deleted rows
    keep their ids out. Method: two appends, a DV delete, scan the lineage columns."""
    stack = memory_stack()
    table = _v3(stack)
    require_committed(table.append(rows([10, 11, 12])))
    require_committed(table.append(rows([13, 14])))
    assert table.metadata.next_row_id == 5
    snaps = table.history()
    assert [(s.first_row_id, s.added_rows) for s in snaps] == [(0, 3), (3, 2)]
    require_committed(table.delete("id = 11", mode="merge-on-read"))
    got = table.scan(columns=["id", "_row_id", "_last_updated_sequence_number"]).sort_by("id").to_pylist()
    assert got == [{"id": 10, "_row_id": 0, "_last_updated_sequence_number": 1},
                   {"id": 12, "_row_id": 2, "_last_updated_sequence_number": 1},
                   {"id": 13, "_row_id": 3, "_last_updated_sequence_number": 2},
                   {"id": 14, "_row_id": 4, "_last_updated_sequence_number": 2}]
    assert table.metadata.next_row_id == 5  # a delete adds no rows (its list adds no data manifest)


def test_a_retried_append_takes_its_row_ids_from_the_base_it_commits_on():
    """Goal: first-row-id is assigned on every attempt from that attempt's base, never
    baked into the manifest the retry reuses (iceberg-go #1021): no two rows share an id.
    Method: step an append to its swap, commit a rival append, let the first retry."""
    stack = memory_stack()
    table = _v3(stack)
    require_committed(table.append(rows([1, 2])))
    rival = Table(stack.catalog, "db.t", stack.io, stack.env())
    a = table.begin(P.FastAppend(rows([3, 4, 5])))
    step_to(a, SWAP)
    require_committed(rival.append(rows([6, 7, 8, 9])))
    outcome = a.run()
    assert isinstance(outcome, Committed) and outcome.attempts == 2
    table.adopt(a)
    ids = table.scan(columns=["id", "_row_id"]).sort_by("id").to_pylist()
    assert sorted(r["_row_id"] for r in ids) == list(range(9))
    assert {r["id"]: r["_row_id"] for r in ids}[3] == 6  # after the rival's rows 2..5
    assert table.metadata.next_row_id == 9
    assert table.current_snapshot().first_row_id == 6


def test_upgraded_tables_read_null_row_ids_until_the_next_commit_assigns_them():
    """Goal: after an upgrade to v3 old rows have null _row_id; the next snapshot assigns
    ids to existing manifests too (spec "Row Lineage for Upgraded Tables"). Method: v2
    append, upgrade, scan, append, scan."""
    stack = memory_stack()
    table = _v3(stack, version=2)
    require_committed(table.append(rows([1, 2])))
    require_committed(table.upgrade_format_version(3))
    assert table.scan(columns=["_row_id"]).column("_row_id").to_pylist() == [None, None]
    require_committed(table.append(rows([3])))
    got = table.scan(columns=["_row_id"]).column("_row_id").to_pylist()
    assert sorted(got) == [0, 1, 2] and table.metadata.next_row_id == 3


def test_defaults_fill_old_files_on_read_and_new_writes_without_the_column():
    """Goal: initial-default is read for files written before the column; write-default is
    stored when a write omits it; a v2 table refuses a default by name. Method: add a
    column with defaults on v3 and v2, append without it, scan."""
    stack = memory_stack()
    table = _v3(stack)
    require_committed(table.append(rows([1])))
    require_committed(table._run(SE.add_column_change("n", "int", initial_default=5, write_default=9)))
    require_committed(table.append(rows([2])))
    got = {r["id"]: r["n"] for r in Table(stack.catalog, "db.t", stack.io).scan().to_pylist()}
    assert got == {1: 5, 2: 9}
    require_committed(table._run(SE.set_write_default_change("n", 10)))
    require_committed(table.append(rows([3])))
    got = {r["id"]: r["n"] for r in Table(stack.catalog, "db.t", stack.io).scan().to_pylist()}
    assert got == {1: 5, 2: 9, 3: 10}  # the initial default never changes; new writes take the new one
    require_committed(table._run(SE.add_column_change("must", "string", initial_default="x", required=True)))
    assert Table(stack.catalog, "db.t", stack.io).scan().column("must").to_pylist() == ["x", "x", "x"]
    v2 = _v3(stack, "b", version=2)
    with pytest.raises(Exception, match="default value, which needs format v3"):
        v2._run(SE.add_column_change("n", "int", initial_default=5))
    with pytest.raises(SE.SchemaEvolutionError, match="variant"):
        table._run(SE.add_column_change("v2", "variant"))
    require_committed(table._run(SE.add_column_change("ts", "timestamp_ns")))
    assert table.metadata.schema().find_field("ts").type.name == "timestamp_ns"
    assert isinstance(table.scan().schema.field("ts").type, pa.TimestampType)


def _engine_dv(stack, table, data, positions):
    """A DV as another engine writes one: its own Puffin file, described by a DataFile."""
    import uuid
    from icefloe.impl.format.manifest import DataFile
    from icefloe.impl.format.puffin import PuffinWriter
    writer = PuffinWriter({"created-by": "test engine"})
    offset, length, count = writer.add_dv(data.file_path, positions)
    raw = writer.finish()
    location = f"{table.location}/data/{uuid.uuid4()}-deletes.puffin"
    stack.io.put_if_absent(location, raw)
    return DataFile(location, "puffin", data.partition, count, len(raw), DataFileContent.POSITION_DELETES,
                    referenced_data_file=data.file_path, content_offset=offset, content_size_in_bytes=length)


def test_a_row_delta_dv_must_hold_the_old_one_and_replaces_it():
    """Goal: an engine's DV added by a row delta replaces the file's live DV only if it holds
    every position of it (else refused by name, nothing committed); it is then the one live
    DV; a second delta racing on the same file is refused (iceberg-go #1868's two DVs).
    Method: add DVs through add_delete_files, one stepped against a rival."""
    from icefloe.impl.outcomes import InvalidArgument
    stack = memory_stack()
    table = _v3(stack)
    require_committed(table.append(rows(range(6))))
    (data,) = [t.data_file for t in table.plan_files()]
    require_committed(table.add_delete_files([_engine_dv(stack, table, data, [0])]))
    with pytest.raises(InvalidArgument, match="drops 1 position"):
        table.add_delete_files([_engine_dv(stack, table, data, [4])])
    require_committed(table.add_delete_files([_engine_dv(stack, table, data, [0, 4])]))
    (dv,) = _live_deletes(table)
    assert _positions(stack, dv) == [0, 4] and ids_of(table.scan()) == [1, 2, 3, 5]
    other = Table(stack.catalog, "db.t", stack.io, stack.env())
    a = table.new_commit(P.RowDelta([_engine_dv(stack, table, data, [0, 4, 5])]))
    step_to(a, SWAP)
    require_committed(other.add_delete_files([_engine_dv(stack, other, data, [0, 1, 4])]))
    assert isinstance(a.run(), Conflict)
    table.refresh()
    (dv,) = _live_deletes(table)
    assert _positions(stack, dv) == [0, 1, 4] and ids_of(table.scan()) == [2, 3, 5]


def test_rows_keep_their_ids_through_compaction_and_copy_on_write():
    """Goal: compaction and a copy-on-write delete move rows to new files with their _row_id
    and _last_updated_sequence_number materialised (spec "Row Lineage": unmodified rows
    keep both); new rows get fresh ids. Method: two appends and a DV delete, compact,
    delete copy-on-write, overwrite; compare the lineage columns before and after."""
    stack = memory_stack()
    table = _v3(stack)
    require_committed(table.append(rows([1, 2, 3])))
    require_committed(table.append(rows([4, 5])))
    require_committed(table.delete("id = 2", mode="merge-on-read"))

    def lineage():
        out = table.scan(columns=["id", "_row_id", "_last_updated_sequence_number"]).to_pylist()
        return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in out}
    before = lineage()
    assert before == {1: (0, 1), 3: (2, 1), 4: (3, 2), 5: (4, 2)}
    require_committed(table.rewrite_files())
    assert len(table.plan_files()) == 1 and lineage() == before
    require_committed(table.delete("id = 4"))  # copy-on-write: the survivors move again
    assert lineage() == {k: v for k, v in before.items() if k != 4}
    next_id = table.metadata.next_row_id
    require_committed(table.append(rows([6])))
    assert lineage()[6] == (next_id, table.current_snapshot().sequence_number)
    ids = [v[0] for v in lineage().values()]
    assert len(ids) == len(set(ids))


def test_dvs_for_different_files_do_not_conflict():
    """Goal: a DV committed for file A is no conflict for a merge-on-read delete of file B
    (validation reads a DV's referenced_data_file; it used to take a DV as a delete of every
    file): the second retries and commits, one DV per file. Method: step B to its swap,
    commit A, let B retry."""
    stack = memory_stack()
    table = _v3(stack)
    require_committed(table.append(rows([1, 2, 3])))
    require_committed(table.append(rows([4, 5, 6])))
    other = Table(stack.catalog, "db.t", stack.io, stack.env())
    b = table.new_commit(DeleteRows("id = 5"))
    step_to(b, SWAP)
    require_committed(other.delete("id = 2", mode="merge-on-read"))
    outcome = b.run()
    assert isinstance(outcome, Committed) and outcome.attempts == 2, outcome
    table.refresh()
    assert sorted(d.record_count for d in _live_deletes(table)) == [1, 1]
    assert ids_of(table.scan()) == [1, 3, 4, 6]


V3_OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 6)),
    st.tuples(st.just("dv"), st.integers(0, 40)),
    st.tuples(st.just("cow"), st.integers(0, 40)),
    st.tuples(st.just("compact"), st.just(0)),
    st.tuples(st.just("upgrade-noop"), st.just(0))), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None)
@given(V3_OPS)
def test_v3_programs_keep_rows_row_ids_and_one_dv_per_file(program):
    """Goal: any sequence of appends, DV deletes, copy-on-write deletes and compactions on a
    v3 table reads the rows a plain model holds, every row keeps the _row_id it was given,
    ids never repeat and stay below next-row-id, and no data file has two live DVs.
    Method: random programs against a dict model (id -> _row_id at first read)."""
    stack = memory_stack()
    table = _v3(stack)
    model: set[int] = set()
    ids_of_rows: dict[int, int] = {}
    next_id = 0
    for op, arg in program:
        if op == "append":
            new = list(range(next_id, next_id + arg))
            next_id += arg
            require_committed(table.append(rows(new)))
            model |= set(new)
        elif op in ("dv", "cow"):
            victims = sorted(v for v in model if v % 41 == arg % 41 or v == arg)
            if not victims:
                continue
            flt = f"id in ({', '.join(map(str, victims))})"
            require_committed(table.delete(flt, mode="merge-on-read" if op == "dv" else "copy-on-write"))
            model -= set(victims)
        elif op == "compact":
            table.rewrite_files(files_min=1)
        else:
            assert table.upgrade_format_version(3).attempts == 0
        got = table.scan(columns=["id", "_row_id"]).to_pylist()
        assert sorted(r["id"] for r in got) == sorted(model)
        for r in got:  # a row's id never changes once given (compaction, copy-on-write included)
            assert ids_of_rows.setdefault(r["id"], r["_row_id"]) == r["_row_id"], r
        row_ids = [r["_row_id"] for r in got]
        assert len(row_ids) == len(set(row_ids)) and all(0 <= i < table.metadata.next_row_id for i in row_ids)
        dvs = [d.referenced_data_file for d in _live_deletes(table) if d.is_deletion_vector]
        assert len(dvs) == len(set(dvs))
