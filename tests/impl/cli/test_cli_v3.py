"""The command line on format v3 (issue 29 items 3 and 4): the row lineage columns through
`scan --columns`, default values through `schema add-column`, and both refused by name below v3."""
from __future__ import annotations

import csv
import io

import pyarrow as pa


def _rows(stdout: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(stdout)))


def test_scan_prints_row_lineage_and_defaults_on_a_v3_table(cli):
    """Goal: `_row_id` = first-row-id + position and `_last_updated_sequence_number` print from
    the CLI, and a column added with --initial-default reads it in files written before it.
    Method: a v3 table, two appends, add-column with a default, scan as CSV."""
    cli.write("a.parquet", id=pa.array([1, 2, 3], pa.int64()))
    cli.write("b.parquet", id=pa.array([4, 5], pa.int64()))
    cli.ok("create", "db.t", "--schema-from", "a.parquet", "--format-version", "3")
    cli.ok("append", "db.t", "a.parquet")
    cli.ok("append", "db.t", "b.parquet")
    cli.ok("schema", "add-column", "db.t", "region", "string", "--initial-default", "unknown",
           "--write-default", '"n/a"')
    out = cli.ok("scan", "db.t", "--columns", "id,region,_row_id,_last_updated_sequence_number",
                 "--format", "csv")
    rows = sorted(_rows(out), key=lambda r: int(r["id"]))
    assert [(r["id"], r["region"], r["_row_id"], r["_last_updated_sequence_number"]) for r in rows] == [
        ("1", "unknown", "0", "1"), ("2", "unknown", "1", "1"), ("3", "unknown", "2", "1"),
        ("4", "unknown", "3", "2"), ("5", "unknown", "4", "2")]
    field = next(f for f in cli.pyiceberg().schema().fields if f.name == "region")
    assert (field.initial_default, field.write_default) == ("unknown", "n/a")


def test_lineage_columns_and_defaults_are_refused_by_name_below_v3(cli):
    """Goal: nothing silently becomes something else: on a v2 table `--columns _row_id` and
    `--initial-default` are refused with exit 2 naming format v3, and nothing is committed.
    Method: the same commands on a v2 table; the schema is unchanged afterwards."""
    cli.write("a.parquet", id=pa.array([1], pa.int64()))
    cli.ok("create", "db.t", "--schema-from", "a.parquet")
    cli.ok("append", "db.t", "a.parquet")
    assert "format v3" in cli.fails("scan", "db.t", "--columns", "id,_row_id")
    before = cli.pyiceberg().schema()
    assert "v3" in cli.fails("schema", "add-column", "db.t", "region", "string", "--initial-default", "x")
    assert cli.pyiceberg().schema() == before
