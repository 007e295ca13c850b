"""Row-level updates through the Table API (impl/table/row_updates.py; issue 29 item 3): on
format v3 an updated row keeps its `_row_id` (materialised in the file written) and takes
the update's sequence number, an unmodified row carried by copy-on-write keeps both,
inserted rows get fresh ids, and next-row-id advances by the snapshot's added-rows (spec
"Row Lineage", "Snapshot Row IDs"); copy-on-write and merge-on-read (DVs) alike."""
from __future__ import annotations

import io as _io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from icefloe.impl.format.manifest import ManifestContent
from icefloe.impl.format.metadata import UnsupportedFormatVersion
from icefloe.impl.outcomes import Committed, Conflict, InvalidArgument, require_committed
from icefloe.impl.table.commit import SWAP
from icefloe.impl.table.files import LIVE
from icefloe.impl.table.row_updates import UpdateRows, UpdateWhere
from icefloe.impl.table.scan import LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID, ROW_ID_FIELD_ID
from icefloe.impl.table.table import Table, create_table

from table_helpers import FAST_RETRY, SCHEMA, memory_stack, rows, step_to

MODES = ("copy-on-write", "merge-on-read")
LINEAGE = ["id", "cat", "_row_id", "_last_updated_sequence_number"]


def _table(stack, version=3, name="t"):
    return create_table(stack.catalog, f"db.{name}", SCHEMA, None, f"{stack.root}/db/{name}", FAST_RETRY,
                        io=stack.io, env=stack.env(), format_version=version)


def _lineage(table) -> dict[int, tuple]:
    """id -> (cat, _row_id, _last_updated_sequence_number) as icefloe's scan reads them."""
    return {r["id"]: (r["cat"], r["_row_id"], r["_last_updated_sequence_number"])
            for r in table.scan(columns=LINEAGE).to_pylist()}


def _added_data_files(table):
    snap = table.current_snapshot()
    return [e for m in table.tree.manifests(snap) if m.content == ManifestContent.DATA
            for e in table.tree.entries(m) if e.status in LIVE and e.snapshot_id == snap.snapshot_id
            and e.status.name == "ADDED"]


def _file_lineage(stack, data_file) -> list[tuple]:
    """(id, _row_id, _last_updated_sequence_number) as physically written in a data file,
    the lineage columns found by their reserved field ids (None: the column is absent)."""
    t = pq.read_table(_io.BytesIO(stack.io.get(data_file.file_path)))
    by_id = {int(f.metadata[b"PARQUET:field_id"]): f.name for f in t.schema if f.metadata}
    col = {fid: t.column(name).to_pylist() if name else None for fid, name in
           ((fid, by_id.get(fid)) for fid in (ROW_ID_FIELD_ID, LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID))}
    ids = t.column("id").to_pylist()
    rid, seq = col[ROW_ID_FIELD_ID], col[LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID]
    return [(ids[i], None if rid is None else rid[i], None if seq is None else seq[i]) for i in range(len(ids))]


@pytest.mark.parametrize("mode", MODES)
def test_updated_rows_keep_their_row_id_and_take_the_updates_sequence_number(mode):
    """Goal: spec "Row Lineage": after an update the updated rows read their old _row_id and
    the update's sequence number, the others read what they read before, an append after it
    gets fresh ids from next-row-id, and next-row-id grew by the update's added-rows
    (merge-on-read: exactly the updated rows). Method: two appends, update two rows (one
    per file), compare the lineage columns before and after; then append."""
    stack = memory_stack()
    table = _table(stack)
    require_committed(table.append(rows([1, 2, 3])))
    require_committed(table.append(rows([4, 5])))
    before = _lineage(table)
    assert before == {1: ("a", 0, 1), 2: ("a", 1, 1), 3: ("a", 2, 1), 4: ("a", 3, 2), 5: ("a", 4, 2)}
    next_before = table.metadata.next_row_id
    require_committed(table.update({"cat": "z"}, "id in (2, 4)", mode=mode))
    snap = table.current_snapshot()
    assert snap.summary["operation"] == "overwrite" and snap.sequence_number == 3
    after = _lineage(table)
    assert after == {**before, 2: ("z", 1, 3), 4: ("z", 3, 3)}
    assert snap.first_row_id == next_before and table.metadata.next_row_id == next_before + snap.added_rows
    added = _added_data_files(table)
    assert snap.added_rows >= sum(e.data_file.record_count for e in added)
    if mode == "merge-on-read":  # only the updated rows are written, in one new data manifest
        assert snap.added_rows == 2 and sum(e.data_file.record_count for e in added) == 2
        assert sorted(t.deletion_vector is not None for t in table.plan_files()) == [False, True, True]
    require_committed(table.append(rows([6])))
    assert _lineage(table)[6] == ("a", table.current_snapshot().first_row_id, 4)
    ids = [v[1] for v in _lineage(table).values()]
    assert len(ids) == len(set(ids)) and max(ids) < table.metadata.next_row_id


@pytest.mark.parametrize("mode", MODES)
def test_the_written_files_materialise_row_ids_and_null_the_updated_rows_sequence_number(mode):
    """Goal: the files an update writes hold each moved row's _row_id, a null
    _last_updated_sequence_number for an updated row and the copied value for an unmodified
    one (spec "Row Lineage": rules 1-3 for a row moved to a new data file). Method: read the
    new Parquet files directly and find the lineage columns by their reserved field ids."""
    stack = memory_stack()
    table = _table(stack)
    require_committed(table.append(rows([1, 2, 3])))
    require_committed(table.append(rows([4, 5])))
    require_committed(table.update({"cat": "z", "v": 9.5}, "id = 2", mode=mode))
    written = sorted(x for e in _added_data_files(table) for x in _file_lineage(stack, e.data_file))
    if mode == "copy-on-write":   # the file of rows 1-3 rewritten: survivors copied, row 2 updated
        assert written == [(1, 0, 1), (2, 1, None), (3, 2, 1)]
    else:                         # only row 2 written again; a DV deletes its old position
        assert written == [(2, 1, None)]
    assert _lineage(table)[2] == ("z", 1, 3)
    assert table.scan(row_filter="id = 2").to_pylist() == [{"id": 2, "cat": "z", "v": 9.5}]


@pytest.mark.parametrize("mode", MODES)
def test_a_row_updated_twice_keeps_one_id_and_the_second_updates_sequence_number(mode):
    """Goal: a row's id survives repeated updates, and a merge-on-read update of a row that
    lives in a file written by an earlier update replaces that file's DV-free row with a DV
    (one live DV per file). Method: update the same row twice, then delete another row."""
    stack = memory_stack()
    table = _table(stack)
    require_committed(table.append(rows([1, 2, 3])))
    require_committed(table.update({"cat": "x"}, "id = 2", mode=mode))
    require_committed(table.update({"cat": "y"}, "id in (2, 3)", mode=mode))
    assert _lineage(table) == {1: ("a", 0, 1), 2: ("y", 1, 3), 3: ("y", 2, 3)}
    require_committed(table.delete("id = 1", mode=mode))
    assert _lineage(table) == {2: ("y", 1, 3), 3: ("y", 2, 3)}
    dvs = [t.deletion_vector.referenced_data_file for t in table.plan_files() if t.deletion_vector]
    assert len(dvs) == len(set(dvs))


@pytest.mark.parametrize("mode", MODES)
def test_an_update_on_an_upgraded_table_gives_rows_ids_from_the_new_file(mode):
    """Goal: a row written before the upgrade to v3 has no _row_id; updated, it is written
    with a null id and inherits one from its new file like a new row ("Row Lineage for
    Upgraded Tables"), unique beside the ids the same snapshot assigns to the others.
    Method: v2 table, append, upgrade, update one row in each mode."""
    stack = memory_stack()
    table = _table(stack, version=2)
    require_committed(table.append(rows([1, 2])))
    require_committed(table.upgrade_format_version(3))
    assert {v[1] for v in _lineage(table).values()} == {None}
    require_committed(table.update({"cat": "z"}, "id = 1", mode=mode))
    got = _lineage(table)
    assert got[1][0] == "z" and got[1][2] == table.current_snapshot().sequence_number
    assert got[1][1] is not None and got[1][1] < table.metadata.next_row_id
    # copy-on-write: both rows in the new file; merge-on-read: row 2 stays in its old file,
    # whose manifest this first snapshot after the upgrade assigns a first_row_id (spec)
    assert got[2][1] is not None and got[2][1] != got[1][1] and got[2][1] < table.metadata.next_row_id


def test_a_retried_update_keeps_row_ids_and_takes_its_sequence_number_from_its_base():
    """Goal: an update that loses the race to an append retries on the new base: the updated
    row keeps its id, reads the sequence number the update finally got, and the append's
    rows and the update's new file take disjoint ids. Method: step a merge-on-read update
    to its swap, append meanwhile, let it retry."""
    stack = memory_stack()
    table = _table(stack)
    require_committed(table.append(rows([1, 2, 3])))
    other = Table(stack.catalog, "db.t", stack.io, stack.env())
    commit = table.new_commit(UpdateRows({"cat": "z"}, "id = 2"))
    step_to(commit, SWAP)
    require_committed(other.append(rows([7, 8])))
    outcome = commit.run()
    assert isinstance(outcome, Committed) and outcome.attempts == 2, outcome
    table.refresh()
    got = _lineage(table)
    assert got[2] == ("z", 1, table.current_snapshot().sequence_number) == ("z", 1, 3)
    assert got[7][1] == 3 and got[8][1] == 4 and table.metadata.next_row_id == 6
    assert table.current_snapshot().first_row_id == 5


@pytest.mark.parametrize("op", [UpdateRows, UpdateWhere])
def test_an_update_racing_a_delete_of_its_file_conflicts(op):
    """Goal: an update must not write back a row a concurrent delete removed: a delete of the
    same data file committed meanwhile fails the update's validation (Conflict) and the
    deleted row stays deleted. Method: step the update to its swap, delete the row through
    another handle, run the update."""
    stack = memory_stack()
    table = _table(stack)
    require_committed(table.append(rows([1, 2, 3])))
    other = Table(stack.catalog, "db.t", stack.io, stack.env())
    commit = table.new_commit(op({"cat": "z"}, "id = 2"))
    step_to(commit, SWAP)
    require_committed(other.delete("id = 2", mode="merge-on-read"))
    assert isinstance(commit.run(), Conflict)
    table.refresh()
    assert sorted(_lineage(table)) == [1, 3]


def test_update_modes_and_versions():
    """Goal: copy-on-write updates work on v1 and v2 (no lineage columns written), a
    merge-on-read update below v3 is refused by name (UnsupportedFormatVersion, nothing
    committed), and write.update.mode picks the default mode. Method: one table per case."""
    stack = memory_stack()
    for version in (1, 2):
        table = _table(stack, version=version, name=f"v{version}")
        require_committed(table.append(rows([1, 2])))
        require_committed(table.update({"cat": "z"}, "id = 1"))
        assert sorted(table.scan().column("cat").to_pylist()) == ["a", "z"]
        assert all(_file_lineage(stack, e.data_file) == [(i, None, None) for i in (2, 1)]
                   for e in _added_data_files(table))
        head = table.current_snapshot().snapshot_id
        with pytest.raises(UnsupportedFormatVersion, match="format v3"):
            table.update({"cat": "y"}, "id = 1", mode="merge-on-read")
        assert table.refresh().current_snapshot().snapshot_id == head
    table = _table(stack, name="mor")
    require_committed(table.set_properties({"write.update.mode": "merge-on-read"}))
    require_committed(table.append(rows([1, 2])))
    require_committed(table.update({"cat": "z"}, "id = 1"))
    assert any(t.deletion_vector is not None for t in table.plan_files())
    with pytest.raises(InvalidArgument, match="update mode"):
        table.update({"cat": "z"}, "id = 1", mode="merge")


@pytest.mark.parametrize("assignments, message", [
    ({}, "at least one column"),
    ({"nope": 1}, "no top-level column 'nope'"),
    ({"_row_id": 5}, "_row_id is a row lineage column"),
    ({"_last_updated_sequence_number": 5}, "row lineage column"),
    ({"id": "x"}, "id: 'x' is not a long"),
    ({"v": "fast"}, "not a double"),
])
def test_bad_assignments_are_refused_by_name_with_nothing_committed(assignments, message):
    """Goal: a caller's mistake in the SET list is an InvalidArgument naming the column and
    nothing is committed, in both modes. Method: each bad assignment on a v3 table."""
    stack = memory_stack()
    table = _table(stack)
    require_committed(table.append(rows([1, 2])))
    head = table.current_snapshot().snapshot_id
    for mode in MODES:
        with pytest.raises(InvalidArgument, match=message):
            table.update(assignments, "id = 1", mode=mode)
    assert table.refresh().current_snapshot().snapshot_id == head


def test_a_required_column_cannot_be_set_to_null():
    """Goal: null into a required column is refused by name. Method: a schema with a required
    id; update id to null."""
    from icefloe.impl.format.types import schema_from_arrow
    stack = memory_stack()
    schema = schema_from_arrow(pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string())]))
    table = create_table(stack.catalog, "db.r", schema, None, f"{stack.root}/db/r", FAST_RETRY,
                         io=stack.io, env=stack.env(), format_version=3)
    require_committed(table.append(pa.table({"id": [1], "cat": ["a"]}, schema=pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string())]))))
    with pytest.raises(InvalidArgument, match="id is required"):
        table.update({"id": None}, "id = 1")
    require_committed(table.update({"cat": None}, "id = 1"))
    assert table.scan().to_pylist() == [{"id": 1, "cat": None}]


UPDATE_OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 5)),
    st.tuples(st.sampled_from(["update-cow", "update-mor", "delete-cow", "delete-mor"]), st.integers(0, 30)),
    st.tuples(st.just("compact"), st.just(0))), min_size=1, max_size=10)


@settings(max_examples=30, deadline=None)
@given(UPDATE_OPS)
def test_update_programs_keep_each_rows_id_and_last_update(program):
    """Goal: over any sequence of appends, updates and deletes (both modes) and compactions
    on a v3 table, every row reads the value its last update gave it, the _row_id it got
    when first added (never another row's, always below next-row-id) and as
    _last_updated_sequence_number the sequence number of the snapshot that added or last
    updated it. Method: random programs against a dict model id -> (value, row id, seq)."""
    stack = memory_stack()
    table = _table(stack)
    model: dict[int, list] = {}          # id -> [cat, _row_id (None until first read), seq]
    next_id = 0
    for op, arg in program:
        if op == "append":
            new = list(range(next_id, next_id + arg))
            next_id += arg
            require_committed(table.append(rows(new)))
            seq = table.current_snapshot().sequence_number
            model.update({i: ["a", None, seq] for i in new})
        elif op == "compact":
            require_committed(table.rewrite_files(files_min=1))
        else:
            victims = sorted(i for i in model if i % 7 == arg % 7)
            if not victims:
                continue
            flt = f"id in ({', '.join(map(str, victims))})"
            kind, mode = op.split("-")
            mode = "copy-on-write" if mode == "cow" else "merge-on-read"
            if kind == "update":
                value = f"u{arg}"
                require_committed(table.update({"cat": value}, flt, mode=mode))
                seq = table.current_snapshot().sequence_number
                for i in victims:
                    model[i][0], model[i][2] = value, seq
            else:
                require_committed(table.delete(flt, mode=mode))
                for i in victims:
                    del model[i]
        got = _lineage(table)
        assert sorted(got) == sorted(model)
        for i, (cat, row_id, seq) in got.items():
            want = model[i]
            if want[1] is None:
                want[1] = row_id
            assert (cat, row_id, seq) == tuple(want), (i, (cat, row_id, seq), want)
        ids = [v[1] for v in got.values()]
        assert len(ids) == len(set(ids)) and all(0 <= i < table.metadata.next_row_id for i in ids)


@pytest.mark.parametrize("mode", MODES)
def test_an_update_of_the_partition_column_moves_rows_with_their_ids(mode):
    """Goal: setting the column a table is partitioned by writes the updated rows into the
    new partition's file, keeping their _row_id; the plan for the old partition no longer
    returns them. Method: partition by cat, move two rows from 'a' to 'b'."""
    from icefloe.impl.format.transforms import parse_partition_spec
    stack = memory_stack()
    table = create_table(stack.catalog, "db.p", SCHEMA, parse_partition_spec("cat", SCHEMA), f"{stack.root}/db/p",
                         FAST_RETRY, io=stack.io, env=stack.env(), format_version=3)
    require_committed(table.append(rows([1, 2, 3])))
    before = _lineage(table)
    require_committed(table.update({"cat": "b"}, "id in (1, 3)", mode=mode))
    assert _lineage(table) == {1: ("b", 0, 2), 2: ("a", 1, 1), 3: ("b", 2, 2)} and before[2] == ("a", 1, 1)
    assert sorted(table.scan(row_filter="cat = 'a'").column("id").to_pylist()) == [2]
    assert {t.data_file.partition for t in table.plan_files(row_filter="cat = 'b'")} == {("b",)}
