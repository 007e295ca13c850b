"""Regression tests for ../shared/repro bug14: a CSV is read with the table's schema
(timestamps with fractions, decimals, nulls, quoted strings) for append and overwrite,
and `create --schema-from x.csv` takes pyarrow's inferred types, storing microseconds."""
from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from icefloe.impl.cli import EXIT_OK, EXIT_USAGE, main as cli_main


def icefloe(tmp_path: Path, capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli_main(["--catalog", f"sqlite:///{tmp_path}/icefloe.db", "--warehouse", str(tmp_path / "warehouse"),
                     *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


ROWS = pa.table({
    "ts": pa.array([dt.datetime(2024, 6, 1, 0, 0, 0, 250_000), None, dt.datetime(2024, 6, 2, 13)], pa.timestamp("us")),
    "tz": pa.array([dt.datetime(2024, 6, 1, tzinfo=dt.timezone.utc)] * 3, pa.timestamp("us", tz="UTC")),
    "cat": pa.array(['a, "quoted"', "", None]),
    "id": pa.array([1, 2, None], pa.int64()),
    "amount": pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("-0.05")], pa.decimal128(12, 2)),
    "day": pa.array([dt.date(2024, 6, 1), dt.date(2024, 6, 2), None]),
})


@pytest.fixture
def files(tmp_path):
    pq.write_table(ROWS, tmp_path / "rows.parquet")
    pa_csv.write_csv(ROWS, tmp_path / "rows.csv")
    return tmp_path / "rows.parquet", tmp_path / "rows.csv"


def _scan(tmp_path, capsys, table: str = "db.t") -> list[dict]:
    code, out, err = icefloe(tmp_path, capsys, "scan", table, "--format", "json")
    assert code == EXIT_OK, err
    return json.loads(out)


def test_csv_written_by_pyarrow_appends_and_overwrites_as_its_parquet_twin(tmp_path, capsys, files):
    """Goal: a CSV holds the same rows as the Parquet it was written from, once read with
    the table's schema. Method: create two tables from the Parquet, append the Parquet to
    one and the CSV to the other, compare their scans (fractions of seconds, zoned
    timestamps, decimals, dates, nulls, the empty string apart from null, a quoted string
    with a comma); then overwrite with the CSV: the same rows again."""
    parquet, csv_file = files
    for name, source in (("db.ref", parquet), ("db.t", csv_file)):
        assert icefloe(tmp_path, capsys, "create", name, "--schema-from", parquet)[0] == EXIT_OK
        code, out, err = icefloe(tmp_path, capsys, "append", name, source)
        assert code == EXIT_OK, err
    rows = _scan(tmp_path, capsys)
    assert rows == _scan(tmp_path, capsys, "db.ref") and len(rows) == 3
    assert rows[0]["ts"] == "2024-06-01T00:00:00.250000" and rows[0]["amount"] == "1.50"
    assert rows[0]["cat"] == 'a, "quoted"' and rows[1]["cat"] == "" and rows[2]["cat"] is None
    assert icefloe(tmp_path, capsys, "overwrite", "db.t", csv_file)[0] == EXIT_OK
    assert _scan(tmp_path, capsys) == rows


@pytest.mark.parametrize("column, value, words", [
    ("ts", "2024-06-01 00:00:00.123456789", "column 'ts'"),          # finer than the table's microseconds
    ("amount", "1.505", "column 'amount'"),                           # more digits than scale 2
    ("tz", "2024-06-01 00:00:00", "zone offset"),                     # a zoned column needs the zone
    ("id", "seven", "column 'id'"),
])
def test_a_value_that_does_not_fit_its_column_is_refused(tmp_path, capsys, files, column, value, words):
    """Goal: a CSV value the table's type cannot hold exactly is refused, never rounded.
    Method: one bad value per column kind; exit 2, one line naming the column, and no
    snapshot is written."""
    parquet, _ = files
    assert icefloe(tmp_path, capsys, "create", "db.t", "--schema-from", parquet)[0] == EXIT_OK
    good = {"ts": "2024-06-01 00:00:00", "tz": "2024-06-01 00:00:00Z", "cat": "a", "id": "1",
            "amount": "1.50", "day": "2024-06-01"}
    good[column] = value
    bad = tmp_path / "bad.csv"
    bad.write_text(",".join(good) + "\n" + ",".join(good.values()) + "\n")
    code, _, err = icefloe(tmp_path, capsys, "append", "db.t", bad)
    assert code == EXIT_USAGE and words in err and len(err.strip().splitlines()) == 1, err
    assert icefloe(tmp_path, capsys, "history", "db.t", "--json")[1].strip() == "[]"


def test_create_from_csv_infers_as_pyarrow_and_stores_microseconds(tmp_path, capsys, files):
    """Goal: `create --schema-from x.csv` takes pyarrow's inferred types; its nanosecond
    timestamps (inferred for any fraction) are stored as microseconds, and asking for
    nanoseconds on a table that is not v3 is refused naming the format. Method: create from
    the CSV, describe --json; then --timestamp-unit ns: exit 2 naming v3, nothing created."""
    _, csv_file = files
    assert pa_csv.read_csv(csv_file).schema.field("ts").type == pa.timestamp("ns")   # what pyarrow infers
    assert icefloe(tmp_path, capsys, "create", "db.t", "--schema-from", csv_file)[0] == EXIT_OK
    fields = {f["name"]: f["type"] for f in json.loads(icefloe(tmp_path, capsys, "describe", "db.t", "--json")[1])
              ["schema"]["fields"]}
    assert fields == {"ts": "timestamp", "tz": "timestamptz", "cat": "string", "id": "long", "amount": "double",
                      "day": "date"}
    assert icefloe(tmp_path, capsys, "append", "db.t", csv_file)[0] == EXIT_OK
    code, _, err = icefloe(tmp_path, capsys, "create", "db.n", "--schema-from", csv_file, "--timestamp-unit", "ns")
    assert code == EXIT_USAGE and "format v3" in err and "--timestamp-unit ns" in err
    assert "db.n" not in icefloe(tmp_path, capsys, "list")[1]
