"""Regression tests for ../shared/repro bug7 (tracebacks instead of one-line errors) and
bug9 (appends that coerced silently): each input gets one line on stderr and exit 2,
nothing is written, and the safe widenings need --cast."""
from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.impl.cli import EXIT_OK, EXIT_USAGE, main as cli_main


def icefloe(tmp_path: Path, *args: str) -> int:
    return cli_main(["--catalog", f"sqlite:///{tmp_path}/icefloe.db", "--warehouse", str(tmp_path / "warehouse"),
                     *args])


@pytest.fixture
def base(tmp_path):
    ts = [dt.datetime(2024, 1, 1, 10) + dt.timedelta(hours=i) for i in range(10)]
    table = pa.table({"ts": pa.array(ts, pa.timestamp("us")), "cat": pa.array(list("aabbccddee")),
                      "id": pa.array(range(10), pa.int64()),
                      "amount": pa.array([decimal.Decimal("1.25")] * 10, pa.decimal128(12, 2))})
    pq.write_table(table, tmp_path / "rows.parquet")
    assert icefloe(tmp_path, "create", "db.t", "--schema-from", str(tmp_path / "rows.parquet")) == EXIT_OK
    assert icefloe(tmp_path, "append", "db.t", str(tmp_path / "rows.parquet")) == EXIT_OK
    return table


def snapshots(tmp_path) -> int:
    metas = sorted((tmp_path / "warehouse" / "db" / "t" / "metadata").glob("*.metadata.json"))
    return len(json.loads(metas[-1].read_text())["snapshots"])


@pytest.mark.parametrize("case, column, words", [
    ("extra", "extra", "not in the table"),
    ("berlin", "ts", "UTC wall clock"),
    ("strings", "id", "strings cannot be stored"),
    ("narrow", "ts", "cannot be stored"),
])
def test_bug9_appends_that_would_change_values_are_refused(tmp_path, base, capsys, case, column, words):
    """Goal: no silent coercion. Method: the repro's three files (an extra column, a
    Europe/Berlin timestamp, numeric strings) and a date column where the table has a
    timestamp; each exits 2 with one line naming the column; no snapshot is added."""
    berlin = pa.array([dt.datetime(2024, 1, 1, 11, tzinfo=ZoneInfo("Europe/Berlin"))] * 10,
                      pa.timestamp("us", tz="Europe/Berlin"))
    variants = {
        "extra": base.append_column("extra", pa.array(["important"] * 10)),
        "berlin": base.set_column(0, "ts", berlin),
        "strings": base.set_column(2, "id", pa.array([str(200 + i) for i in range(10)])),
        "narrow": base.set_column(0, "ts", pa.array([dt.date(2024, 1, 1)] * 10)),
    }
    pq.write_table(variants[case], tmp_path / f"{case}.parquet")
    before = snapshots(tmp_path)
    capsys.readouterr()
    assert icefloe(tmp_path, "append", "db.t", str(tmp_path / f"{case}.parquet")) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and repr(column) in err and words in err, err
    assert snapshots(tmp_path) == before


def test_bug9_safe_widening_needs_cast(tmp_path, base, capsys):
    """Goal: the spec's safe widenings are a choice. Method: an int32 id column is refused
    without --cast (the message says so) and appended with it."""
    pq.write_table(base.set_column(2, "id", pa.array(range(10), pa.int32())), tmp_path / "narrow_ids.parquet")
    assert icefloe(tmp_path, "append", "db.t", str(tmp_path / "narrow_ids.parquet")) == EXIT_USAGE
    assert "--cast" in capsys.readouterr().err
    assert icefloe(tmp_path, "append", "db.t", str(tmp_path / "narrow_ids.parquet"), "--cast") == EXIT_OK


def test_bug7_inputs_get_one_line_and_exit_2(tmp_path, base, capsys):
    """Goal: no traceback for any of the repro's inputs. Method: a metadata file whose
    schema says list<int> where the files hold a timestamp; a catalog database with a
    foreign iceberg_tables table; each is one line on stderr and exit 2."""
    metas = sorted((tmp_path / "warehouse" / "db" / "t" / "metadata").glob("*.metadata.json"))
    doc = json.loads(metas[-1].read_text())
    doc["schemas"][0]["fields"][0]["type"] = {"type": "list", "element-id": 50, "element-required": False,
                                              "element": "int"}
    doc["last-column-id"] = 50
    (tmp_path / "bad_schema.metadata.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert cli_main(["scan", str(tmp_path / "bad_schema.metadata.json")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "DataFileError" in err
    import sqlite3
    with sqlite3.connect(tmp_path / "foreign.db") as conn:
        conn.execute("CREATE TABLE iceberg_tables (name TEXT)")
    assert cli_main(["--catalog", f"sqlite:///{tmp_path}/foreign.db", "scan", "db.t"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an Iceberg JDBC catalog table" in err
