"""Helpers of the CLI tests: run `icefloe` in process (what the console script runs) in a
fresh directory with the default SQLite catalog, and open the result with pyiceberg."""
from __future__ import annotations

import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from icefloe.impl.cli import main as cli_main


class Cli:
    def __init__(self, path, capsys):
        self.path, self.capsys = path, capsys

    def __call__(self, *args) -> subprocess.CompletedProcess:
        self.capsys.readouterr()
        code = cli_main([str(a) for a in args])
        out, err = self.capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    def ok(self, *args) -> str:
        res = self(*args)
        assert res.returncode == 0, (args, res.stdout, res.stderr)
        return res.stdout

    def fails(self, *args, code: int = 2) -> str:
        """The command fails with `code` and one line on stderr, no traceback."""
        res = self(*args)
        assert res.returncode == code, (args, res.stdout, res.stderr)
        assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
        return res.stderr

    @staticmethod
    def snapshot(stdout: str) -> int:
        """The snapshot id a `committed snapshot ID ...` line names."""
        return int(stdout.split("committed snapshot ")[1].split()[0])

    def write(self, file_name: str, /, **columns) -> str:
        pq.write_table(pa.table(columns), self.path / file_name)
        return file_name

    def pyiceberg(self, name: str = "db.t"):
        return PyIcebergSqlCatalog("icefloe", uri=f"sqlite:///{self.path / 'icefloe.db'}").load_table(name)


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys) -> Cli:
    monkeypatch.chdir(tmp_path)
    return Cli(tmp_path, capsys)
