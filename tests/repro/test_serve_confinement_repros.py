"""Regression tests for ../shared/repro bug11, bug12, bug17 and bug18, the server's side
(issue 31 item 1): `icefloe serve` puts tables only under the warehouse or an allowed root,
a purge deletes only what the table's metadata reaches inside its location, register keeps
create's overlap rule, bodies are bounded, and names are refused by one rule on every path.
Each test runs what the repro script ran, against the real server (uvicorn on 127.0.0.1)
with HTTP requests and pyiceberg's REST client."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
import requests

from icefloe.conformance.testing.rest_server import RestServer
from icefloe.impl.serve.cli import make_service

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "a", "type": "long", "required": False}]}
JSON = {"Content-Type": "application/json"}


def serve(tmp_path: Path, allowed=(), **options) -> RestServer:
    service = make_service(f"sqlite:///{tmp_path}/cat.db", str(tmp_path / "wh"), allowed_locations=tuple(allowed))
    return RestServer("", "", service=service, **options)


def post(url: str, path: str, body, **kw) -> requests.Response:
    data = body if isinstance(body, bytes) else json.dumps(body)
    return requests.post(url + path, data=data, headers=JSON, timeout=120, **kw)


def create(url: str, name: str, namespace: str = "db", **fields) -> requests.Response:
    post(url, "/v1/namespaces", {"namespace": namespace.split(".")})
    return post(url, f"/v1/namespaces/{namespace.replace('.', chr(0x1f))}/tables",
                {"name": name, "schema": SCHEMA, **fields})


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def test_bug11_a_table_outside_the_warehouse_is_refused_and_a_purge_keeps_foreign_files(tmp_path):
    """bug11: create with `location` outside the warehouse is 403 and writes nothing there;
    a table inside the warehouse whose directory also holds a file it never wrote keeps that
    file through a purge, while its own metadata files go."""
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "precious.txt").write_text("precious")
    (victim / "sub" / "also.txt").write_text("also")
    with serve(tmp_path) as s:
        answer = create(s.url, "v", location=f"file://{victim}")
        assert answer.status_code == 403 and answer.json()["error"]["type"] == "ForbiddenException"
        assert files_under(victim) == ["precious.txt", "sub/also.txt"]
        for outside in ("file:///etc", "/tmp", f"file://{tmp_path}", f"file://{tmp_path}/wh", "s3://bucket/x"):
            assert create(s.url, "v", location=outside).status_code == 403, outside
        assert create(s.url, "v", location="relative/dir").status_code == 400
        assert create(s.url, "t").status_code == 200
        root = tmp_path / "wh" / "db" / "t"
        (root / "data").mkdir(exist_ok=True)
        (root / "data" / "notes.txt").write_text("not the table's")
        assert requests.delete(s.url + "/v1/namespaces/db/tables/t?purgeRequested=true").status_code == 204
    assert files_under(root) == ["data/notes.txt"]
    assert files_under(victim) == ["precious.txt", "sub/also.txt"]


def test_bug11_allowed_locations_and_links_out_of_the_warehouse(tmp_path):
    """bug11: an `--allowed-location` root admits tables below it (not the root itself); a
    symbolic link inside the warehouse that leads out of it does not; a staged create's
    set-location is held to the same rule."""
    extra = tmp_path / "extra"
    extra.mkdir()
    (tmp_path / "wh").mkdir()
    os.symlink(tmp_path / "victim", tmp_path / "wh" / "link")
    (tmp_path / "victim").mkdir()
    with serve(tmp_path, allowed=[str(extra)]) as s:
        assert create(s.url, "a", location=f"file://{extra}/a").status_code == 200
        assert create(s.url, "b", location=f"file://{extra}").status_code == 403
        assert create(s.url, "c", location=f"file://{tmp_path}/wh/link/c").status_code == 403
        staged = create(s.url, "d", **{"stage-create": True}).json()["metadata"]
        updates = [{"action": "assign-uuid", "uuid": staged["table-uuid"]},
                   {"action": "upgrade-format-version", "format-version": 2},
                   {"action": "add-schema", "schema": SCHEMA}, {"action": "set-current-schema", "schema-id": -1},
                   {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
                   {"action": "set-default-spec", "spec-id": -1},
                   {"action": "set-location", "location": f"file://{tmp_path}/victim"}]
        answer = post(s.url, "/v1/namespaces/db/tables/d",
                      {"requirements": [{"type": "assert-create"}], "updates": updates})
        assert answer.status_code == 403, answer.text
        assert requests.head(s.url + "/v1/namespaces/db/tables/d").status_code == 404
    assert files_under(tmp_path / "victim") == []


def test_bug12_register_of_a_live_tables_metadata_under_a_second_name_is_refused(tmp_path):
    """bug12: register of db.t's current metadata as db.twin is 409 (create's overlap rule);
    purging the name that does not exist deletes nothing; db.t still reads its 10 rows.
    Register of metadata outside the warehouse is 403; overwrite of db.t by its own metadata
    is allowed (the table itself is not "another table")."""
    from pyiceberg.catalog.rest import RestCatalog
    with serve(tmp_path) as s:
        catalog = RestCatalog("r", uri=s.url)
        catalog.create_namespace("db")
        table = catalog.create_table("db.t", schema=pa.schema([("a", pa.int64())]))
        table.append(pa.table({"a": list(range(10))}))
        current = requests.get(s.url + "/v1/namespaces/db/tables/t").json()["metadata-location"]
        answer = post(s.url, "/v1/namespaces/db/register", {"name": "twin", "metadata-location": current})
        assert answer.status_code == 409 and "db.t" in answer.json()["error"]["message"]
        assert requests.delete(s.url + "/v1/namespaces/db/tables/twin?purgeRequested=true").status_code == 404
        assert post(s.url, "/v1/namespaces/db/register",
                    {"name": "t", "metadata-location": current, "overwrite": True}).status_code == 200
        outside = tmp_path / "elsewhere" / "metadata" / "00000-x.metadata.json"
        outside.parent.mkdir(parents=True)
        outside.write_text(Path(current.removeprefix("file://")).read_text())
        assert post(s.url, "/v1/namespaces/db/register",
                    {"name": "u", "metadata-location": f"file://{outside}"}).status_code == 403
        assert post(s.url, "/v1/namespaces/db/register",
                    {"name": "u", "metadata-location": "file:///etc/passwd"}).status_code == 400
        assert catalog.load_table("db.t").scan().to_arrow().num_rows == 10


def test_bug12_a_purge_deletes_what_the_metadata_reaches(tmp_path):
    """bug12/bug11: a purge through the server deletes the table's data, manifests and
    metadata files (the CLI's rule, impl/table/drop.py) and leaves the warehouse's other
    table whole."""
    from pyiceberg.catalog.rest import RestCatalog
    with serve(tmp_path) as s:
        catalog = RestCatalog("r", uri=s.url)
        catalog.create_namespace("db")
        for name in ("t", "u"):
            catalog.create_table(f"db.{name}", schema=pa.schema([("a", pa.int64())])).append(
                pa.table({"a": [1, 2, 3]}))
        before = files_under(tmp_path / "wh" / "db" / "t")
        assert any(f.startswith("data/") for f in before) and any(f.endswith(".metadata.json") for f in before)
        assert requests.delete(s.url + "/v1/namespaces/db/tables/t?purgeRequested=true").status_code == 204
        assert not (tmp_path / "wh" / "db" / "t").exists()
        assert catalog.load_table("db.u").scan().to_arrow().num_rows == 3


def test_bug17_a_body_past_the_limit_is_413_and_nothing_is_written(tmp_path):
    """bug17: a set-properties commit larger than --max-request-bytes is 413, announced by
    its Content-Length or streamed in chunks without one; no metadata file is written; a
    body under the limit still commits."""
    with serve(tmp_path, max_request_bytes=1 << 20) as s:
        assert create(s.url, "t").status_code == 200
        metadata = tmp_path / "wh" / "db" / "t" / "metadata"
        before = sorted(os.listdir(metadata))

        def body(n: int) -> bytes:
            return json.dumps({"requirements": [], "updates": [
                {"action": "set-properties", "updates": {"k": "x" * n}}]}).encode()
        answer = post(s.url, "/v1/namespaces/db/tables/t", body(2 << 20))
        assert answer.status_code == 413 and answer.json()["error"]["code"] == 413
        big = body(2 << 20)
        chunked = requests.post(s.url + "/v1/namespaces/db/tables/t", headers=JSON, timeout=60,
                                data=(big[i:i + 65536] for i in range(0, len(big), 65536)))
        assert chunked.status_code == 413
        assert sorted(os.listdir(metadata)) == before
        assert post(s.url, "/v1/namespaces/db/tables/t", body(1000)).status_code == 200


@pytest.mark.parametrize("how", ["create", "path", "namespace", "rename", "register", "transaction"])
def test_bug18_names_with_surrounding_whitespace_are_refused_on_every_path(tmp_path, how):
    """bug18: a level with a leading or trailing space is 400 BadRequestException wherever
    a name comes in (body, path, namespace, rename, register, transaction), and no second
    table appears."""
    with serve(tmp_path) as s:
        assert create(s.url, "t").status_code == 200
        u = s.url
        answer = {
            "create": lambda: create(u, "t "),
            "path": lambda: requests.get(u + "/v1/namespaces/db/tables/%20t"),
            "namespace": lambda: post(u, "/v1/namespaces", {"namespace": ["db "]}),
            "rename": lambda: post(u, "/v1/tables/rename", {"source": {"namespace": ["db"], "name": "t"},
                                                            "destination": {"namespace": ["db"], "name": "t "}}),
            "register": lambda: post(u, "/v1/namespaces/db/register",
                                     {"name": " t", "metadata-location": f"file://{tmp_path}/wh/db/t/metadata/x"}),
            "transaction": lambda: post(u, "/v1/transactions/commit", {"table-changes": [
                {"identifier": {"namespace": ["db"], "name": "t\t"}, "requirements": [], "updates": []}]}),
        }[how]()
        assert answer.status_code == 400 and answer.json()["error"]["type"] == "BadRequestException", answer.text
        assert "whitespace" in answer.json()["error"]["message"]
        assert requests.get(u + "/v1/namespaces/db/tables").json()["identifiers"] == [{"namespace": ["db"],
                                                                                        "name": "t"}]
        assert requests.get(u + "/v1/namespaces").json()["namespaces"] == [["db"]]


def test_bug18_a_name_the_store_cannot_hold_is_400_never_5xx(tmp_path):
    """bug18: a 300-character table name, namespace level or location is 400 (not the 503
    a client retries); nothing is written for it."""
    with serve(tmp_path) as s:
        assert create(s.url, "x" * 300).status_code == 400
        assert post(s.url, "/v1/namespaces", {"namespace": ["n" * 300]}).status_code == 400
        assert post(s.url, "/v1/namespaces", {"namespace": ["n" * 200, "m" * 200]}).status_code == 400
        deep = "/".join(["d" * 200] * 6)
        answer = create(s.url, "t", location=f"file://{tmp_path}/wh/{deep}")
        assert answer.status_code == 400, answer.text
        assert requests.get(s.url + "/v1/namespaces/db/tables/" + "x" * 300).status_code == 400
    assert not (tmp_path / "wh" / "db").exists() or files_under(tmp_path / "wh" / "db") == []
