"""Format versions and default values through `icefloe serve` with pyiceberg 0.12's REST
client (issue 29 items 1 and 4): the `format-version` create property is the table's
version (never stored as a property), upgrades go one step up, and add-schema keeps
initial-default / write-default on v3 and refuses them on v2 with the spec's error model."""
from __future__ import annotations

import pyarrow as pa
import pytest
import requests

from icefloe.conformance.testing.rest_server import RestServer
from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.table.table import Table

ROWS = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])


@pytest.fixture
def served(tmp_path):
    uri = f"sqlite:///{tmp_path}/catalog.db"
    with RestServer(uri, str(tmp_path / "warehouse")) as server:
        from pyiceberg.catalog.rest import RestCatalog
        client = RestCatalog("rest", uri=server.url)
        client.create_namespace("db")
        yield server, client, uri


def _icefloe(uri, name) -> Table:
    return Table(SqlCatalog(uri), name, StoreRouter())


@pytest.mark.parametrize("version", [1, 2, 3])
def test_the_create_property_format_version_is_the_tables_version(served, version):
    """Goal: pyiceberg's create with format-version N gives a vN table without that
    property, which pyiceberg and icefloe both read as vN; v1 and v2 take pyiceberg's
    appends. Method: create through REST, append (v1, v2), load with both."""
    _, client, uri = served
    table = client.create_table("db.t", schema=ROWS, properties={"format-version": str(version), "k": "v"})
    assert table.format_version == version and "format-version" not in table.metadata.properties
    if version < 3:  # pyiceberg 0.12 writes v1 and v2 only
        table.append(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=ROWS))
    ours = _icefloe(uri, "db.t")
    assert ours.metadata.format_version == version and dict(ours.metadata.properties) == {"k": "v"}
    assert sorted(ours.scan().column("id").to_pylist()) == ([1, 2] if version < 3 else [])
    if version == 1:
        assert [s.sequence_number for s in ours.history()] == [0]
    require_ok = requests.post(f"{served[0].url}/v1/namespaces/db/tables/t", json={
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"format-version": "3"}}]})
    assert require_ok.status_code == 400 and "format-version is not a property" in require_ok.text


def test_rest_upgrades_one_step_and_refuses_down_with_the_error_model(served):
    """Goal: upgrade-format-version goes up one version; a skip, a downgrade or an unknown
    version is 400 with the spec's error model naming it. Method: raw commits."""
    server, client, uri = served
    client.create_table("db.t", schema=ROWS, properties={"format-version": "1"})
    url = f"{server.url}/v1/namespaces/db/tables/t"

    def upgrade(v):
        return requests.post(url, json={"requirements": [],
                                        "updates": [{"action": "upgrade-format-version", "format-version": v}]})
    for bad, why in ((3, "one version at a time"), (4, "not supported")):
        r = upgrade(bad)
        assert r.status_code == 400 and why in r.json()["error"]["message"]
        assert r.json()["error"]["type"] and r.json()["error"]["code"] == 400
    assert upgrade(2).status_code == 200 and upgrade(3).status_code == 200
    assert _icefloe(uri, "db.t").metadata.next_row_id == 0
    r = upgrade(2)
    assert r.status_code == 400 and "downgrade" in r.json()["error"]["message"]


def test_add_schema_keeps_defaults_on_v3_and_refuses_them_on_v2(served):
    """Goal: an add-schema with initial-default / write-default is applied on v3 (and reads
    fill old files with the initial default), refused by name on v2 (it used to be accepted
    and the defaults dropped). Method: raw add-schema + set-current-schema commits."""
    server, client, uri = served
    for name, version in (("v3", "3"), ("v2", "2")):
        client.create_table(f"db.{name}", schema=ROWS, properties={"format-version": version})
    icefloe_v3 = _icefloe(uri, "db.v3")
    icefloe_v3.append(pa.table({"id": [7], "s": ["x"]}, schema=ROWS))
    fields = [{"id": 1, "name": "id", "required": False, "type": "long"},
              {"id": 2, "name": "s", "required": False, "type": "string"},
              {"id": 3, "name": "n", "required": False, "type": "int", "initial-default": 5, "write-default": 6}]
    body = {"requirements": [], "updates": [
        {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": fields}, "last-column-id": 3},
        {"action": "set-current-schema", "schema-id": -1}]}
    assert requests.post(f"{server.url}/v1/namespaces/db/tables/v3", json=body).status_code == 200
    refused = requests.post(f"{server.url}/v1/namespaces/db/tables/v2", json=body)
    assert refused.status_code == 400 and "default value, which needs format v3" in refused.text
    table = _icefloe(uri, "db.v3")
    n = table.metadata.schema().find_field("n")
    assert (n.initial_default, n.write_default) == (5, 6)
    assert table.scan().to_pylist() == [{"id": 7, "s": "x", "n": 5}]
    loaded = client.load_table("db.v3")
    assert loaded.schema().find_field("n").initial_default == 5


def test_every_rest_update_type_is_applied_or_refused_by_name(served, tmp_path):
    """Goal: nothing a client sends is silently dropped: each update type of the REST spec
    is applied (its effect visible in the loaded metadata) or refused (400, or 406 for what
    icefloe does not implement) naming it, the metadata unchanged.
    Method: one commit per update type on a v2 table with two snapshots, then load."""
    server, client, uri = served
    client.create_table("db.t", schema=ROWS, properties={"format-version": "2"})
    ours = _icefloe(uri, "db.t")
    ours.append(pa.table({"id": [1], "s": ["a"]}, schema=ROWS))
    ours.append(pa.table({"id": [2], "s": ["b"]}, schema=ROWS))
    first, second = [s.snapshot_id for s in ours.history()]
    url = f"{server.url}/v1/namespaces/db/tables/t"

    def post(*updates):
        return requests.post(url, json={"requirements": [], "updates": list(updates)})

    def meta():
        return requests.get(url).json()["metadata"]

    schema = {"type": "struct", "schema-id": 1, "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "s", "required": False, "type": "string"},
        {"id": 3, "name": "extra", "required": False, "type": "double"}]}
    stats = {"snapshot-id": second, "statistics-path": f"{ours.location}/metadata/s.stats",
             "file-size-in-bytes": 10, "file-footer-size-in-bytes": 5, "blob-metadata": []}
    pstats = {"snapshot-id": second, "statistics-path": f"{ours.location}/metadata/p.stats", "file-size-in-bytes": 9}
    snapshot = {"snapshot-id": 77, "parent-snapshot-id": second, "sequence-number": 3, "timestamp-ms": 10**13,
                "manifest-list": ours.current_snapshot().manifest_list, "summary": {"operation": "append"},
                "schema-id": 0}
    applied = [
        (("assign-uuid",), [{"action": "assign-uuid", "uuid": ours.metadata.table_uuid}],
         lambda m: m["table-uuid"] == ours.metadata.table_uuid),
        (("add-schema", "set-current-schema"), [{"action": "add-schema", "schema": schema},
                                                {"action": "set-current-schema", "schema-id": -1}],
         lambda m: m["current-schema-id"] == 1),
        (("add-spec", "set-default-spec"), [
            {"action": "add-spec", "spec": {"spec-id": 1, "fields": [
                {"source-id": 2, "field-id": 1000, "name": "s", "transform": "identity"}]}},
            {"action": "set-default-spec", "spec-id": -1}], lambda m: m["default-spec-id"] == 1),
        (("add-sort-order", "set-default-sort-order"), [
            {"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
                {"source-id": 1, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]}},
            {"action": "set-default-sort-order", "sort-order-id": -1}], lambda m: m["default-sort-order-id"] == 1),
        (("add-snapshot", "set-snapshot-ref"), [
            {"action": "add-snapshot", "snapshot": snapshot},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 77}],
         lambda m: m["current-snapshot-id"] == 77),
        (("set-snapshot-ref",), [{"action": "set-snapshot-ref", "ref-name": "tg", "type": "tag", "snapshot-id": first}],
         lambda m: m["refs"]["tg"]["snapshot-id"] == first),
        (("remove-snapshot-ref",), [{"action": "remove-snapshot-ref", "ref-name": "tg"}], lambda m: "tg" not in m["refs"]),
        (("remove-snapshots",), [{"action": "remove-snapshots", "snapshot-ids": [first]}],
         lambda m: first not in [s["snapshot-id"] for s in m["snapshots"]]),
        (("set-location",), [{"action": "set-location", "location": ours.location}], lambda m: m["location"] == ours.location),
        (("set-properties",), [{"action": "set-properties", "updates": {"a": "1", "b": "2"}}],
         lambda m: m["properties"].get("a") == "1"),
        (("remove-properties",), [{"action": "remove-properties", "removals": ["b"]}], lambda m: "b" not in m["properties"]),
        (("set-statistics",), [{"action": "set-statistics", "statistics": stats}],
         lambda m: [s["snapshot-id"] for s in m.get("statistics", [])] == [second]),
        (("remove-statistics",), [{"action": "remove-statistics", "snapshot-id": second}], lambda m: not m.get("statistics")),
        (("set-partition-statistics",), [{"action": "set-partition-statistics", "partition-statistics": pstats}],
         lambda m: [s["snapshot-id"] for s in m.get("partition-statistics", [])] == [second]),
        (("remove-partition-statistics",), [{"action": "remove-partition-statistics", "snapshot-id": second}],
         lambda m: not m.get("partition-statistics")),
        (("remove-partition-specs",), [{"action": "remove-partition-specs", "spec-ids": [0]}],
         lambda m: [s["spec-id"] for s in m["partition-specs"]] == [1]),
        (("remove-schemas",), [{"action": "remove-schemas", "schema-ids": [0]}],
         lambda m: [s["schema-id"] for s in m["schemas"]] == [1]),
        (("upgrade-format-version",), [{"action": "upgrade-format-version", "format-version": 3}],
         lambda m: m["format-version"] == 3 and m["next-row-id"] == 0),
    ]
    for names, updates, effect in applied:
        r = post(*updates)
        assert r.status_code == 200, (names, r.text)
        assert effect(meta()), names
    refused = [{"action": "add-encryption-key", "encryption-key": {"key-id": "k", "encrypted-key-metadata": "AA=="}},
               {"action": "remove-encryption-key", "key-id": "k"},
               {"action": "enable-row-lineage"},
               {"action": "set-location", "location": f"{ours.location}-moved"},
               {"action": "upgrade-format-version", "format-version": 2},
               {"action": "set-properties", "updates": {"format-version": "1"}}]
    for update in refused:
        before = meta()
        r = post(update)
        # 400 for what the table cannot take, 406 (UnsupportedOperationException) for what icefloe lacks
        assert r.status_code in (400, 406) and r.json()["error"]["code"] == r.status_code, (update, r.text)
        assert update["action"] in r.json()["error"]["message"] or "downgrade" in r.json()["error"]["message"], r.text
        assert meta() == before, update
