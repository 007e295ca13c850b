"""User columns named like the row lineage metadata columns (Iceberg spec "Reserved Field
IDs", "Row Lineage"; impl/table/producer.py `carries_lineage`, `check_lineage_names`).

What Iceberg says and does, and so icefloe:
- the spec reserves the field ids (above 2147483447: `_row_id` is 2147483540,
  `_last_updated_sequence_number` 2147483539), not the names; Iceberg-Java's core does not
  refuse the names when a table is created, a column added or renamed, or a table
  upgraded to v3 (Schema.checkCompatibility checks types and defaults only). So a table
  may have a column named `_row_id`; icefloe tells lineage from it by the reserved id;
- on v1/v2 such a column is data like any other: appended, scanned (`columns=["_row_id"]`
  is that column), deleted copy-on-write and merge-on-read, compacted and updated with
  its values kept;
- on v3 the name is still allowed, reads return the user's column, and operations that
  move no row work (append, a deletion vector); an operation that moves rows to new files
  (copy-on-write delete or update, merge-on-read update, compaction) must write their
  lineage beside the table's columns under the same name, which Iceberg-Java also cannot
  do (MetadataColumns.schemaWithRowLineage -> two fields of one name -> refused): it is
  refused with SchemaMismatch naming the column, nothing committed, until it is renamed;
- a schema using a reserved field id is refused (spec: tables must not use them).
"""
from __future__ import annotations

import io as _io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.impl.format import types as T
from icefloe.impl.outcomes import InvalidArgument, require_committed
from icefloe.impl.table import schema_evolution as SE
from icefloe.impl.table.append_schema import SchemaMismatch
from icefloe.impl.table.scan import LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID, ROW_ID_FIELD_ID
from icefloe.impl.table.table import create_table
from delete_writers import position_delete_file
from table_helpers import FAST_RETRY, memory_stack

ROW_ID, SEQ = "_row_id", "_last_updated_sequence_number"
# The user's own columns: `_row_id` a string (it cannot pass for a long), and
# `_last_updated_sequence_number` a long (it could pass for lineage, silently).
ARROW = pa.schema([pa.field("id", pa.int64()), pa.field("cat", pa.string()), pa.field(ROW_ID, pa.string()),
                   pa.field(SEQ, pa.int64())])
SCHEMA = T.schema_from_arrow(ARROW)
PLAIN = T.Schema((T.NestedField(1, "id", T.LONG, False), T.NestedField(2, "cat", T.STRING, False)))


def _rows(ids, cat="a") -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "cat": [cat] * len(ids), ROW_ID: [f"user-{i}" for i in ids],
                     SEQ: [1000 + i for i in ids]}, schema=ARROW)


def _table(stack, version: int, schema=SCHEMA, name="t"):
    return create_table(stack.catalog, f"db.{name}", schema, None, f"{stack.root}/db/{name}", FAST_RETRY,
                        io=stack.io, env=stack.env(), format_version=version)


def _run(table, op):
    commit = table.begin(op)
    commit.run()
    return require_committed(table.adopt(commit))


def _by_id(table, **scan) -> dict[int, tuple]:
    return {r["id"]: (r["cat"], r[ROW_ID], r[SEQ]) for r in table.scan(**scan).to_pylist()}


def _user(ids, cat="a") -> dict[int, tuple]:
    return {i: (cat, f"user-{i}", 1000 + i) for i in ids}


def _file_ids(table) -> list[dict[str, int]]:
    """Each live data file's columns as physically written: name -> field id."""
    out = []
    for task in table.plan_files():
        t = pq.read_table(_io.BytesIO(table.io.get(task.data_file.file_path)))
        out.append({f.name: int(f.metadata[b"PARQUET:field_id"]) for f in t.schema})
    return out


def _assert_files_hold_only_user_columns(table):
    """No data file holds a column under a lineage id; the user's columns keep their own ids."""
    want = {f.name: f.field_id for f in table.metadata.schema().fields}
    for ids in _file_ids(table):
        assert ids == want, ids


# -- v1 and v2: data like any other column ----------------------------------------------------

@pytest.mark.parametrize("version", [1, 2])
def test_append_and_scan_keep_a_user_column_named_like_lineage(version):
    """Goal: below v3 a column named `_row_id` (a string) or `_last_updated_sequence_number`
    appends and reads as the user's data; `columns=[...]` and a filter name that column.
    Method: two appends, every read path against the values written; the files hold the
    columns under their own ids. (Before: the append failed, a string does not fit a long.)"""
    table = _table(memory_stack(), version)
    require_committed(table.append(_rows([1, 2])))
    require_committed(table.append(_rows([3])))
    assert _by_id(table) == _user([1, 2, 3])
    picked = table.scan(columns=[ROW_ID, SEQ, "id"])
    assert picked.column_names == [ROW_ID, SEQ, "id"]
    assert sorted(picked.column(ROW_ID).to_pylist()) == ["user-1", "user-2", "user-3"]
    assert picked.schema.field(ROW_ID).type == pa.string()
    assert table.scan(f"{ROW_ID} = 'user-2'", columns=["id"]).column("id").to_pylist() == [2]
    assert table.scan(f"{SEQ} > 1002", columns=["id"]).column("id").to_pylist() == [3]
    _assert_files_hold_only_user_columns(table)


@pytest.mark.parametrize("version", [1, 2])
def test_copy_on_write_delete_overwrite_and_compaction_keep_the_users_values(version):
    """Goal: the operations that rewrite rows (copy-on-write delete, overwrite by filter,
    compaction) write the user's `_row_id` / `_last_updated_sequence_number` values as
    they were, never as lineage. Method: each operation, then the rows and the files'
    field ids."""
    table = _table(memory_stack(), version)
    require_committed(table.append(_rows([1, 2, 3])))
    require_committed(table.append(_rows([4, 5])))
    require_committed(table.delete("id = 2", mode="copy-on-write"))
    assert _by_id(table) == _user([1, 3, 4, 5])
    require_committed(table.overwrite(_rows([6], cat="b"), "id = 5"))
    assert _by_id(table) == {**_user([1, 3, 4]), **_user([6], "b")}
    before = len(table.plan_files())
    require_committed(table.rewrite_files())
    assert len(table.plan_files()) < before
    assert _by_id(table) == {**_user([1, 3, 4]), **_user([6], "b")}
    _assert_files_hold_only_user_columns(table)


def test_merge_on_read_position_deletes_then_compaction_on_v2_keep_the_users_values():
    """Goal: a v2 merge-on-read delete (a position delete file) and the compaction that
    applies it keep the user's lineage-named columns. Method: delete position 1 of the
    first file, scan, compact, scan again; the compacted file holds user columns only."""
    table = _table(memory_stack(), 2)
    require_committed(table.append(_rows([1, 2, 3])))
    require_committed(table.append(_rows([4])))
    first = next(t.data_file for t in table.plan_files() if t.data_file.record_count == 3)
    require_committed(table.add_delete_files([position_delete_file(table, [(first.file_path, 1)])],
                                             [first.file_path]))
    assert _by_id(table) == _user([1, 3, 4])
    require_committed(table.rewrite_files())
    assert [t.data_file.record_count for t in table.plan_files()] == [3]  # the delete applied
    assert _by_id(table) == _user([1, 3, 4])
    _assert_files_hold_only_user_columns(table)


def test_update_on_v2_sets_and_keeps_the_users_lineage_named_columns():
    """Goal: on v2 an update may set the user's `_row_id` (it is that column, not lineage),
    and an update of another column keeps the user's `_last_updated_sequence_number`
    (before, it was nulled as if it were lineage). Method: two copy-on-write updates."""
    table = _table(memory_stack(), 2)
    require_committed(table.append(_rows([1, 2])))
    require_committed(table.update({"cat": "z"}, "id = 1"))
    assert _by_id(table) == {**_user([1], "z"), **_user([2])}
    require_committed(table.update({ROW_ID: "mine", SEQ: 7}, "id = 2"))
    assert _by_id(table) == {**_user([1], "z"), 2: ("a", "mine", 7)}
    _assert_files_hold_only_user_columns(table)


def test_an_update_keeps_a_user_last_updated_sequence_number_column_alone():
    """Goal: a v2 table whose only lineage-named column is a long `_last_updated_sequence_number`
    (it appends even by name-based detection) keeps that column's values through an update
    of another column: an update nulls lineage found by its reserved id, never a column
    by its name. Method: update `cat`, then the values written by hand."""
    arrow = pa.schema([pa.field("id", pa.int64()), pa.field("cat", pa.string()), pa.field(SEQ, pa.int64())])
    table = _table(memory_stack(), 2, T.schema_from_arrow(arrow))
    require_committed(table.append(pa.table({"id": [1, 2], "cat": ["a", "a"], SEQ: [11, 12]}, schema=arrow)))
    require_committed(table.update({"cat": "z"}, "id = 1", mode="copy-on-write"))
    assert {r["id"]: (r["cat"], r[SEQ]) for r in table.scan().to_pylist()} == {1: ("z", 11), 2: ("a", 12)}


# -- v3: allowed as Java allows it; rows are not moved beside a column of that name ------------

def test_v3_with_a_user_row_id_reads_it_and_refuses_to_move_rows_by_name():
    """Goal: a v3 table may be created with a column named `_row_id` (Java's core allows
    it); appends and reads give the user's values (`columns=["_row_id"]` is that column,
    never lineage); a deletion vector moves no row and commits; each operation that would
    move rows with their lineage is SchemaMismatch naming the column, nothing committed,
    while a copy-on-write delete that drops a file whole moves none and commits. Method:
    each operation against the head snapshot id and the rows afterwards."""
    table = _table(memory_stack(), 3)
    require_committed(table.append(_rows([1, 2, 3])))
    require_committed(table.append(_rows([4])))
    assert _by_id(table) == _user([1, 2, 3, 4])
    assert sorted(table.scan(columns=[ROW_ID]).column(ROW_ID).to_pylist()) == [f"user-{i}" for i in (1, 2, 3, 4)]
    require_committed(table.delete("id = 3", mode="merge-on-read"))  # a DV: no row moves
    assert _by_id(table) == _user([1, 2, 4])
    require_committed(table.append(_rows([5])))
    require_committed(table.delete("id = 5", mode="copy-on-write"))  # its file dropped whole: no row moves
    require_committed(table.update({"cat": "z"}, "id = 99", mode="merge-on-read"))  # matches nothing
    assert _by_id(table) == _user([1, 2, 4])
    head = table.current_snapshot().snapshot_id
    moving = {
        "copy-on-write delete": lambda: table.delete("id = 1", mode="copy-on-write"),
        "copy-on-write update": lambda: table.update({"cat": "z"}, "id = 1", mode="copy-on-write"),
        "merge-on-read update": lambda: table.update({"cat": "z"}, "id = 1", mode="merge-on-read"),
        "overwrite by filter": lambda: table.overwrite(_rows([9]), "id = 1"),
        "compaction": lambda: table.rewrite_files(),
    }
    for name, op in moving.items():
        with pytest.raises(SchemaMismatch) as e:
            op()
        assert str(e.value) == (f"columns '{ROW_ID}' (field id 3) and '{SEQ}' (field id 4) have the name of a row "
                                "lineage column: on a v3 table rows moved to a new file keep their lineage beside "
                                "the table's columns, under that name; rename them first"), name
        assert table.refresh().current_snapshot().snapshot_id == head, name
    assert _by_id(table) == _user([1, 2, 4])
    _assert_files_hold_only_user_columns(table)


def _v3_lineage(table) -> dict[int, tuple]:
    return {r["id"]: (r[ROW_ID], r[SEQ]) for r in table.scan(columns=["id", ROW_ID, SEQ]).to_pylist()}


def test_v3_column_added_by_evolution_blocks_compaction_until_renamed_and_lineage_survives():
    """Goal: on v3 a column named `_last_updated_sequence_number` may be added (as Java's
    UpdateSchema allows); compaction is then refused naming it; renamed, compaction runs
    and every row keeps its `_row_id` and sequence number (spec "Row Lineage"). Method:
    lineage read before the add and after the rename and compaction."""
    table = _table(memory_stack(), 3, PLAIN)
    require_committed(table.append(pa.table({"id": [1, 2], "cat": ["a", "a"]})))
    require_committed(table.append(pa.table({"id": [3], "cat": ["b"]})))
    lineage = _v3_lineage(table)
    assert sorted(r for r, _ in lineage.values()) == [0, 1, 2]
    _run(table, SE.add_column_change(SEQ, "long"))
    assert table.scan(columns=[SEQ]).column(SEQ).to_pylist() == [None, None, None]  # the user's, not lineage
    head = table.current_snapshot().snapshot_id
    with pytest.raises(SchemaMismatch, match=f"^column '{SEQ}' \\(field id 3\\) has the name of a row lineage "
                                             "column: .*; rename it first$"):
        table.rewrite_files()
    assert table.refresh().current_snapshot().snapshot_id == head
    _run(table, SE.rename_column_change(SEQ, "user_seq"))
    require_committed(table.rewrite_files())
    assert len(table.plan_files()) == 1
    assert _v3_lineage(table) == lineage


def test_upgrade_to_v3_keeps_a_user_row_id_and_refuses_moving_rows_until_renamed():
    """Goal: a v2 table with a user `_row_id` upgrades to v3 (Java does not refuse it); its
    values read as before; a copy-on-write delete is refused naming the column; after a
    rename it commits and the user's values stay. Method: upgrade, delete, rename, delete."""
    table = _table(memory_stack(), 2)
    require_committed(table.append(_rows([1, 2, 3])))
    require_committed(table.upgrade_format_version(3))
    assert _by_id(table) == _user([1, 2, 3])
    with pytest.raises(SchemaMismatch, match=f"^columns '{ROW_ID}' \\(field id 3\\) and '{SEQ}' \\(field id 4\\) have"):
        table.delete("id = 2", mode="copy-on-write")
    _run(table, SE.rename_column_change(ROW_ID, "user_row_id"))
    _run(table, SE.rename_column_change(SEQ, "user_seq"))
    require_committed(table.delete("id = 2", mode="copy-on-write"))
    got = {r["id"]: (r["user_row_id"], r["user_seq"]) for r in table.scan().to_pylist()}
    assert got == {1: ("user-1", 1001), 3: ("user-3", 1003)}
    # the upgraded rows had no ids; moved after the upgrade they take new ones (spec
    # "Row Lineage for Upgraded Tables"), and the files hold lineage under its ids only
    lineage = _v3_lineage(table)
    assert sorted(lineage) == [1, 3] and all(r is not None for r, _ in lineage.values())
    assert all(ROW_ID_FIELD_ID in ids.values() and LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID in ids.values()
               for ids in _file_ids(table))


# -- reserved field ids ---------------------------------------------------------------------

@pytest.mark.parametrize("version", [2, 3])
def test_a_schema_using_a_reserved_field_id_is_refused(version):
    """Goal: a column with a field id above 2147483447 (a metadata column's, here
    `_row_id`'s 2147483540 under another name) is refused at create and by an add that would
    take one; the id 2147483447 itself is allowed. Method: create, then add a column."""
    stack = memory_stack()
    bad = T.Schema((T.NestedField(1, "id", T.LONG, False), T.NestedField(ROW_ID_FIELD_ID, "x", T.LONG, False)))
    with pytest.raises(InvalidArgument, match="column 'x' has field id 2147483540: ids above 2147483447 are reserved"):
        _table(stack, version, bad, name="bad")
    edge = T.Schema((T.NestedField(2147483447, "id", T.LONG, False),))
    table = _table(stack, version, edge, name="edge")
    with pytest.raises(InvalidArgument, match="column 'y' has field id 2147483448"):
        _run(table, SE.add_column_change("y", "long"))



@pytest.mark.parametrize("nested", [T.StructType((T.NestedField(ROW_ID_FIELD_ID, "x", T.LONG, False),)),
                                    T.ListType(ROW_ID_FIELD_ID, T.LONG),
                                    T.MapType(5, T.STRING, ROW_ID_FIELD_ID, T.LONG)],
                         ids=["struct_member", "list_element", "map_value"])
def test_a_nested_field_using_a_reserved_field_id_is_refused(nested):
    """Goal: the reserved range holds for every field id of a schema, a nested field's too
    (readers look lineage up by id over the whole schema: scan.read_task's field_by_id), at
    create and when schema evolution adds a member to a struct. Method: create with a
    struct member, list element or map value at `_row_id`'s id; then add a struct member
    whose new id would be 2147483448."""
    stack = memory_stack()
    bad = T.Schema((T.NestedField(1, "id", T.LONG, False), T.NestedField(2, "c", nested, False)))
    where = {T.StructType: "c.x", T.ListType: "c.element", T.MapType: "c.value"}[type(nested)]
    with pytest.raises(InvalidArgument, match=f"column '{where}' has field id 2147483540: ids above 2147483447 "
                                              "are reserved"):
        _table(stack, 2, bad, name="bad")
    edge = T.Schema((T.NestedField(1, "id", T.LONG, False),
                     T.NestedField(2147483446, "s", T.StructType((T.NestedField(2147483447, "a", T.LONG, False),)),
                                   False)))
    table = _table(stack, 2, edge, name="edge")  # 2147483447 itself, nested, is allowed
    with pytest.raises(InvalidArgument, match="column 's.b' has field id 2147483448"):
        _run(table, SE.add_column_change("s.b", "long"))

def test_v3_lineage_asked_beside_a_user_column_of_a_lineage_name_is_refused_by_name():
    """Goal: on a v3 table with a column of its own named `_row_id` (and none named
    `_last_updated_sequence_number`), `columns=["_row_id"]` is that column, and asking for
    `_last_updated_sequence_number` (lineage) is SchemaMismatch naming both, before any
    file is read: the two lineage columns would be read beside the table's under the same
    name (it was an ArrowInvalid from deep in the read). Method: Table.scan and the
    streamed scan_batches (the CLI's) with each set of columns."""
    arrow = pa.schema([pa.field("id", pa.int64()), pa.field(ROW_ID, pa.string())])
    table = _table(memory_stack(), 3, T.schema_from_arrow(arrow))
    require_committed(table.append(pa.table({"id": [1, 2], ROW_ID: ["u1", "u2"]}, schema=arrow)))
    assert sorted(table.scan(columns=["id", ROW_ID]).column(ROW_ID).to_pylist()) == ["u1", "u2"]
    want = (f"{SEQ}: the table has a column named '{ROW_ID}', the name of a row lineage column, so the lineage "
            "columns cannot be read beside it (rename it first)")
    from icefloe.impl.table import scan as S
    streamed = lambda: list(S.scan_batches(table.io, table.metadata, table.current_snapshot(),  # noqa: E731
                                           columns=["id", SEQ]))  # (the CLI's streamed scan)
    for read in (lambda: table.scan(columns=["id", SEQ]), streamed):
        with pytest.raises(SchemaMismatch) as e:
            read()
        assert str(e.value) == want
