"""`icefloe scan --columns` with the row lineage columns (Iceberg spec "Row Lineage";
impl/table/scan.py `check_lineage_columns`): the CLI refuses them on v1 and v2 with the
error Table.scan raises, type and text alike (exit 2, one line), for the current state,
time travel and incremental reads; on v3 and on a table upgraded to v3 it prints the rows
Table.scan returns, nulls included."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format.metadata import UnsupportedFormatVersion
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.table.table import Table

LINEAGE = ["id", "_row_id", "_last_updated_sequence_number"]


def _table(cli, name: str = "db.t") -> Table:
    return Table(SqlCatalog(f"sqlite:///{cli.path / 'icefloe.db'}"), name, StoreRouter())


def _jsonl(out: str) -> list[tuple]:
    return sorted(tuple(json.loads(line)[c] for c in LINEAGE) for line in out.splitlines() if line.strip())


@pytest.mark.parametrize("version", [1, 2])
def test_the_cli_refuses_lineage_below_v3_as_table_scan_does(cli, version):
    """Goal: on v1 and v2 `scan --columns` naming `_row_id` or `_last_updated_sequence_number`
    fails with exit 2 and the very error Table.scan raises (UnsupportedFormatVersion, the
    same text naming the columns and the version), also with --snapshot-id and with
    --from-snapshot (the version is refused before the incremental read); other columns
    still print. Method: one table, each command's stderr against Table.scan's exception."""
    cli.write("a.parquet", id=pa.array([1, 2], pa.int64()))
    cli.ok("create", "db.t", "--schema-from", "a.parquet", "--format-version", version)
    first = cli.snapshot(cli.ok("append", "db.t", "a.parquet"))
    cli.ok("append", "db.t", "a.parquet")
    table = _table(cli)
    for columns in (["id", "_row_id"], ["_last_updated_sequence_number", "id"], ["_row_id", "_last_updated_sequence_number"]):
        with pytest.raises(UnsupportedFormatVersion) as e:
            table.scan(columns=columns)
        asked = ", ".join(c for c in columns if c != "id")
        assert f"{asked}: row lineage needs format v3" in str(e.value) and f"is v{version} " in str(e.value)
        want = f"icefloe: UnsupportedFormatVersion: {e.value}"
        for extra in ([], ["--snapshot-id", first], ["--from-snapshot", first]):
            assert cli.fails("scan", "db.t", "--columns", ",".join(columns), *extra).strip() == want, extra
    assert len(json.loads(cli.ok("scan", "db.t", "--columns", "id", "--format", "json"))) == 4


def test_the_cli_reads_lineage_on_v3_and_on_an_upgraded_table_as_table_scan_does(cli):
    """Goal: a v3 table prints each row's ids, an upgraded one nulls until a v3 commit
    assigns ids, time travel to its v2 snapshot nulls too, each as Table.scan returns them.
    Method: `scan --format jsonl` against Table.scan, values also written out by hand."""
    cli.write("a.parquet", id=pa.array([1, 2], pa.int64()))
    cli.ok("create", "db.v3", "--schema-from", "a.parquet", "--format-version", "3")
    cli.ok("append", "db.v3", "a.parquet")
    out = cli.ok("scan", "db.v3", "--columns", ",".join(LINEAGE), "--format", "jsonl")
    assert _jsonl(out) == [(1, 0, 1), (2, 1, 1)]
    got = _table(cli, "db.v3").scan(columns=LINEAGE)
    assert _jsonl(out) == sorted(zip(*[got.column(c).to_pylist() for c in LINEAGE]))

    cli.ok("create", "db.up", "--schema-from", "a.parquet", "--format-version", "2")
    old = cli.snapshot(cli.ok("append", "db.up", "a.parquet"))
    cli.ok("upgrade", "db.up", "--format-version", "3")
    assert _jsonl(cli.ok("scan", "db.up", "--columns", ",".join(LINEAGE), "--format", "jsonl")) == [
        (1, None, None), (2, None, None)]
    cli.ok("append", "db.up", "a.parquet")
    for extra in ([], ["--snapshot-id", old]):
        out = cli.ok("scan", "db.up", "--columns", ",".join(LINEAGE), "--format", "jsonl", *extra)
        got = _table(cli, "db.up").scan(columns=LINEAGE, snapshot_id=int(old) if extra else None)
        assert _jsonl(out) == sorted(zip(*[got.column(c).to_pylist() for c in LINEAGE]))
        if extra:
            assert _jsonl(out) == [(1, None, None), (2, None, None)]
        else:
            assert sorted(r[1] for r in _jsonl(out)) == [0, 1, 2, 3]
