"""Row lineage columns below v3 (Iceberg spec "Row Lineage"; impl/table/scan.py
`check_lineage_columns`): a v1 or v2 table has no `_row_id` or `_last_updated_sequence_number`,
so every read of impl/table that names them is refused with UnsupportedFormatVersion naming
them and the table's version, never answered with a column of nulls; a v3 table, an upgraded
one and time travel on a table now at v3 read them. The CLI and Spark use the same check
(tests/impl/cli/test_cli_lineage_refusal.py, tests/spark/test_spark_lineage_refusal.py)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from icefloe.impl.format import types as T
from icefloe.impl.format.metadata import UnsupportedFormatVersion
from icefloe.impl.outcomes import require_committed
from icefloe.impl.table import scan as S
from icefloe.impl.table.table import create_table
from table_helpers import FAST_RETRY, SCHEMA, memory_stack, rows

ROW_ID, SEQ = "_row_id", "_last_updated_sequence_number"


def _table(stack, version: int, name: str = "t"):
    return create_table(stack.catalog, f"db.{name}", SCHEMA, None, f"{stack.root}/db/{name}", FAST_RETRY,
                        io=stack.io, env=stack.env(), format_version=version)


def expected_refusal(location: str, version: int, asked: list[str]) -> str:
    """The refusal's text, spelled out by hand (so a reworded or misdirected message fails)."""
    steps = {1: "--format-version 2, then --format-version 3", 2: "--format-version 3"}[version]
    return (f"format-version: {', '.join(asked)}: row lineage needs format v3; the table at {location} is "
            f"v{version} (upgrade it: icefloe upgrade TABLE {steps})")


class _NoPlanning:
    """A tree reader that fails if asked for a manifest: the refusal comes before planning."""

    def manifests(self, snapshot):
        raise AssertionError("planned a read that must be refused first")

    def reading(self):
        raise AssertionError("planned a read that must be refused first")


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("columns,asked", [(["id", ROW_ID], [ROW_ID]), ([SEQ], [SEQ]),
                                           ([ROW_ID, "id", SEQ], [ROW_ID, SEQ])])
def test_below_v3_every_read_refuses_the_lineage_columns_by_name(version, columns, asked):
    """Goal: on v1 and v2 Table.scan (current, by snapshot id, by ref), scan.scan and
    scan.scan_batches refuse the lineage columns with one error type and one message naming
    the columns asked and the table's version, before any manifest is read, where they
    used to return nulls; the other columns still read. Method: a table of two snapshots,
    each read path's exception against the message written out by hand."""
    stack = memory_stack()
    table = _table(stack, version)
    require_committed(table.append(rows([1, 2])))
    first = table.current_snapshot().snapshot_id
    require_committed(table.create_tag("t1", first))
    require_committed(table.append(rows([3])))
    m = table.metadata
    reads = {
        "Table.scan": lambda: table.scan(columns=columns),
        "Table.scan snapshot_id": lambda: table.scan(snapshot_id=first, columns=columns),
        "Table.scan ref": lambda: table.scan(ref="t1", columns=columns),
        "Table.scan filter": lambda: table.scan("id > 1", columns=columns),
        "scan.scan": lambda: S.scan(table.io, m, m.current_snapshot(), columns=columns, tree=_NoPlanning()),
        "scan.scan_batches": lambda: next(S.scan_batches(table.io, m, m.current_snapshot(), columns=columns,
                                                         tree=_NoPlanning())),
    }
    want = expected_refusal(m.location, version, asked)
    for name, read in reads.items():
        with pytest.raises(UnsupportedFormatVersion) as e:
            read()
        assert str(e.value) == want, name
    assert sorted(table.scan(columns=["id"]).column("id").to_pylist()) == [1, 2, 3]
    assert sorted(table.scan(snapshot_id=first, columns=["id", "cat"]).column("id").to_pylist()) == [1, 2]


def test_v3_upgraded_and_time_travel_read_the_lineage_columns():
    """Goal: the refusal is the table's *current* version's: a v3 table reads ids; a v2
    table upgraded to v3 reads nulls for files without first_row_id (spec "Row Lineage for
    Upgraded Tables"), also by time travel to a snapshot taken while it was v2, and ids
    once a v3 commit assigns them; scan_batches gives what scan gives. Method: a native v3
    table and an upgraded one, each read by every path, values written out by hand."""
    stack = memory_stack()
    v3 = _table(stack, 3, "v3")
    require_committed(v3.append(rows([10, 11])))
    require_committed(v3.append(rows([12])))
    got = v3.scan(columns=["id", ROW_ID, SEQ]).sort_by("id").to_pylist()
    assert [(r["id"], r[ROW_ID], r[SEQ]) for r in got] == [(10, 0, 1), (11, 1, 1), (12, 2, 2)]

    up = _table(stack, 2, "up")
    require_committed(up.append(rows([1, 2])))
    old = up.current_snapshot().snapshot_id
    with pytest.raises(UnsupportedFormatVersion):
        up.scan(columns=[ROW_ID])
    require_committed(up.upgrade_format_version(3))
    assert up.scan(columns=["id", ROW_ID, SEQ]).sort_by("id").to_pylist() == [
        {"id": 1, ROW_ID: None, SEQ: None}, {"id": 2, ROW_ID: None, SEQ: None}]
    require_committed(up.append(rows([3])))
    now = up.scan(columns=["id", ROW_ID]).sort_by("id")
    assert sorted(now.column(ROW_ID).to_pylist()) == [0, 1, 2]  # in manifest-list order: the new one first
    travel = up.scan(snapshot_id=old, columns=["id", ROW_ID, SEQ]).sort_by("id")
    assert travel.to_pylist() == [{"id": 1, ROW_ID: None, SEQ: None}, {"id": 2, ROW_ID: None, SEQ: None}]
    m = up.metadata
    batches = list(S.scan_batches(up.io, m, m.current_snapshot(), columns=["id", ROW_ID], schema=m.schema()))
    assert pa.concat_tables(batches).sort_by("id").equals(now)


def test_a_column_of_the_tables_own_is_not_taken_for_lineage():
    """Goal: a name the schema holds as a column of its own is that column, not lineage,
    so the check refuses only names the table does not define (as `icefloe scan --columns`
    always did); without a schema every lineage name counts. Method: the check on a v2
    table's metadata with and without a schema holding `_row_id`."""
    stack = memory_stack()
    table = _table(stack, 2)
    own = T.Schema(SCHEMA.fields + (T.NestedField(4, ROW_ID, T.STRING, False),), 0)
    m = table.metadata
    assert S.check_lineage_columns(m, ["id", ROW_ID], own) == []
    with pytest.raises(UnsupportedFormatVersion, match=f"{SEQ}: row lineage needs format v3"):
        S.check_lineage_columns(m, [ROW_ID, SEQ], own)
    with pytest.raises(UnsupportedFormatVersion, match=f"{ROW_ID}: row lineage needs format v3"):
        S.check_lineage_columns(m, [ROW_ID])
    assert S.check_lineage_columns(m, None) == [] and S.check_lineage_columns(m, ["id"]) == []
