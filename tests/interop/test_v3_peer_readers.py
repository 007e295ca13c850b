"""What DuckDB 1.5.5 (iceberg extension, `iceberg_scan`) and pyiceberg 0.12
(`StaticTable.from_metadata`) read of icefloe's format v3 and v1 tables (issue 29 item 5;
docs/format.md "What peers read"): deletion vectors (one replacing another), row lineage
(`_row_id`, `_last_updated_sequence_number`, through updates and an upgrade), default values
(initial-default for files without the column, write-default written), and a v1 table.
Each peer's answer is compared with icefloe's own scan of the same metadata file; what a
peer does not support is asserted as the error it raises, and a departure from the spec is
asserted as found (a finding, not a pass)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.io.local import LocalStore
from icefloe.impl.outcomes import require_committed
from icefloe.impl.table import schema_evolution as SE
from icefloe.impl.table.table import create_table

ROWS = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
LINEAGE = ["_row_id", "_last_updated_sequence_number"]


def _rows(ids) -> pa.Table:
    return pa.table({"id": list(ids), "s": [f"v{i}" for i in ids]}, schema=ROWS)


def _create(root, catalog, name: str, version: int):
    table = create_table(catalog, f"db.{name}", schema_from_arrow(ROWS), None, f"file://{root}/db/{name}",
                         io=LocalStore(fsync=False), format_version=version)
    require_committed(table.append(_rows(range(0, 6))))
    require_committed(table.append(_rows(range(6, 10))))
    return table


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """icefloe's tables, each at its current metadata file:
    v3: merge-on-read delete of 1 and 7, a merge-on-read update of 3 (its DV replaces the
        first), a copy-on-write update of 8, a column added with initial-default "eu" and
        write-default "n/a", then an append without it (row 20) and one with it null (21);
    upgraded: v2 with two appends, upgraded to v3 (no first_row_id: lineage reads null);
    v1: a copy-on-write delete of 2."""
    root = tmp_path_factory.mktemp("v3-readers")
    catalog = SqlCatalog(f"sqlite:///{root}/catalog.db")
    v3 = _create(root, catalog, "v3", 3)
    require_committed(v3.delete("id in (1, 7)", mode="merge-on-read"))
    require_committed(v3.update({"s": "u3"}, "id = 3", mode="merge-on-read"))
    require_committed(v3.update({"s": "u8"}, "id = 8", mode="copy-on-write"))
    commit = v3.begin(SE.add_column_change("region", "string", initial_default="eu", write_default="n/a"))
    commit.run()
    require_committed(v3.adopt(commit))
    require_committed(v3.append(_rows([20])))
    require_committed(v3.append(pa.table({"id": [21], "s": ["v21"], "region": [None]})))
    upgraded = _create(root, catalog, "upgraded", 2)
    require_committed(upgraded.upgrade_format_version(3))
    v1 = _create(root, catalog, "v1", 1)
    require_committed(v1.delete("id = 2"))
    return {"v3": v3, "upgraded": upgraded, "v1": v1}


def _ours(table, columns) -> list[tuple]:
    return sorted(tuple(r[c] for c in columns) for r in table.scan(columns=columns).to_pylist())


def test_icefloes_own_reading_is_the_reference(tables):
    """Goal: the rows the peers are compared with are the ones the operations should give
    (so a peer agreeing with a wrong icefloe cannot pass). Method: the expected rows by hand."""
    got = _ours(tables["v3"], ["id", "s", "region"] + LINEAGE)
    assert got == [(0, "v0", "eu", 0, 1), (2, "v2", "eu", 2, 1), (3, "u3", "eu", 3, 4), (4, "v4", "eu", 4, 1),
                   (5, "v5", "eu", 5, 1), (6, "v6", "eu", 6, 2), (8, "u8", "eu", 8, 5), (9, "v9", "eu", 9, 2),
                   (20, "v20", "n/a", got[8][3], 6), (21, "v21", None, got[9][3], 7)]
    assert got[8][3] == got[9][3] - 1 == tables["v3"].metadata.next_row_id - 2
    assert _ours(tables["upgraded"], ["id"] + LINEAGE) == [(i, None, None) for i in range(10)]
    assert [r[0] for r in _ours(tables["v1"], ["id"])] == [0, 1, 3, 4, 5, 6, 7, 8, 9]


def test_duckdb_reads_v3_dvs_row_lineage_and_defaults_and_v1(tables):
    """Goal: what DuckDB 1.5.5's iceberg_scan reads, checked: icefloe's v3 rows with both DVs
    applied and the defaults filled, `_row_id` and `_last_updated_sequence_number` equal to
    icefloe's (ids kept through both updates), and a v1 table's rows. Method: iceberg_scan
    of each current metadata file beside icefloe's scan."""
    from icefloe.conformance.engines.duckdb_engine import connect
    con = connect()

    def duck(name, columns):
        sql = f"SELECT {', '.join(columns)} FROM iceberg_scan('{tables[name].metadata_location}')"
        return sorted(con.execute(sql).fetchall())
    columns = ["id", "s", "region"] + LINEAGE
    assert duck("v3", columns) == _ours(tables["v3"], columns)
    assert duck("v1", ["id", "s"]) == _ours(tables["v1"], ["id", "s"])
    assert duck("upgraded", ["id", "_row_id"]) == _ours(tables["upgraded"], ["id", "_row_id"])


def test_finding_duckdb_gives_upgraded_rows_a_last_updated_sequence_number(tables):
    """Goal: a departure of DuckDB 1.5.5 from the spec, reproduced: for a data file with a
    null first_row_id (written before the upgrade to v3) "readers must produce null for
    _row_id and _last_updated_sequence_number" (spec Appendix E, v3); DuckDB gives null
    _row_ids but the file's data sequence number as _last_updated_sequence_number.
    Method: iceberg_scan of the upgraded table against icefloe's reading (nulls)."""
    from icefloe.conformance.engines.duckdb_engine import connect
    sql = f"SELECT id, _last_updated_sequence_number FROM iceberg_scan('{tables['upgraded'].metadata_location}')"
    got = sorted(connect().execute(sql).fetchall())
    assert _ours(tables["upgraded"], ["id", "_last_updated_sequence_number"]) == [(i, None) for i in range(10)]
    assert got == [(i, 1 if i < 6 else 2) for i in range(10)]   # the files' sequence numbers, not null


def test_pyiceberg_reads_v3_dvs_and_defaults_and_v1_but_not_the_lineage_columns(tables):
    """Goal: what pyiceberg 0.12 reads, checked: icefloe's v3 rows with both DVs applied and
    the defaults filled, the v3 metadata's next-row-id and each snapshot's first-row-id and
    added-rows as icefloe wrote them, an upgraded table's and a v1 table's rows; `_row_id` and
    `_last_updated_sequence_number` are refused by name (ValueError "Could not find column"),
    not read as something else. Method: StaticTable.from_metadata of each metadata file."""
    from pyiceberg.table import StaticTable
    v3 = tables["v3"]
    static = StaticTable.from_metadata(v3.metadata_location)
    got = sorted(tuple(r.values()) for r in static.scan(selected_fields=("id", "s", "region")).to_arrow().to_pylist())
    assert got == _ours(v3, ["id", "s", "region"])
    assert static.metadata.format_version == 3 and static.metadata.next_row_id == v3.metadata.next_row_id
    assert [(s.first_row_id, s.added_rows) for s in static.metadata.snapshots] == \
        [(s.first_row_id, s.added_rows) for s in v3.metadata.snapshots]
    for column in LINEAGE:
        with pytest.raises(ValueError, match=f"Could not find column: '{column}'"):
            static.scan(selected_fields=("id", column)).to_arrow()
    upgraded = StaticTable.from_metadata(tables["upgraded"].metadata_location)
    assert upgraded.metadata.format_version == 3 and upgraded.metadata.next_row_id == 0
    assert sorted(upgraded.scan().to_arrow().column("id").to_pylist()) == list(range(10))
    v1 = StaticTable.from_metadata(tables["v1"].metadata_location)
    assert v1.metadata.format_version == 1
    assert sorted(v1.scan().to_arrow().column("id").to_pylist()) == [r[0] for r in _ours(tables["v1"], ["id"])]
