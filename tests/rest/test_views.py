"""Views through `icefloe serve` (issue 31 item 4; REST spec view endpoints, Iceberg view
spec): goal, every view endpoint answers the spec's shapes and codes, versions are committed
by compare-and-swap (two replaces racing on one version: one 200, one 409), and pyiceberg
0.12's view calls work. Method: the real server on a SQLite catalog, raw HTTP for the
shapes, pyiceberg's RestCatalog for the client, a barrier in front of the store's swap to
make two replaces read the same version before either swaps."""
from __future__ import annotations

import json
import os
import threading

import pytest
import requests

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def version(sql: str, dialect: str = "spark", **extra) -> dict:
    return {"version-id": 1, "timestamp-ms": 1_700_000_000_000, "schema-id": 0, "summary": {"engine-name": "test"},
            "representations": [{"type": "sql", "sql": sql, "dialect": dialect}], "default-namespace": ["db"],
            **extra}


def post(server, path: str, body) -> requests.Response:
    return requests.post(server.url + path, data=json.dumps(body), headers={"Content-Type": "application/json"},
                         timeout=60)


def make_view(server, name: str = "v", **fields) -> requests.Response:
    post(server, "/v1/namespaces", {"namespace": ["db"]})
    return post(server, "/v1/namespaces/db/views",
                {"name": name, "schema": SCHEMA, "view-version": version("SELECT 1 AS id"), **fields})


def replace_body(metadata: dict, sql: str, dialect: str = "spark") -> dict:
    return {"requirements": [{"type": "assert-view-uuid", "uuid": metadata["view-uuid"]}],
            "updates": [{"action": "add-schema", "schema": SCHEMA},
                        {"action": "add-view-version", "view-version": version(sql, dialect, **{"schema-id": -1})},
                        {"action": "set-current-view-version", "view-version-id": -1}]}


def test_create_load_list_exists_replace_rename_drop(server, warehouse):
    """Goal: the view endpoints' codes and shapes, and the metadata file per the view spec;
    method: raw HTTP through the whole life of one view."""
    created = make_view(server, properties={"comment": "c"})
    assert created.status_code == 200, created.text
    body = created.json()
    m = body["metadata"]
    assert body["metadata-location"].startswith(f"file://{warehouse}/db/v/metadata/00000-")
    assert m["format-version"] == 1 and m["current-version-id"] == 1 and m["properties"] == {"comment": "c"}
    assert [s["schema-id"] for s in m["schemas"]] == [0] and m["version-log"][0]["version-id"] == 1
    on_disk = json.loads(open(body["metadata-location"].removeprefix("file://")).read())
    assert on_disk == m
    assert requests.get(server.url + "/v1/namespaces/db/views").json() == {
        "identifiers": [{"namespace": ["db"], "name": "v"}]}
    assert requests.head(server.url + "/v1/namespaces/db/views/v").status_code == 204
    assert requests.head(server.url + "/v1/namespaces/db/views/nope").status_code == 404
    replaced = post(server, "/v1/namespaces/db/views/v", replace_body(m, "SELECT 2 AS id"))
    assert replaced.status_code == 200, replaced.text
    r = replaced.json()
    assert r["metadata-location"].rsplit("/", 1)[-1].startswith("00001-")
    assert r["metadata"]["current-version-id"] == 2 and [e["version-id"] for e in r["metadata"]["version-log"]] == [1, 2]
    assert requests.get(server.url + "/v1/namespaces/db/views/v").json()["metadata"] == r["metadata"]
    stale = dict(m, **{"view-uuid": "00000000-0000-0000-0000-000000000000"})
    failed = post(server, "/v1/namespaces/db/views/v", replace_body(stale, "SELECT 3 AS id"))
    assert failed.status_code == 409 and failed.json()["error"]["type"] == "CommitFailedException"
    assert post(server, "/v1/views/rename", {"source": {"namespace": ["db"], "name": "v"},
                                             "destination": {"namespace": ["db"], "name": "w"}}).status_code == 204
    assert requests.get(server.url + "/v1/namespaces/db/views/v").json()["error"]["type"] == "NoSuchViewException"
    assert requests.delete(server.url + "/v1/namespaces/db/views/w").status_code == 204
    assert requests.delete(server.url + "/v1/namespaces/db/views/w").status_code == 404
    assert requests.get(server.url + "/v1/namespaces/db/views").json() == {"identifiers": []}


def test_tables_and_views_share_one_name_space(server):
    """Goal: a view cannot take a table's name nor a table a view's (409), and neither shows
    in the other's list or load (404); method: raw HTTP."""
    assert make_view(server).status_code == 200
    clash = post(server, "/v1/namespaces/db/tables", {"name": "v", "schema": SCHEMA})
    assert clash.status_code == 409
    assert post(server, "/v1/namespaces/db/tables", {"name": "t", "schema": SCHEMA}).status_code == 200
    assert make_view(server, "t").status_code == 409
    assert requests.get(server.url + "/v1/namespaces/db/tables/v").status_code == 404
    assert requests.get(server.url + "/v1/namespaces/db/views/t").status_code == 404
    assert [i["name"] for i in requests.get(server.url + "/v1/namespaces/db/tables").json()["identifiers"]] == ["t"]
    assert requests.delete(server.url + "/v1/namespaces/db").status_code == 409      # not empty: it holds v


def test_bad_views_are_refused(server, tmp_path):
    """Goal: a version without a field, two SQLs of one dialect, a location outside the
    warehouse, a new version dropping a dialect, an unknown action: each refused (400 / 403),
    nothing listed. Method: raw HTTP."""
    post(server, "/v1/namespaces", {"namespace": ["db"]})
    no_ns = version("SELECT 1")
    del no_ns["default-namespace"]
    two = version("SELECT 1")
    two["representations"].append({"type": "sql", "sql": "SELECT 2", "dialect": "SPARK"})
    for bad in (no_ns, two):
        answer = post(server, "/v1/namespaces/db/views", {"name": "v", "schema": SCHEMA, "view-version": bad})
        assert answer.status_code == 400, answer.text
    outside = make_view(server, location=f"file://{tmp_path}/outside")
    assert outside.status_code == 403
    assert requests.get(server.url + "/v1/namespaces/db/views").json() == {"identifiers": []}
    m = make_view(server).json()["metadata"]
    assert post(server, "/v1/namespaces/db/views/v", replace_body(m, "SELECT 2", "trino")).status_code == 400
    unknown = {"requirements": [], "updates": [{"action": "explode"}]}
    assert post(server, "/v1/namespaces/db/views/v", unknown).status_code == 400
    assert requests.get(server.url + "/v1/namespaces/db/views/v").json()["metadata"] == m


def test_versions_kept_follow_the_history_property(server):
    """Goal: with version.history.num-entries=2 the view keeps its two newest versions and
    the version log names only kept versions; an equal version is reused, not added.
    Method: four replaces through raw HTTP."""
    m = make_view(server, properties={"version.history.num-entries": "2"}).json()["metadata"]
    for sql in ("SELECT 2", "SELECT 3", "SELECT 4", "SELECT 4"):
        answer = post(server, "/v1/namespaces/db/views/v", replace_body(m, sql))
        assert answer.status_code == 200, answer.text
        m = answer.json()["metadata"]
    assert [v["version-id"] for v in m["versions"]] == [3, 4] and m["current-version-id"] == 4
    assert {e["version-id"] for e in m["version-log"]} <= {3, 4}


def test_two_replaces_of_one_version_one_wins_the_other_is_409(server, warehouse):
    """Goal: two replaces that read the same version: exactly one lands (200), the other is
    409 CommitFailedException and leaves no metadata file; the winner's SQL is current.
    Method: a barrier in front of the store's swap holds both until each has read and
    written its version, then both swap."""
    m = make_view(server).json()["metadata"]
    store = server.service.store
    real, barrier = store.commit, threading.Barrier(2, timeout=30)

    def commit(changes, key):
        barrier.wait()
        return real(changes, key)
    store.commit = commit
    answers = {}

    def replace(sql):
        answers[sql] = post(server, "/v1/namespaces/db/views/v", replace_body(m, sql))
    threads = [threading.Thread(target=replace, args=(sql,)) for sql in ("SELECT 10", "SELECT 20")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    store.commit = real
    codes = sorted(a.status_code for a in answers.values())
    assert codes == [200, 409], {k: a.text for k, a in answers.items()}
    winner = next(sql for sql, a in answers.items() if a.status_code == 200)
    current = requests.get(server.url + "/v1/namespaces/db/views/v").json()["metadata"]
    now = next(v for v in current["versions"] if v["version-id"] == current["current-version-id"])
    assert now["representations"][0]["sql"] == winner
    assert len(os.listdir(os.path.join(warehouse, "db", "v", "metadata"))) == 2      # 00000 and the winner's


def test_pyiceberg_view_calls(rest_catalog):
    """Goal: pyiceberg 0.12's view calls (create_view, list_views, load_view, view_exists,
    drop_view, register_view) work through the server. Method: the client's own API."""
    from pyiceberg.exceptions import NoSuchViewError, ViewAlreadyExistsError
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField
    from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion
    rest_catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType()))
    vv = ViewVersion(schema_id=0, representations=[SQLViewRepresentation(type="sql", sql="SELECT 1 AS id",
                                                                          dialect="spark")],
                     default_namespace=("db",))
    view = rest_catalog.create_view("db.v", schema=schema, view_version=vv, properties={"p": "1"})
    assert view.metadata.current_version_id == 1 and view.metadata.properties == {"p": "1"}
    with pytest.raises(ViewAlreadyExistsError):
        rest_catalog.create_view("db.v", schema=schema, view_version=vv)
    assert rest_catalog.list_views("db") == [("db", "v")]
    assert rest_catalog.view_exists("db.v") and not rest_catalog.view_exists("db.nope")
    loaded = rest_catalog.load_view("db.v")
    assert loaded.metadata.versions[0].representations[0].root.sql == "SELECT 1 AS id"
    location = requests.get(f"{rest_catalog.uri}/v1/namespaces/db/views/v").json()["metadata-location"]
    rest_catalog.drop_view("db.v")
    with pytest.raises(NoSuchViewError):
        rest_catalog.load_view("db.v")
    again = rest_catalog.register_view("db.v2", location)
    assert again.metadata.view_uuid == loaded.metadata.view_uuid
    assert rest_catalog.list_views("db") == [("db", "v2")]


def test_a_store_without_views_refuses_them_and_does_not_advertise_them():
    """Goal: on a catalog that keeps no views (the PointerStore over the in-memory catalog)
    every view route is 406 UnsupportedOperationException and /v1/config lists no view
    endpoint, while tables work. Method: the server over a MemoryCatalog, raw HTTP."""
    from icefloe.conformance.testing.rest_server import RestServer
    from icefloe.impl.catalog.memory import MemoryCatalog
    from icefloe.impl.io.router import StoreRouter
    from icefloe.impl.serve.service import CatalogService
    from icefloe.impl.serve.store import store_for
    catalog = MemoryCatalog()
    service = CatalogService(catalog, store_for(catalog), StoreRouter(), "memory://wh")
    with RestServer("", "", service=service) as s:
        endpoints = requests.get(s.url + "/v1/config").json()["endpoints"]
        assert endpoints and not any("/views" in e or "register-view" in e for e in endpoints)
        assert post(s, "/v1/namespaces", {"namespace": ["db"]}).status_code == 200
        assert post(s, "/v1/namespaces/db/tables", {"name": "t", "schema": SCHEMA}).status_code == 200
        answers = [make_view(s), requests.get(s.url + "/v1/namespaces/db/views"),
                   requests.get(s.url + "/v1/namespaces/db/views/v"), requests.delete(s.url + "/v1/namespaces/db/views/v")]
        for answer in answers:
            assert answer.status_code == 406 and answer.json()["error"]["type"] == "UnsupportedOperationException"


def test_view_mutations_with_an_idempotency_key_apply_once(server, warehouse):
    """Goal: a create and a replace of a view resent with the same Idempotency-Key are
    answered as the first (same metadata location) and applied once. Method: raw HTTP,
    each request sent twice with its key (another replace landing in between the replace's
    two sends); the metadata files and the current version read."""
    post(server, "/v1/namespaces", {"namespace": ["db"]})
    body = {"name": "v", "schema": SCHEMA, "view-version": version("SELECT 1 AS id")}
    keyed = lambda path, b, key: requests.post(server.url + path, json=b, headers={"Idempotency-Key": key})  # noqa
    first, again = (keyed("/v1/namespaces/db/views", body, "create-v-1") for _ in range(2))
    assert first.status_code == again.status_code == 200
    assert first.json()["metadata-location"] == again.json()["metadata-location"]
    m = first.json()["metadata"]
    one = keyed("/v1/namespaces/db/views/v", replace_body(m, "SELECT 2 AS id"), "replace-v-1")
    assert one.status_code == 200
    assert post(server, "/v1/namespaces/db/views/v", replace_body(m, "SELECT 3 AS id")).status_code == 200
    two = keyed("/v1/namespaces/db/views/v", replace_body(m, "SELECT 2 AS id"), "replace-v-1")
    assert two.status_code == 200 and two.json()["metadata-location"] == one.json()["metadata-location"]
    assert len(os.listdir(os.path.join(warehouse, "db", "v", "metadata"))) == 3
    current = requests.get(server.url + "/v1/namespaces/db/views/v").json()["metadata"]
    assert current["current-version-id"] == 3              # the resend was answered, not applied again
