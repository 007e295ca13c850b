"""The table commands on S3 (moto's server on 127.0.0.1): the S3 pointer catalog's
namespaces, list, describe, a schema change, a branch and drop --purge, which deletes
the table's objects and nothing else in the bucket."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from icefloe.conformance.testing.moto_server import (
    DEFAULT_ACCESS_KEY, DEFAULT_BUCKET, DEFAULT_SECRET_KEY, MotoS3Server, make_client,
)


@pytest.fixture
def s3(monkeypatch):
    with MotoS3Server() as server:
        monkeypatch.setenv("ICEFLOE_S3_ENDPOINT", server.endpoint_url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", DEFAULT_ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", DEFAULT_SECRET_KEY)
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        yield make_client(server.endpoint_url)


def _keys(client, prefix: str) -> set:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=DEFAULT_BUCKET, Prefix=prefix)
    return {o["Key"] for page in pages for o in page.get("Contents", [])}


def test_namespaces_schema_branch_and_purge_on_s3(cli, s3):
    """Goal: the new commands work against the S3 catalog and warehouse too. Method:
    namespace create/list/drop, create two tables, list, describe --json, add a column,
    branch and append to it, then drop --purge one table: its objects are gone, the other
    table's and an unrelated object under the same prefix are untouched."""
    where = ["--catalog", f"s3://{DEFAULT_BUCKET}/cat", "--warehouse", f"s3://{DEFAULT_BUCKET}/wh"]
    cli.write("rows.parquet", id=pa.array([1, 2], pa.int64()))
    s3.put_object(Bucket=DEFAULT_BUCKET, Key="wh/db/t-notes.txt", Body=b"not the table's")
    cli.ok(*where, "namespace", "create", "empty")
    for name in ("db.t", "db.u"):
        cli.ok(*where, "create", name, "--schema-from", "rows.parquet")
        cli.ok(*where, "append", name, "rows.parquet")
    assert cli.ok(*where, "namespace", "list").splitlines() == ["db", "empty"]
    assert cli.ok(*where, "list").splitlines() == ["db.t", "db.u", "empty.  (empty namespace)"]
    cli.ok(*where, "namespace", "drop", "empty")
    assert "NamespaceNotEmpty" in cli.fails(*where, "namespace", "drop", "db")
    cli.ok(*where, "schema", "add-column", "db.t", "note", "string")
    cli.ok(*where, "branch", "create", "db.t", "dev")
    cli.ok(*where, "append", "db.t", "rows.parquet", "--branch", "dev")
    d = json.loads(cli.ok(*where, "describe", "db.t", "--json"))
    assert [f["name"] for f in d["schema"]["fields"]] == ["id", "note"] and sorted(d["refs"]) == ["dev", "main"]
    table_keys = _keys(s3, "wh/db/t/")
    other_keys = _keys(s3, "wh/db/u/")
    assert table_keys and other_keys
    out = cli.ok(*where, "drop", "db.t", "--purge")
    assert f"deleted {len(table_keys)} file(s)" in out, (out, len(table_keys))
    assert _keys(s3, "wh/db/t/") == set()
    assert _keys(s3, "wh/db/u/") == other_keys and _keys(s3, "wh/db/t-notes.txt") == {"wh/db/t-notes.txt"}
    assert cli.ok(*where, "list", "db").splitlines() == ["db.u"]
