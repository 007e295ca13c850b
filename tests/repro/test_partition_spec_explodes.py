"""Regression test for issue 14's item 7 (no script in ../shared/repro): a partition spec
that gives every row its own partition (`bucket(99999999999999999999, id)`, or
`truncate(2, amount)` on a decimal, whose width applies to the unscaled value) ran for
minutes and left tens of thousands of files; now the spec or the write is refused."""
from __future__ import annotations

import decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.cli import EXIT_NOT_COMMITTED, EXIT_OK, EXIT_USAGE, main as cli_main
from icefloe.impl.format.partitioning import DATA_FILES_MAX_PROPERTY
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.outcomes import Committed
from icefloe.impl.table.table import Table


def icefloe(tmp_path: Path, *args: str) -> int:
    return cli_main(["--catalog", f"sqlite:///{tmp_path}/icefloe.db", "--warehouse", str(tmp_path / "warehouse"),
                     *args])


def amounts_file(tmp_path: Path, n: int) -> str:
    pq.write_table(pa.table({"id": pa.array(range(n), pa.int64()),
                             "amount": pa.array([decimal.Decimal(i) / 100 for i in range(n)], pa.decimal128(12, 2))}),
                   tmp_path / "rows.parquet")
    return str(tmp_path / "rows.parquet")


def test_bucket_count_beyond_the_iceberg_int_range_is_refused_at_create(tmp_path, capsys):
    """Goal: `create --partition-by "bucket(99999999999999999999, id)"` is one line and exit
    2, and no table exists. Method: the CLI in process; then scan the name."""
    rows = amounts_file(tmp_path, 3)
    assert icefloe(tmp_path, "create", "db.t", "--schema-from", rows,
                   "--partition-by", "bucket(99999999999999999999, id)") == EXIT_USAGE
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "2147483647" in err
    assert icefloe(tmp_path, "scan", "db.t") == EXIT_USAGE
    assert not (tmp_path / "warehouse" / "db" / "t").exists()


def test_a_write_into_too_many_partitions_is_refused_with_the_count_and_writes_nothing(tmp_path, capsys):
    """Goal: truncate(2, amount) on decimal(12, 2) is accepted (steps of 0.02, as the spec
    says), and an append that would make more data files than write.data-files.max is not
    committed, names the count, and leaves no file behind. Method: the CLI in process with
    the property lowered to 50 on the table, 200 distinct amounts; list the table's files."""
    rows = amounts_file(tmp_path, 200)
    assert icefloe(tmp_path, "create", "db.t", "--schema-from", rows, "--partition-by", "truncate(2, amount)") == EXIT_OK
    table = Table(SqlCatalog(f"sqlite:///{tmp_path}/icefloe.db"), "db.t", StoreRouter())
    assert isinstance(table.set_properties({DATA_FILES_MAX_PROPERTY: "50"}), Committed)
    before = sorted(p for p in (tmp_path / "warehouse").rglob("*") if p.is_file())
    capsys.readouterr()
    assert icefloe(tmp_path, "append", "db.t", rows) == EXIT_NOT_COMMITTED
    err = capsys.readouterr().err
    assert "would create 100 data files" in err and f"{DATA_FILES_MAX_PROPERTY}=50" in err
    assert sorted(p for p in (tmp_path / "warehouse").rglob("*") if p.is_file()) == before
