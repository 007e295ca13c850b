"""The icefloe command line on a local warehouse and the default SQLite catalog."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from icefloe.impl.cli import main as cli_main


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


def test_time_travel_compact_rollback_and_expire_from_the_command_line(tmp_path, monkeypatch, capsys):
    """Goal: every table subcommand of the CLI does what it says. Method: three appends,
    scan --as-of/--tag/--snapshot-id, compact, rollback, expire --older-than/--retain-last, then the
    files and rows each left, checked through the CLI's own JSON output (in process:
    `main(argv)` is what the console script runs)."""
    monkeypatch.chdir(tmp_path)

    def icefloe(_cwd, *args):
        code = cli_main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    for i in range(3):
        pq.write_table(pa.table({"id": pa.array([10 * i, 10 * i + 1], pa.int64())}), tmp_path / f"r{i}.parquet")
    assert icefloe(tmp_path, "create", "db.t", "--schema-from", "r0.parquet").returncode == 0
    for i in range(3):
        assert icefloe(tmp_path, "append", "db.t", f"r{i}.parquet").returncode == 0

    def ids(*args):
        res = icefloe(tmp_path, "scan", "db.t", "--format", "json", *args)
        assert res.returncode == 0, res.stderr
        return sorted(r["id"] for r in json.loads(res.stdout))

    def history():
        return json.loads(icefloe(tmp_path, "history", "db.t", "--json").stdout)

    h = history()
    assert [r["operation"] for r in h] == ["append"] * 3 and [r["current"] for r in h] == [False, False, True]
    assert ids("--as-of", str(h[1]["timestamp_ms"])) == [0, 1, 10, 11]
    assert ids("--tag", "main") == [0, 1, 10, 11, 20, 21]
    assert ids("--snapshot-id", str(h[0]["snapshot_id"])) == [0, 1]

    compacted = icefloe(tmp_path, "compact", "db.t")
    assert compacted.returncode == 0 and "committed snapshot" in compacted.stdout, compacted.stderr
    h = history()
    assert h[-1]["operation"] == "replace" and ids() == [0, 1, 10, 11, 20, 21]

    assert icefloe(tmp_path, "rollback", "db.t", str(h[1]["snapshot_id"])).returncode == 0
    assert ids() == [0, 1, 10, 11] and [r["current"] for r in history()][1]

    later_ms = str(time.time_ns() // 1_000_000 + 1000)
    expired = icefloe(tmp_path, "expire", "db.t", "--older-than", later_ms, "--retain-last", "1")
    assert expired.returncode == 0, expired.stderr
    assert [r["snapshot_id"] for r in history()] == [h[1]["snapshot_id"]]
    assert ids() == [0, 1, 10, 11]
    deleted = int(expired.stdout.split("deleted ")[1].split()[0])
    assert deleted >= 3  # at least the third append's file, the compacted file and their manifests
    gone = icefloe(tmp_path, "scan", "db.t", "--snapshot-id", str(h[0]["snapshot_id"]))
    assert gone.returncode == 2 and "not retained" in gone.stderr
    text = icefloe(tmp_path, "history", "db.t")
    lines = text.stdout.splitlines()
    assert text.returncode == 0 and lines[0].split()[:2] == ["snapshot", "parent"]
    assert lines[1].startswith("*") and str(h[1]["snapshot_id"]) in lines[1] and lines[1].endswith("main")
