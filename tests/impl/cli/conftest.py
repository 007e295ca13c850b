"""Helpers of the CLI tests: run `icefloe` in process (what the console script runs) in a
fresh directory with the default SQLite catalog, and open the result with pyiceberg."""
from __future__ import annotations

import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from icefloe.impl.cli import main as cli_main
from icefloe.conformance.testing.moto_server import (
    DEFAULT_ACCESS_KEY, DEFAULT_BUCKET, DEFAULT_SECRET_KEY, MotoS3Server,
)
from icefloe.conformance.testing.rest_server import RestServer


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


@pytest.fixture(params=["local", "s3", "rest"])
def where(request, tmp_path, monkeypatch) -> list[str]:
    """The --catalog/--warehouse arguments of one kind of table."""
    if request.param == "local":
        yield []
    elif request.param == "s3":
        with MotoS3Server() as server:
            monkeypatch.setenv("ICEFLOE_S3_ENDPOINT", server.endpoint_url)
            monkeypatch.setenv("AWS_ACCESS_KEY_ID", DEFAULT_ACCESS_KEY)
            monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", DEFAULT_SECRET_KEY)
            monkeypatch.setenv("AWS_REGION", "us-east-1")
            prefix = f"s3://{DEFAULT_BUCKET}/{tmp_path.name}"   # moto's buckets outlive one server in a process
            yield ["--catalog", f"{prefix}/cat", "--warehouse", f"{prefix}/wh"]
    else:
        warehouse = str(tmp_path / "served")
        with RestServer(f"sqlite:///{tmp_path}/served.db", warehouse) as server:
            yield ["--catalog", server.url, "--warehouse", warehouse]
