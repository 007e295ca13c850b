"""Regression tests for ../shared/repro bug1-bug5, bug8 and bug10 (issue 14 items 1, 4, 5):
nothing outside a table's own location is ever deleted or written, tables never nest,
cleanup after a commit never turns it into a failure, no lock or dead writer's temporary
file is left behind, and a read-only catalog is reported as such. Each test runs what the
repro script ran, through the CLI in-process where the script used the CLI."""
from __future__ import annotations

import datetime as dt
import decimal
import os
import re
import sqlite3
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.impl.catalog.base import CatalogUnavailable, InvalidIdentifier, TableIdentifier
from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.cli import EXIT_NOT_COMMITTED, EXIT_OK, EXIT_USAGE, main as cli_main
from icefloe.impl.format.parquet import write_data_file
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.outcomes import STORE, Committed, Conflict
from icefloe.impl.table import producer as P
from icefloe.impl.table.confinement import TableLocationOverlap
from icefloe.impl.table.table import Table, create_table

NOW_PLUS = lambda: int(time.time() * 1000) + 1000  # noqa: E731 - "older than now": every file counts


def icefloe(tmp_path: Path, *args: str) -> int:
    return cli_main(["--catalog", f"sqlite:///{tmp_path}/icefloe.db", "--warehouse", str(tmp_path / "warehouse"),
                     *args])


def rows_file(tmp_path: Path) -> str:
    ts = [dt.datetime(2024, 1, 1, 10) + dt.timedelta(hours=i) for i in range(10)]
    pq.write_table(pa.table({"ts": pa.array(ts, pa.timestamp("us")), "cat": pa.array(list("aabbccddee")),
                             "id": pa.array(range(10), pa.int64()),
                             "amount": pa.array([decimal.Decimal("1.25")] * 10, pa.decimal128(12, 2))}),
                   tmp_path / "rows.parquet")
    return str(tmp_path / "rows.parquet")


def table(tmp_path: Path, name: str = "db.t") -> Table:
    return Table(SqlCatalog(f"sqlite:///{tmp_path}/icefloe.db"), name, StoreRouter())


def commit_foreign_file(t: Table, location: str, path_on_disk: Path) -> None:
    """Commit a data file at `location` (bytes placed at `path_on_disk` directly), as a
    foreign writer whose manifests are consistent but name any path it likes."""
    rows = t.scan().slice(0, 1)
    data, data_file = write_data_file(rows, t.metadata.schema(), location, t.current_snapshot() and
                                      t.plan_files()[0].data_file.partition)
    path_on_disk.parent.mkdir(parents=True, exist_ok=True)
    path_on_disk.write_bytes(data)
    assert isinstance(t._run(P.RowDelta([], [data_file])), Committed)


def test_bug1_expiry_never_follows_a_symlinked_directory_out_of_the_table(tmp_path):
    """bug1: a data file reached through <table>/data/link, a symlink to a directory outside
    the table, is refused by expiry (resolved path outside the root); the outside file
    stays, the expiry commits and says its cleanup was incomplete."""
    rows = rows_file(tmp_path)
    assert icefloe(tmp_path, "create", "db.t", "--schema-from", rows) == EXIT_OK
    assert icefloe(tmp_path, "append", "db.t", rows) == EXIT_OK
    outside = tmp_path / "outside"
    outside.mkdir()
    t = table(tmp_path)
    root = Path(t.location.removeprefix("file://"))
    (root / "data").mkdir(exist_ok=True)
    os.symlink(outside, root / "data" / "link")
    commit_foreign_file(t, f"{t.location}/data/link/secret.parquet", outside / "secret.parquet")
    t.refresh().delete_files([f"{t.location}/data/link/secret.parquet"])
    assert icefloe(tmp_path, "expire", "db.t", "--older-than", str(NOW_PLUS()), "--retain-last", "1") == EXIT_OK
    assert (outside / "secret.parquet").exists()
    assert len(table(tmp_path).history()) == 1                      # the expiry did commit


def test_bug2_a_metadata_file_claiming_a_wider_location_is_refused(tmp_path, capsys):
    """bug2: a metadata file whose location field names a directory other than where the
    catalog keeps the table is CorruptMetadata: expire exits 2 in one line, deletes nothing
    outside and writes no metadata outside; orphan removal refuses too."""
    rows = rows_file(tmp_path)
    icefloe(tmp_path, "create", "db.t", "--schema-from", rows)
    icefloe(tmp_path, "append", "db.t", rows)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "b.txt").write_text("two")
    os.utime(outside / "b.txt", (time.time() - 5 * 86400,) * 2)
    current = table(tmp_path).metadata_location.removeprefix("file://")
    text = Path(current).read_text().replace(table(tmp_path).location, f"file://{tmp_path}")
    Path(current).write_text(text)
    capsys.readouterr()
    assert icefloe(tmp_path, "expire", "db.t", "--older-than", str(NOW_PLUS()), "--retain-last", "1") == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("icefloe: CorruptMetadata:") and err.count("\n") == 1
    assert (outside / "b.txt").exists() and not (tmp_path / "metadata").exists()
    with pytest.raises(Exception, match="location field"):
        table(tmp_path).remove_orphan_files(older_than_ms=NOW_PLUS())
    assert (outside / "b.txt").exists()


def test_bug3_table_locations_never_nest_or_collide(tmp_path, capsys):
    """bug3: db.t.x would live inside db.t (orphan removal of db.t destroyed it): refused,
    and so is a table around another; "db.a/b" is not a table name. Nothing is written for
    a refused create; db.t's orphan removal leaves the other tables alone."""
    rows = rows_file(tmp_path)
    assert icefloe(tmp_path, "create", "db.t", "--schema-from", rows) == EXIT_OK
    assert icefloe(tmp_path, "create", "db.t.x", "--schema-from", rows) == EXIT_USAGE
    assert "TableLocationOverlap" in capsys.readouterr().err
    assert not (tmp_path / "warehouse" / "db" / "t" / "x").exists()
    assert icefloe(tmp_path, "create", "db.a.b", "--schema-from", rows) == EXIT_OK
    assert icefloe(tmp_path, "create", "db.a", "--schema-from", rows) == EXIT_USAGE    # around db.a.b
    assert icefloe(tmp_path, "create", "db.a/b", "--schema-from", rows) == EXIT_USAGE
    assert "InvalidIdentifier" in capsys.readouterr().err
    icefloe(tmp_path, "append", "db.t", rows)
    icefloe(tmp_path, "append", "db.a.b", rows)
    table(tmp_path).remove_orphan_files(older_than_ms=NOW_PLUS())
    assert table(tmp_path, "db.a.b").scan().num_rows == 10
    catalog = SqlCatalog(f"sqlite:///{tmp_path}/icefloe.db")
    with pytest.raises(TableLocationOverlap):
        create_table(catalog, "db.u", table(tmp_path).metadata.schema(),
                     location=table(tmp_path).location + "/inner", io=StoreRouter())


def test_bug4_a_table_name_cannot_leave_the_warehouse(tmp_path):
    """bug4: a level that is an absolute path is refused before anything is written."""
    rows = rows_file(tmp_path)
    escape = tmp_path.parent / f"icefloe_escape_{os.getpid()}"
    assert icefloe(tmp_path, "create", f"db.{escape}/t", "--schema-from", rows) == EXIT_USAGE
    assert not escape.exists()
    with pytest.raises(InvalidIdentifier):
        TableIdentifier(("db",), "/etc")


def test_bug5_cleanup_trouble_after_a_committed_expiry_is_a_warning(tmp_path, capsys):
    """bug5: an expired entry naming a location with a '..' segment is refused, the other
    expired files are still deleted, and expire exits 0 with a warning naming it."""
    rows = rows_file(tmp_path)
    icefloe(tmp_path, "create", "db.t", "--schema-from", rows)
    icefloe(tmp_path, "append", "db.t", rows)
    t = table(tmp_path)
    odd = f"{t.location}/data/../../elsewhere.parquet"
    commit_foreign_file(t, odd, Path(t.location.removeprefix("file://")).parent / "elsewhere.parquet")
    t.refresh().delete_files([odd])
    icefloe(tmp_path, "append", "db.t", rows)
    capsys.readouterr()
    assert icefloe(tmp_path, "expire", "db.t", "--older-than", str(NOW_PLUS()), "--retain-last", "1") == EXIT_OK
    out = capsys.readouterr()
    assert "cleanup incomplete" in out.err and "elsewhere.parquet" in out.err
    deleted = int(re.search(r"deleted (\d+) file", out.out).group(1))
    assert deleted > 0                        # the expired snapshots' manifest lists, all the same
    assert (Path(t.location.removeprefix("file://")).parent / "elsewhere.parquet").exists()


def test_bug8_no_lock_or_dead_writers_temporary_file_is_left(tmp_path, capsys):
    """bug8: after appends, a compaction, an expiry and orphan removal no lock file is
    left, and orphan removal deletes a dead writer's temporary file; --dry-run deletes
    nothing and says what it would delete."""
    rows = rows_file(tmp_path)
    icefloe(tmp_path, "create", "db.t", "--schema-from", rows)
    for _ in range(3):
        icefloe(tmp_path, "append", "db.t", rows)
    icefloe(tmp_path, "compact", "db.t")
    icefloe(tmp_path, "expire", "db.t", "--older-than", str(NOW_PLUS()), "--retain-last", "1")
    wh = tmp_path / "warehouse"
    assert not list(wh.rglob("*.icefloe-lock"))
    temp = next((wh / "db" / "t" / "data").rglob("*.parquet")).parent / ".x.parquet.0123.icefloe-tmp"
    temp.write_bytes(b"half an object")
    os.utime(temp, (time.time() - 5 * 86400,) * 2)
    capsys.readouterr()
    assert icefloe(tmp_path, "remove-orphans", "db.t", "--dry-run") == EXIT_OK
    out = capsys.readouterr().out
    assert "would delete" in out and temp.name in out
    assert temp.exists()
    assert icefloe(tmp_path, "remove-orphans", "db.t") == EXIT_OK
    assert not temp.exists() and not list(wh.rglob("*.icefloe-lock"))
    assert table(tmp_path).scan().num_rows == 30


def test_bug10_a_read_only_catalog_is_reported_as_unavailable_and_create_leaks_nothing(tmp_path):
    """bug10: with a catalog database that cannot be written, an append ends as a Conflict
    whose cause is `store` and whose reason names the database's error (not "out of
    attempts"), and a create raises CatalogUnavailable and leaves no metadata file."""
    db = tmp_path / "cat.db"
    writable = SqlCatalog(f"sqlite:///{db}")
    schema_rows = pq.read_table(rows_file(tmp_path))
    from icefloe.impl.format.types import schema_from_arrow
    schema = schema_from_arrow(schema_rows.schema)
    create_table(writable, "db.t", schema, location=f"file://{tmp_path}/wh/db/t", io=StoreRouter(),
                 properties={"commit.retry.min-wait-ms": "0", "commit.retry.max-wait-ms": "0"})
    read_only = SqlCatalog(connect=lambda: sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False))
    outcome = Table(read_only, "db.t", StoreRouter()).append(schema_rows)
    assert isinstance(outcome, Conflict) and outcome.cause == STORE
    assert "readonly" in outcome.reason
    with pytest.raises(CatalogUnavailable):
        create_table(read_only, "db.u", schema, location=f"file://{tmp_path}/wh/db/u", io=StoreRouter())
    assert not (tmp_path / "wh" / "db" / "u").exists() or not list((tmp_path / "wh" / "db" / "u").rglob("*.json"))
