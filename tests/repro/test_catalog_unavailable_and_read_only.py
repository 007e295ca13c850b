"""Issue 14 item 4, the leftovers after bug7/bug10: a catalog that refuses (permissions) or
fails (IO) is CatalogUnavailable on every catalog, and a commit through it ends as a
definite failure caused by the store (Conflict cause `store`, the catalog's error named),
never as a lost race ("out of attempts"); and read-only commands (scan, history) create no
file, database or directory. PostgreSQL's permissions: tests/postgres/test_postgres_unavailable.py."""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.impl.catalog.base import CatalogUnavailable, TableIdentifier
from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.cli import EXIT_NOT_COMMITTED, EXIT_OK, EXIT_USAGE, main as cli_main
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.outcomes import STORE, Conflict
from icefloe.impl.table.table import Table, create_table

ROWS = pa.table({"id": pa.array([1, 2], pa.int64())})


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize("command", [["scan", "db.t"], ["history", "db.t"], ["scan", "db.t", "--format", "json"],
                                     ["history", "db.t", "--json"], ["describe", "db.t"], ["list"],
                                     ["namespace", "list"], ["remove-orphans", "db.t", "--dry-run"]])
def test_read_only_commands_create_no_database_and_no_directory(tmp_path, monkeypatch, capsys, command):
    """Goal: commands that only read (scan, history, describe, list, namespace list, a dry run
    of orphan removal) against a catalog database that does not exist create nothing (scan
    used to create an empty icefloe.db, and the error then said NoSuchTable). Method: run each
    in an empty directory with the default catalog and an explicit one; list the directory."""
    monkeypatch.chdir(tmp_path)
    assert cli_main(command) == EXIT_USAGE
    assert cli_main(["--catalog", f"sqlite:///{tmp_path}/sub/cat.db", "--warehouse", str(tmp_path / "wh"),
                     *command]) == EXIT_USAGE
    assert files_under(tmp_path) == set()
    err = capsys.readouterr().err
    assert "no catalog database at" in err and "creates none" in err


def test_read_only_commands_on_an_existing_catalog_change_no_file(tmp_path, monkeypatch, capsys):
    """Goal: a read of an existing table writes nothing: not the database (same bytes, same
    mtime), not the warehouse. Method: create and append, snapshot every file's bytes and
    mtime, then scan and history."""
    monkeypatch.chdir(tmp_path)
    csv = tmp_path.parent / f"{tmp_path.name}-rows.csv"
    csv.write_text("id,name\n1,a\n")
    assert cli_main(["create", "db.t", "--schema-from", str(csv)]) == EXIT_OK
    assert cli_main(["append", "db.t", str(csv)]) == EXIT_OK
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.rglob("*") if p.is_file()}
    assert cli_main(["scan", "db.t", "--format", "csv"]) == EXIT_OK
    assert cli_main(["history", "db.t"]) == EXIT_OK
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before
    assert "1,a" in capsys.readouterr().out.replace('"', "")


def test_a_read_only_sql_catalog_refuses_writes_as_unavailable(tmp_path):
    """Goal: SqlCatalog(read_only=True) reads, and a write through it is CatalogUnavailable (a
    create) or a commit that failed because of the catalog (cause store, the database's
    error named), never a lost race. Method: a table made writable, then the same database
    opened read-only."""
    uri = f"sqlite:///{tmp_path}/cat.db"
    writable = SqlCatalog(uri)
    create_table(writable, "db.t", schema_from_arrow(ROWS.schema), None, f"file://{tmp_path}/wh/db/t",
                 io=StoreRouter())
    reader = SqlCatalog(uri, read_only=True)
    assert reader.load(TableIdentifier.parse("db.t")).startswith(f"file://{tmp_path}/wh/db/t/metadata/")
    with pytest.raises(CatalogUnavailable, match="readonly"):
        reader.create(TableIdentifier.parse("db.u"), f"file://{tmp_path}/wh/db/u/metadata/x.metadata.json")
    outcome = Table(reader, "db.t", StoreRouter()).append(ROWS)
    assert isinstance(outcome, Conflict) and outcome.cause == STORE, outcome
    assert "readonly" in outcome.reason and "out of attempts" not in outcome.reason


def test_an_unreadable_catalog_file_is_unavailable_on_every_call(tmp_path):
    """Goal: IO errors of the catalog's database (here: a directory where the file should be,
    and a file that is not a database) are CatalogUnavailable, for reads and for opening.
    Method: point SqlCatalog at each."""
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(CatalogUnavailable):
        SqlCatalog(f"sqlite:///{tmp_path}/dir.db")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(CatalogUnavailable):
        SqlCatalog(f"sqlite:///{junk}")
    with pytest.raises(CatalogUnavailable):
        SqlCatalog(f"sqlite:///{junk}", read_only=True)


def test_cli_append_to_a_read_only_catalog_says_the_catalog_failed(tmp_path, monkeypatch, capsys):
    """Goal: the CLI reports a catalog that cannot take the swap as unavailable, exit 1 (not
    committed), naming the database's error. Method: create through the CLI, then append
    with the CLI's catalog opened read-only (root ignores file modes, so the database is
    made read-only by how it is opened; ../shared/repro bug10 uses chattr for the same)."""
    monkeypatch.chdir(tmp_path)
    csv = tmp_path / "rows.csv"
    csv.write_text("id\n1\n")
    assert cli_main(["create", "db.t", "--schema-from", str(csv)]) == EXIT_OK
    from icefloe.impl.cli import common
    monkeypatch.setattr(common, "catalog", lambda args: SqlCatalog(args.catalog, read_only=True))
    assert cli_main(["append", "db.t", str(csv)]) == EXIT_NOT_COMMITTED
    err = capsys.readouterr().err
    assert "unavailable" in err and "readonly" in err and "out of attempts" not in err
    assert os.path.exists(tmp_path / "icefloe.db")
