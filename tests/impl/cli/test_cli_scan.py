"""`icefloe scan` and `history` output: streaming formats, a closed pipe, time arguments,
partition directory names; the 1M-row memory bound."""
from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import numpy as np
import pyarrow as pa

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.table.table import Table, create_table
from icefloe.impl.format.types import schema_from_arrow

RSS_MB_MAX = 300
MILLION = 1_000_000

# Run in a fresh interpreter: start a command, count its output lines as they come, and
# print its exit code, line count and peak RSS (only the child's: RUSAGE_CHILDREN).
MEASURE = """
import resource, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)
lines = 0
while chunk := p.stdout.read(1 << 20):
    lines += chunk.count(b"\\n")
p.wait()
print(p.returncode, lines, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""


def _rows(n: int, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(start)
    ts = np.datetime64("2024-01-01") + rng.integers(0, 86_400 * 30, n).astype("timedelta64[s]")
    return pa.table({"id": pa.array(np.arange(start, start + n), pa.int64()),
                     "cat": pa.array(rng.choice(["alpha", "beta", "gamma", "delta"], n)),
                     "ts": pa.array(ts.astype("datetime64[us]")), "amount": pa.array(rng.random(n) * 1000)})


def test_a_million_rows_stream_in_bounded_memory_in_every_format(tmp_path):
    """Goal: scan writes batch by batch, so a 1M-row table stays under 300 MB RSS in every
    format (it took 1 GB as JSON when everything was materialized). Method: a 1M-row
    table (two data files); `icefloe scan` in each format in a subprocess whose peak RSS
    (RUSAGE_CHILDREN) is measured while its output is counted as it streams; the line
    count proves every row came out."""
    rows = _rows(MILLION // 2)
    catalog = SqlCatalog(f"sqlite:///{tmp_path / 'icefloe.db'}")
    table = create_table(catalog, "db.big", schema_from_arrow(rows.schema), location=f"file://{tmp_path}/wh/db/big",
                         io=StoreRouter())
    table.append(rows)
    table.append(_rows(MILLION // 2, MILLION // 2))
    del rows
    base = [sys.executable, "-m", "icefloe.impl.cli", "--catalog", f"sqlite:///{tmp_path / 'icefloe.db'}",
            "scan", "db.big", "--format"]
    extra_lines = {"csv": 1, "jsonl": 0, "json": 2, "table": 1}      # header, brackets
    measured = {}
    for fmt, extra in extra_lines.items():
        done = subprocess.run([sys.executable, "-c", MEASURE, *base, fmt], capture_output=True, text=True, check=True)
        code, lines, rss_mb = map(int, done.stdout.split())
        assert code == 0 and lines == MILLION + extra, (fmt, done.stdout, done.stderr)
        measured[fmt] = rss_mb
    print(f"peak RSS of icefloe scan, 1M rows: {measured} MB")
    assert all(mb < RSS_MB_MAX for mb in measured.values()), measured


def _cli_subprocess(tmp_path, *args):
    return subprocess.Popen([sys.executable, "-m", "icefloe.impl.cli", *args], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_a_closed_pipe_ends_the_scan_quietly(tmp_path):
    """Goal: `icefloe scan ... | head` exits 0 with nothing on stderr. Method: a table of
    200k rows; read one line of each format's output, close the pipe, and check the
    exit code and stderr."""
    rows = _rows(200_000)
    catalog = SqlCatalog(f"sqlite:///{tmp_path / 'icefloe.db'}")
    create_table(catalog, "db.t", schema_from_arrow(rows.schema), location=f"file://{tmp_path}/wh/db/t",
                 io=StoreRouter()).append(rows)
    for fmt in ("csv", "jsonl", "json", "table"):
        p = _cli_subprocess(tmp_path, "scan", "db.t", "--format", fmt)
        assert p.stdout.readline()
        p.stdout.close()
        err = p.stderr.read().decode()
        assert p.wait(120) == 0 and err == "", (fmt, err)


def test_formats_time_arguments_history_and_partition_directories(cli):
    """Goal: what a person types and reads. Method: two appends to a day-partitioned table;
    the data directories are ts_day=YYYY-MM-DD; --as-of takes ISO-8601 with a zone,
    without one (UTC), a date and milliseconds alike, and a bad time is one line; json
    is one array, jsonl a line per row, --columns and --limit; history shows UTC
    timestamps and refs (text and JSON)."""
    cli.write("a.parquet", id=pa.array([1, 2], pa.int64()), ts=pa.array(
        [dt.datetime(2024, 1, 2, 13), dt.datetime(2024, 2, 1, 1)], pa.timestamp("us")))
    cli.ok("create", "db.t", "--schema-from", "a.parquet", "--partition-by", "day(ts)")
    first = cli.snapshot(cli.ok("append", "db.t", "a.parquet"))
    cli.ok("append", "db.t", "a.parquet")
    dirs = sorted(p.name for p in (cli.path / "warehouse/db/t/data").iterdir())
    assert dirs == ["ts_day=2024-01-02", "ts_day=2024-02-01"]
    t = Table(SqlCatalog(f"sqlite:///{cli.path / 'icefloe.db'}"), "db.t", StoreRouter())
    first_ms = t.metadata.snapshot_by_id(first).timestamp_ms
    second_ms = t.metadata.current_snapshot().timestamp_ms
    when = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=first_ms)
    as_paris = when.astimezone(dt.timezone(dt.timedelta(hours=1))).isoformat()
    for as_of in (str(first_ms), when.isoformat(), as_paris, when.replace(tzinfo=None).isoformat(),
                  when.isoformat().replace("+00:00", "Z")):
        if second_ms > first_ms:     # the same millisecond cannot tell them apart
            assert len(json.loads(cli.ok("scan", "db.t", "--as-of", as_of, "--format", "json"))) == 2, as_of
    assert len(json.loads(cli.ok("scan", "db.t", "--as-of", "now", "--format", "json"))) == 4
    assert "no snapshot was current at 2001-01-01T00:00:00.000Z" in cli.fails("scan", "db.t", "--as-of", "2001-01-01")
    res = cli("scan", "db.t", "--as-of", "yesterday")
    assert res.returncode == 2 and "ISO-8601" in res.stderr
    lines = cli.ok("scan", "db.t", "--format", "jsonl", "--columns", "id", "--limit", "3").splitlines()
    assert [json.loads(line) for line in lines] == [{"id": 1}, {"id": 2}, {"id": 1}]
    assert json.loads(cli.ok("scan", "db.t", "--format", "json", "--filter", "id = 9")) == []
    assert cli.ok("scan", "db.t", "--format", "csv", "--filter", "id = 9").strip() == '"id","ts"'
    cli.ok("tag", "create", "db.t", "v1", "--snapshot-id", first)
    history = json.loads(cli.ok("history", "db.t", "--json"))
    assert history[0]["refs"] == ["tag:v1"] and history[1]["refs"] == ["main"]
    assert history[0]["timestamp"] == when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    text = cli.ok("history", "db.t").splitlines()
    assert "committed (UTC)" in text[0] and text[1].endswith("tag:v1") and text[2].startswith("*")


def test_expire_says_which_rule_kept_each_snapshot(cli):
    """Goal: expire explains itself, and the README's `--retain-last 5` surprise is visible.
    Method: three appends and a tag; expire --retain-last 1 keeps all (age rule named per
    snapshot, and a hint); with --older-than now only the tag's and main's heads stay,
    each kept by its ref; no line says `committed snapshot None`."""
    cli.write("a.parquet", id=pa.array([1], pa.int64()))
    cli.ok("create", "db.t", "--schema-from", "a.parquet")
    ids = [cli.snapshot(cli.ok("append", "db.t", "a.parquet")) for _ in range(3)]
    cli.ok("tag", "create", "db.t", "v1", "--snapshot-id", ids[0])
    out = cli.ok("expire", "db.t", "--retain-last", "1")
    assert "nothing to do" in out and "None" not in out
    assert f"kept    {ids[1]}" in out and "age: younger than 120 h" in out and "--older-than now" in out
    out = cli.ok("expire", "db.t", "--older-than", "now", "--retain-last", "1")
    assert "no snapshot: metadata change" in out and "1 snapshot(s) expired" in out and "None" not in out
    assert f"expired {ids[1]}" in out
    assert f"kept    {ids[0]}" in out and "ref: head of tag v1" in out
    assert f"kept    {ids[2]}" in out and "ref: head of branch main" in out
