"""Regression test for ../shared/repro/bug6_truncated_manifest_list_reads_as_empty.sh: an
Avro manifest list or manifest cut at a block boundary is a valid, shorter Avro file; it
must not read as fewer entries (issue 14 item 2)."""
from __future__ import annotations

import datetime as dt
import decimal
import glob
import io
import json
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.impl.cli import EXIT_OK, EXIT_USAGE, main as cli_main


def icefloe(tmp_path: Path, *args: str) -> int:
    return cli_main(["--catalog", f"sqlite:///{tmp_path}/icefloe.db", "--warehouse", str(tmp_path / "warehouse"),
                     *args])


def rows_file(tmp_path: Path) -> str:
    """The repro's rows.parquet: 10 rows of ts, cat, id, amount."""
    ts = [dt.datetime(2024, 1, 1, 10) + dt.timedelta(hours=i) for i in range(10)]
    pq.write_table(pa.table({"ts": pa.array(ts, pa.timestamp("us")), "cat": pa.array(list("aabbccddee")),
                             "id": pa.array(range(10), pa.int64()),
                             "amount": pa.array([decimal.Decimal("1.25")] * 10, pa.decimal128(12, 2))}),
                   tmp_path / "rows.parquet")
    return str(tmp_path / "rows.parquet")


def current_snapshot(tmp_path: Path, table: str) -> dict:
    meta = sorted(glob.glob(str(tmp_path / "warehouse" / "db" / table / "metadata" / "*.metadata.json")))[-1]
    doc = json.loads(Path(meta).read_text())
    return next(s for s in doc["snapshots"] if s["snapshot-id"] == doc["current-snapshot-id"])


def files(tmp_path: Path) -> list[str]:
    return sorted(str(p) for p in (tmp_path / "warehouse").rglob("*") if p.is_file())


def test_truncated_manifest_list_is_an_error_and_the_next_append_does_not_build_on_it(tmp_path, capsys):
    """Goal: bug6 part 1 is fixed: a manifest list cut after its header makes `scan` fail
    with CorruptMetadata naming the list (not 0 rows, exit 0), and `append` refuses and
    writes nothing, so the 30 rows stay on main. Method: the repro's steps through the CLI."""
    rows = rows_file(tmp_path)
    assert icefloe(tmp_path, "create", "db.t", "--schema-from", rows, "--partition-by", "cat") == EXIT_OK
    for _ in range(3):
        assert icefloe(tmp_path, "append", "db.t", rows) == EXIT_OK
    snap = current_snapshot(tmp_path, "t")
    path = Path(snap["manifest-list"].removeprefix("file://"))
    data = path.read_bytes()
    fo = io.BytesIO(data)
    fastavro.reader(fo)  # reads the header only
    path.write_bytes(data[:fo.tell()])
    capsys.readouterr()
    assert icefloe(tmp_path, "scan", "db.t", "--format", "csv") == EXIT_USAGE
    err = capsys.readouterr().err
    assert "CorruptMetadata" in err and str(path) in err and "total-data-files=15" in err
    before = files(tmp_path)
    assert icefloe(tmp_path, "append", "db.t", rows) == EXIT_USAGE
    assert "CorruptMetadata" in capsys.readouterr().err
    assert files(tmp_path) == before and current_snapshot(tmp_path, "t") == snap
    path.write_bytes(data)  # repaired: every row is still there
    assert icefloe(tmp_path, "scan", "db.t", "--format", "csv") == EXIT_OK
    assert len(capsys.readouterr().out.splitlines()) == 1 + 30


def test_manifest_without_its_last_block_is_an_error(tmp_path, capsys):
    """Goal: bug6 part 2 is fixed: a manifest of several Avro blocks without its last block
    makes `scan` fail with CorruptMetadata naming the manifest, not return fewer rows.
    Method: the repro's variant (3,000 identity partitions, one append), drop the last
    block of the manifest, scan through the CLI."""
    pq.write_table(pa.table({"id": pa.array(range(3000), pa.int64()), "v": pa.array(["x"] * 3000)}),
                   tmp_path / "many.parquet")
    many = str(tmp_path / "many.parquet")
    assert icefloe(tmp_path, "create", "db.m", "--schema-from", many, "--partition-by", "id") == EXIT_OK
    assert icefloe(tmp_path, "append", "db.m", many) == EXIT_OK
    (manifest,) = glob.glob(str(tmp_path / "warehouse/db/m/metadata/*-m*.avro"))
    data = Path(manifest).read_bytes()
    ends, fo = [], io.BytesIO(data)
    for _ in fastavro.block_reader(fo):
        ends.append(fo.tell())
    assert len(ends) > 2
    Path(manifest).write_bytes(data[:ends[-2]])
    capsys.readouterr()
    assert icefloe(tmp_path, "scan", "db.m", "--format", "csv") == EXIT_USAGE
    err = capsys.readouterr().err
    assert "CorruptMetadata" in err and manifest in err
