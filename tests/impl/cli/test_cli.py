"""The icefloe command line on a local warehouse and the default SQLite catalog."""
from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog


def icefloe(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "icefloe.impl.cli", *args], cwd=tmp_path,
                          capture_output=True, text=True)


def test_create_append_scan_history_and_pyiceberg_reads_it(tmp_path):
    """Goal: the CLI round trip works and writes a table pyiceberg opens through the same
    SQLite file. Method: create, append Parquet and CSV, scan as json/csv/table with a
    filter and by metadata path, history, then read with pyiceberg's SqlCatalog."""
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "cat": ["a", "b", "a"]}),
                   tmp_path / "rows.parquet")
    (tmp_path / "more.csv").write_text("id,cat\n4,b\n5,c\n")
    assert icefloe(tmp_path, "create", "db.t", "--schema-from", "rows.parquet",
                   "--partition-by", "cat, bucket(4, id)").returncode == 0
    assert icefloe(tmp_path, "append", "db.t", "rows.parquet").returncode == 0
    assert icefloe(tmp_path, "append", "db.t", "more.csv").returncode == 0
    out = icefloe(tmp_path, "scan", "db.t", "--format", "json", "--filter", "id > 2")
    assert out.returncode == 0 and sorted(r["id"] for r in json.loads(out.stdout)) == [3, 4, 5]
    history = json.loads(icefloe(tmp_path, "history", "db.t", "--json").stdout)
    assert len(history) == 2 and history[1]["parent_snapshot_id"] == history[0]["snapshot_id"]
    first = icefloe(tmp_path, "scan", "db.t", "--snapshot-id", str(history[0]["snapshot_id"]),
                    "--format", "csv").stdout.splitlines()
    assert len(first) == 4                              # header + 3 rows of the first append
    (meta,) = sorted((tmp_path / "warehouse/db/t/metadata").glob("*.metadata.json"))[-1:]
    table = icefloe(tmp_path, "scan", str(meta))
    assert table.returncode == 0 and len(table.stdout.splitlines()) == 6
    ids = PyIcebergSqlCatalog("icefloe", uri=f"sqlite:///{tmp_path / 'icefloe.db'}") \
        .load_table("db.t").scan().to_arrow().column("id").to_pylist()
    assert sorted(ids) == [1, 2, 3, 4, 5]


def test_bad_input_gets_one_line_and_nonzero_exit(tmp_path):
    """Goal: bad input never prints a traceback. Method: missing table, missing file,
    bad filter, unknown snapshot; each exits 2 with one line on stderr."""
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), tmp_path / "rows.parquet")
    assert icefloe(tmp_path, "create", "db.t", "--schema-from", "rows.parquet").returncode == 0
    for args in (("scan", "nodb.x"), ("append", "db.t", "nope.parquet"),
                 ("scan", "db.t", "--filter", "id >>> 2"), ("scan", "db.t", "--snapshot-id", "5"),
                 ("create", "db.t", "--schema-from", "rows.parquet"), ("rollback", "db.t", "9")):
        res = icefloe(tmp_path, *args)
        assert res.returncode == 2, (args, res.stdout, res.stderr)
        assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, (args, res.stderr)
