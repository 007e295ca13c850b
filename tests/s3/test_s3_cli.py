"""s3:// locations through the store router and the command line, against the moto server:
`--catalog s3://bucket/prefix` (the pointer-object catalog) and `--warehouse s3://...`."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.impl import cli
from icefloe.impl.io.base import NotFound
from icefloe.impl.io.router import StoreRouter
from icefloe.conformance.testing.moto_server import DEFAULT_REGION
from icefloe.impl.s3.store import S3Store

from conftest import BUCKET


@pytest.fixture
def s3_env(moto_s3, monkeypatch):
    """The environment a user sets to point icefloe at an S3 endpoint."""
    monkeypatch.setenv("ICEFLOE_S3_ENDPOINT", moto_s3.endpoint_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "cli")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_REGION", DEFAULT_REGION)
    return moto_s3


def run(capsys, *args) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_router_builds_one_s3_store_from_properties(moto_s3, prefix):
    """Goal: s3:// and s3a:// locations resolve to an S3Store configured from the router's
    properties. Method: write through s3://, read through s3a:// on the same router; both
    schemes share one store, whose request counts the router reports."""
    router = StoreRouter({"s3.endpoint": moto_s3.endpoint_url, "s3.access-key-id": "router",
                          "s3.secret-access-key": "secret", "s3.region": DEFAULT_REGION})
    location = f"s3://{BUCKET}/{prefix}/a.json"
    router.put_if_absent(location, b"{}")
    assert router.get(f"s3a://{BUCKET}/{prefix}/a.json") == b"{}"
    store = router.store_for(location)
    assert isinstance(store, S3Store) and router.store_for("s3a://x/y") is store
    assert router.counts["put_if_absent"] == 1 and router.counts["get"] == 1
    with pytest.raises(NotFound):
        router.get(f"s3://{BUCKET}/{prefix}/missing.json")


def test_store_settings_fall_back_to_the_environment(s3_env, prefix):
    """Goal: with no properties the endpoint and keys come from the environment. Method: a
    router with no properties writes to moto; the server counts the request under the access
    key id taken from AWS_ACCESS_KEY_ID."""
    before = s3_env.middleware.counts()
    StoreRouter().put_if_absent(f"s3://{BUCKET}/{prefix}/env.json", b"1")
    seen = s3_env.middleware.counts() - before
    assert seen[("PUT", "ConditionalPutObject", "cli")] == 1, seen


def test_cli_on_the_s3_catalog_and_an_s3_warehouse(s3_env, prefix, tmp_path, capsys):
    """Goal: the CLI runs a table whose catalog and files are both on S3. Method: create with
    --catalog s3://... --warehouse s3://..., append twice, scan with a filter, history, scan the
    current metadata JSON by its s3:// location; the pointer object names that location."""
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "cat": ["a", "b", "a"]}),
                   tmp_path / "rows.parquet")
    (tmp_path / "more.csv").write_text("id,cat\n4,b\n")
    where = ["--catalog", f"s3://{BUCKET}/{prefix}/catalog", "--warehouse", f"s3://{BUCKET}/{prefix}/wh"]
    code, out, err = run(capsys, *where, "create", "db.t", "--schema-from", str(tmp_path / "rows.parquet"),
                         "--partition-by", "cat")
    assert code == 0, err
    assert f"s3://{BUCKET}/{prefix}/wh/db/t" in out
    assert run(capsys, *where, "append", "db.t", str(tmp_path / "rows.parquet"))[0] == 0
    assert run(capsys, *where, "append", "db.t", str(tmp_path / "more.csv"))[0] == 0
    code, out, err = run(capsys, *where, "scan", "db.t", "--format", "json", "--filter", "id > 1")
    assert code == 0, err
    assert sorted(r["id"] for r in json.loads(out)) == [2, 3, 4]
    code, out, _ = run(capsys, *where, "history", "db.t", "--json")
    history = json.loads(out)
    assert len(history) == 2 and history[1]["parent_snapshot_id"] == history[0]["snapshot_id"]
    pointer = json.loads(s3_env.client().get_object(
        Bucket=BUCKET, Key=f"{prefix}/catalog/db.db/t/metadata/pointer.json")["Body"].read())
    metadata_location = pointer["metadata-location"]
    assert metadata_location.startswith(f"s3://{BUCKET}/{prefix}/wh/db/t/metadata/")
    code, out, err = run(capsys, "scan", metadata_location, "--format", "json")
    assert code == 0, err
    assert sorted(r["id"] for r in json.loads(out)) == [1, 2, 3, 4]


def test_cli_sqlite_catalog_with_an_s3_warehouse(s3_env, prefix, tmp_path, capsys):
    """Goal: the SQL catalog and S3 files combine. Method: create and append with a SQLite
    catalog and an s3:// warehouse; the data files are S3 objects under the warehouse."""
    pq.write_table(pa.table({"id": pa.array([7], pa.int64())}), tmp_path / "rows.parquet")
    where = ["--catalog", f"sqlite:///{tmp_path}/cat.db", "--warehouse", f"s3://{BUCKET}/{prefix}/wh"]
    assert run(capsys, *where, "create", "db.t", "--schema-from", str(tmp_path / "rows.parquet"))[0] == 0
    assert run(capsys, *where, "append", "db.t", str(tmp_path / "rows.parquet"))[0] == 0
    code, out, _ = run(capsys, *where, "scan", "db.t", "--format", "json")
    assert code == 0 and [r["id"] for r in json.loads(out)] == [7]
    keys = [o["Key"] for o in s3_env.client().list_objects_v2(
        Bucket=BUCKET, Prefix=f"{prefix}/wh/db/t/data/").get("Contents", [])]
    assert len(keys) == 1 and keys[0].endswith(".parquet")


def test_cli_refuses_an_unknown_warehouse_scheme(tmp_path, capsys):
    """Goal: a warehouse of a scheme with no store gets one line and exit 2. Method: gopher://."""
    pq.write_table(pa.table({"id": pa.array([7], pa.int64())}), tmp_path / "rows.parquet")
    code, _, err = run(capsys, "--catalog", f"sqlite:///{tmp_path}/cat.db", "--warehouse", "gopher://h/w",
                       "create", "db.t", "--schema-from", str(tmp_path / "rows.parquet"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "gopher" in err


def test_cli_without_credentials_gets_one_line(moto_s3, monkeypatch, capsys):
    """Goal: no S3 keys is a one-line error before any request, not a traceback and not a probe
    of boto3's wider credential chain. Method: clear the key variables, scan an S3 catalog."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ICEFLOE_S3_ENDPOINT", moto_s3.endpoint_url)
    before = moto_s3.middleware.counts()
    code, _, err = run(capsys, "--catalog", f"s3://{BUCKET}/nocreds", "scan", "db.t")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "no S3 credentials" in err and "AWS_ACCESS_KEY_ID" in err
    assert moto_s3.middleware.counts() == before  # refused before sending anything
