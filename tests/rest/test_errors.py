"""The commit endpoint's answers to bad input and to failed requirements: goal, a typed
ErrorModel with the spec's status and nothing written; method, raw HTTP requests to a real
`icefloe serve`, the table and its metadata directory compared before and after."""
from __future__ import annotations

import pytest

from icefloe.conformance.testing.rest_client import RestClient
from icefloe.conformance.testing.rest_server import RestServer

from rest_helpers import append, head, make_table, metadata_files

PATH = "/v1/namespaces/db/tables/t"


@pytest.fixture
def client(server):
    c = RestClient(server.url)
    make_table(c)
    return c


@pytest.mark.parametrize("raw, status, kind", [
    (b"{not json", 400, "BadRequestException"),
    (b"[1, 2]", 400, "BadRequestException"),
    (b'{"requirements": [], "updates": [{"action": "make-it-so"}]}', 400, "BadRequestException"),
    (b'{"requirements": [{"type": "assert-nothing"}], "updates": []}', 400, "BadRequestException"),
    (b'{"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": "x"}], "updates": []}',
     400, "BadRequestException"),
    (b'{"requirements": [], "updates": [{"action": "add-encryption-key", "encryption-key": {}}]}', 406,
     "UnsupportedOperationException"),
    (b'{"requirements": [], "updates": [{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",'
     b' "snapshot-id": 42}]}', 400, "BadRequestException"),
    (b'{"requirements": [], "updates": [{"action": "upgrade-format-version", "format-version": 1}]}', 400,
     "BadRequestException"),
    (b'{"updates": []}', 400, "BadRequestException"),
    (b'{"a":' * 100 + b'1' + b'}' * 100, 400, "BadRequestException"),
])
def test_bad_commit_bodies_are_typed_400s_and_write_nothing(client, warehouse, raw, status, kind):
    """Goal: malformed JSON, unknown updates and requirements, an update that cannot apply:
    typed 4xx, table unchanged, no file left; method: each body posted raw."""
    before, files = head(client), metadata_files(warehouse)
    answer = client.call("POST", PATH, raw=raw)
    assert answer.status == status and answer.type == kind, answer
    assert set(answer.body["error"]) >= {"message", "type", "code"} and answer.body["error"]["code"] == status
    assert head(client) == before and metadata_files(warehouse) == files


def test_a_ref_snapshot_assertion_without_snapshot_id_says_the_ref_must_not_exist(client, warehouse):
    """Goal: assert-ref-snapshot-id with `snapshot-id` missing means what null means, as the REST
    spec says ("if snapshot-id is null or missing, the ref must not already exist"), not a 400
    (ClickHouse and pyiceberg 0.9 send it so on a table's first commit). Method: the same body
    before main exists (200) and after an append made main (409, nothing written)."""
    body = b'{"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main"}], "updates": []}'
    assert client.call("POST", PATH, raw=body).status == 200
    append(client, 1)
    before, files = head(client), metadata_files(warehouse)
    answer = client.call("POST", PATH, raw=body)
    assert answer.status == 409 and answer.type == "CommitFailedException", answer
    assert head(client) == before and metadata_files(warehouse) == files


def test_requirement_on_missing_table_is_404(client, warehouse):
    """Goal: a commit to a table that does not exist is NoSuchTable, nothing created; method:
    an assert-table-uuid commit to db.nope."""
    answer = client.commit("db", "nope", [{"type": "assert-table-uuid", "uuid": "x"}], [])
    assert answer.status == 404 and answer.type == "NoSuchTableException"
    assert client.load("db", "nope").status == 404 and metadata_files(warehouse, name="nope") == []


def test_failed_requirement_is_409_and_writes_nothing(client, warehouse):
    """Goal: a stale assert-ref-snapshot-id or a wrong uuid is 409 CommitFailedException, and
    the table and its files are unchanged; method: commit 1, then a commit asserting the old head."""
    assert append(client, 1).status == 200
    before, files = head(client), metadata_files(warehouse)
    stale = append(client, 2, expect_parent=None)
    assert stale.status == 409 and stale.type == "CommitFailedException", stale
    wrong_uuid = client.commit("db", "t", [{"type": "assert-table-uuid", "uuid": "00000000-0000-4000-8000-000000000000"}],
                               [{"action": "set-properties", "updates": {"k": "v"}}])
    assert wrong_uuid.status == 409
    assert head(client) == before and metadata_files(warehouse) == files


def test_path_and_body_identifiers_must_agree(client):
    """Goal: a body naming another table than the path is refused; method: identifier db.u on db.t."""
    answer = client.call("POST", PATH, {"identifier": {"namespace": ["db"], "name": "u"},
                                        "requirements": [], "updates": []})
    assert answer.status == 400


def test_token_required(catalog_uri, warehouse):
    """Goal: with --token every request without it is 401 and changes nothing; method: a
    server with a token, calls without, with a wrong one and with the right one."""
    with RestServer(catalog_uri, warehouse, token="s3cret") as s:
        assert RestClient(s.url).config().status == 401
        assert RestClient(s.url, token="wrong").create_namespace("db").status == 401
        good = RestClient(s.url, token="s3cret")
        assert good.call("GET", "/v1/namespaces").body == {"namespaces": []}
        assert good.create_namespace("db").status == 200
        assert RestClient(s.url).call("GET", "/v1/namespaces").status == 401


def test_unknown_route_is_an_error_model(client):
    """Goal: even a route the server lacks answers an ErrorModel; method: GET /v1/nowhere."""
    answer = client.call("GET", "/v1/nowhere")
    assert answer.status == 404 and answer.body["error"]["code"] == 404
