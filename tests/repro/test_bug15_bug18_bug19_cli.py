"""Regression tests for ../shared/repro bug15 (a dry run said "deleted"), bug18's command
line side (a name with stray whitespace was another table; an over-long name an
unavailable store) and bug19 (a failed JSON scan left "[" on stdout)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.impl.cli import EXIT_OK, EXIT_USAGE, main as cli_main


def icefloe(tmp_path: Path, capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli_main(["--catalog", f"sqlite:///{tmp_path}/icefloe.db", "--warehouse", str(tmp_path / "warehouse"),
                     *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def table(tmp_path, capsys):
    rows = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64()), "cat": pa.array(list("aabbccddee"))}), rows)
    assert icefloe(tmp_path, capsys, "create", "db.t", "--schema-from", rows)[0] == EXIT_OK
    assert icefloe(tmp_path, capsys, "append", "db.t", rows)[0] == EXIT_OK
    return rows


def test_bug15_a_dry_run_never_says_deleted(tmp_path, capsys, table):
    """Goal: `remove-orphans --dry-run` says what it would delete and that it deleted
    nothing. Method: a stray file ten days old in the data directory; the dry run lists it
    as "would delete", no line starts with "deleted", the file is still there; the real
    run then says "deleted 1 file(s)" and the file is gone."""
    stray = tmp_path / "warehouse" / "db" / "t" / "data" / "stray.parquet"
    stray.write_bytes(table.read_bytes())
    old = time.time() - 10 * 86_400
    os.utime(stray, (old, old))
    code, out, _ = icefloe(tmp_path, capsys, "remove-orphans", "db.t", "--dry-run")
    assert code == EXIT_OK and "would delete" in out and stray.exists()
    assert not any(line.startswith("deleted") for line in out.splitlines()), out
    assert out.splitlines()[-1] == "dry run: would delete 1 file(s); nothing was deleted"
    code, out, _ = icefloe(tmp_path, capsys, "remove-orphans", "db.t")
    assert code == EXIT_OK and "deleted 1 file(s)" in out and not stray.exists()


@pytest.mark.parametrize("name", ["db.t ", " db.t", "db .t", "db.\tt"])
def test_bug18_a_name_with_stray_whitespace_is_refused(tmp_path, capsys, table, name):
    """Goal: a stray space never names another table. Method: create, append, scan and
    drop with the name padded; each exits 2 with one line naming the whitespace and the
    name meant; the catalog still lists db.t alone."""
    for argv in (("create", name, "--schema-from", table), ("append", name, table), ("scan", name),
                 ("drop", name)):
        code, _, err = icefloe(tmp_path, capsys, *argv)
        assert code == EXIT_USAGE and "whitespace" in err and "'db.t'" in err, (argv, err)
    assert icefloe(tmp_path, capsys, "list")[1].splitlines() == ["db.t"]
    code, _, err = icefloe(tmp_path, capsys, "namespace", "create", "db ")
    assert code == EXIT_USAGE and "whitespace" in err


def test_bug18_an_over_long_name_is_refused_as_input(tmp_path, capsys, table):
    """Goal: a name no directory can carry is bad input (exit 2, one line), not an
    unavailable store. Method: a 300-character table name; nothing is created. A name of
    255 bytes is accepted."""
    code, _, err = icefloe(tmp_path, capsys, "create", "db." + "x" * 300, "--schema-from", table)
    assert code == EXIT_USAGE and "at most 255" in err and "Unavailable" not in err
    assert len(err.strip().splitlines()) == 1
    assert icefloe(tmp_path, capsys, "create", "db." + "y" * 255, "--schema-from", table)[0] == EXIT_OK


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "table"])
def test_bug19_an_error_before_the_first_row_leaves_stdout_empty(tmp_path, capsys, table, fmt):
    """Goal: a scan that fails before its first row writes nothing to stdout, in every
    format. Method: a filter naming no column; exit 2, empty stdout; a filter matching no
    row still writes a complete document (`[]` for json)."""
    code, out, err = icefloe(tmp_path, capsys, "scan", "db.t", "--filter", "nosuch = 1", "--format", fmt)
    assert code == EXIT_USAGE and out == "" and "nosuch" in err
    code, out, _ = icefloe(tmp_path, capsys, "scan", "db.t", "--filter", "id > 100", "--format", fmt)
    assert code == EXIT_OK
    assert out == {"json": "[]\n", "jsonl": "", "csv": '"id","cat"\n', "table": "(no rows)\n"}[fmt]
