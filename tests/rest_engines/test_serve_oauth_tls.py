"""`icefloe serve` with OAuth2 client credentials, per-namespace grants and TLS, as clients
use it (issue 31 item 2): goal, pyiceberg 0.12's REST client (`credential="id:secret"`)
over https creates, commits and reads where its principal holds a grant and gets 403 where
it does not; the token endpoint answers RFC 6749's shapes; tokens expire; static tokens
come from a file or the environment. Method: the real `icefloe serve` command in a
subprocess (uvicorn's TLS) with a throwaway self-signed certificate for 127.0.0.1, and the
in-process server with an injected clock for expiry."""
from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
import requests

from icefloe.conformance.testing.rest_server import RestServer, free_port
from icefloe.impl.serve.auth import Authenticator, hash_secret, load_principals, verify_secret
from icefloe.impl.serve.cli import make_authenticator

START_WAIT_S = 60
SECRETS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
GRANTS = {"alice": {"db": ["read", "write"]}, "bob": {"db": ["read"]}, "carol": {"other": ["read", "write"]}}
ROWS = pa.schema([("id", pa.int64())])


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A throwaway certificate and key for 127.0.0.1 (and localhost)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "icefloe-test")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    return cert_path, key_path


def principals_file(directory: Path) -> Path:
    path = directory / "principals.json"
    path.write_text(json.dumps({"principals": [
        {"client-id": name, "secret-hash": hash_secret(secret), "grants": GRANTS[name]}
        for name, secret in SECRETS.items()]}))
    return path


class Serve:
    """`icefloe serve ARGS` in a subprocess on a free port; stopped by its pid."""

    def __init__(self, tmp_path: Path, *args: str, env: dict | None = None, scheme: str = "http",
                 verify=True):
        self.port = free_port()
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        exe = os.path.join(os.path.dirname(sys.executable), "icefloe")
        self.log = tmp_path / f"serve-{self.port}.log"    # a file, not a pipe nobody drains
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([exe, "--catalog", f"sqlite:///{tmp_path}/cat.db", "--warehouse",
                                          str(tmp_path / "wh"), "serve", "--port", str(self.port), *args],
                                         stderr=log, env={**os.environ, **(env or {})})
        deadline = time.monotonic() + START_WAIT_S
        while True:
            try:
                requests.get(self.url + "/v1/config", timeout=2, verify=verify)
                return
            except requests.ConnectionError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(self.log.read_text())
                time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise


@pytest.fixture
def https_server(tmp_path, monkeypatch):
    # requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE override a session's own `verify`
    # (pyiceberg's ssl.cabundle): without them the test's certificate is what is trusted.
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    cert, key = self_signed(tmp_path)
    signing = tmp_path / "signing.key"
    signing.write_text("a shared signing key for the replicas")
    server = Serve(tmp_path, "--principals", str(principals_file(tmp_path)), "--signing-key-file", str(signing),
                   "--tls-cert", str(cert), "--tls-key", str(key), scheme="https", verify=str(cert))
    server.cert = cert
    yield server
    server.stop()


def catalog_for(server, who: str):
    from pyiceberg.catalog.rest import RestCatalog
    return RestCatalog(f"r-{who}", uri=server.url, credential=f"{who}:{SECRETS[who]}",
                       ssl={"cabundle": str(server.cert)})


def test_pyiceberg_over_oauth2_and_https_with_grants(https_server):
    """Goal: alice (write on db) creates, appends and reads a table and creates and drops a
    view; bob (read on db) reads both and is refused a commit and drops with 403; carol (grants elsewhere) gets 403 for db.t, the
    same answer as for a table that does not exist, and does not see db listed. Method:
    pyiceberg's RestCatalog with credential=id:secret against https."""
    from pyiceberg.exceptions import ForbiddenError
    alice, bob, carol = (catalog_for(https_server, who) for who in ("alice", "bob", "carol"))
    alice.create_namespace("db")
    table = alice.create_table("db.t", schema=ROWS)
    table.append(pa.table({"id": [1, 2, 3]}))
    assert alice.load_table("db.t").scan().to_arrow().num_rows == 3
    assert bob.load_table("db.t").scan().to_arrow().num_rows == 3
    with pytest.raises(ForbiddenError):
        bob.load_table("db.t").append(pa.table({"id": [4]}))
    with pytest.raises(ForbiddenError):
        bob.drop_table("db.t")
    with pytest.raises(ForbiddenError):
        bob.create_table("db.u", schema=ROWS)
    refusals = []
    for name in ("db.t", "db.missing"):
        with pytest.raises(ForbiddenError) as refused:
            carol.load_table(name)
        refusals.append(str(refused.value))
    assert refusals[0] == refusals[1]                  # nothing tells that db.t exists
    assert carol.list_namespaces() == []
    carol.create_namespace("other")
    assert [tuple(n) for n in carol.list_namespaces()] == [("other",)]
    assert [tuple(n) for n in alice.list_namespaces()] == [("db",)]
    assert alice.load_table("db.t").scan().to_arrow().num_rows == 3
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField
    from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion
    version = ViewVersion(schema_id=0, default_namespace=("db",), representations=[
        SQLViewRepresentation(type="sql", sql="SELECT id FROM db.t", dialect="spark")])
    alice.create_view("db.v", schema=Schema(NestedField(1, "id", LongType())), view_version=version)
    assert bob.load_view("db.v").metadata.current_version_id == 1
    with pytest.raises(ForbiddenError):
        bob.drop_view("db.v")
    with pytest.raises(ForbiddenError):
        carol.load_view("db.v")
    alice.drop_view("db.v")


def test_plain_http_is_refused_by_the_https_server_and_unverified_certificates_by_clients(https_server):
    """Goal: the server speaks only TLS on its port, and a client that does not trust the
    certificate does not connect. Method: requests without the CA bundle, and plain http."""
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(https_server.url + "/v1/config", timeout=5)
    with pytest.raises(requests.ConnectionError):
        requests.get(https_server.url.replace("https", "http") + "/v1/config", timeout=5)


def test_token_endpoint_shapes_and_refusals(https_server):
    """Goal: /v1/oauth/tokens answers RFC 6749 shapes: a token (bearer, expires_in,
    issued_token_type) for good credentials in the form or as HTTP Basic; 401 invalid_client
    for a wrong secret or unknown client; 400 unsupported_grant_type; a token exchange renews
    a token; the Bearer scheme is case-insensitive; a forged token is 401. Method: requests."""
    url, verify = https_server.url + "/v1/oauth/tokens", str(https_server.cert)
    good = requests.post(url, data={"grant_type": "client_credentials", "client_id": "bob",
                                    "client_secret": SECRETS["bob"], "scope": "catalog"}, verify=verify)
    assert good.status_code == 200, good.text
    token = good.json()
    assert token["token_type"] == "bearer" and token["expires_in"] > 0 and token["scope"] == "catalog"
    assert token["issued_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
    basic = requests.post(url, data={"grant_type": "client_credentials"}, auth=("bob", SECRETS["bob"]),
                          verify=verify)
    assert basic.status_code == 200
    for client_id, secret in (("bob", "wrong"), ("nobody", "x")):
        bad = requests.post(url, data={"grant_type": "client_credentials", "client_id": client_id,
                                       "client_secret": secret}, verify=verify)
        assert bad.status_code == 401 and bad.json()["error"] == "invalid_client"
        assert "access_token" not in bad.json()
    assert requests.post(url, data={"grant_type": "password"}, verify=verify).json()["error"] == \
        "unsupported_grant_type"
    exchanged = requests.post(url, data={"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                                         "subject_token": token["access_token"],
                                         "subject_token_type": token["issued_token_type"]}, verify=verify)
    assert exchanged.status_code == 200 and exchanged.json()["access_token"]
    for scheme in ("Bearer", "bearer", "BEARER"):
        answer = requests.get(https_server.url + "/v1/namespaces",
                              headers={"Authorization": f"{scheme} {token['access_token']}"}, verify=verify)
        assert answer.status_code == 200, scheme
    forged = token["access_token"].replace("bob.", "alice.", 1)
    assert requests.get(https_server.url + "/v1/namespaces", headers={"Authorization": f"Bearer {forged}"},
                        verify=verify).status_code == 401
    assert requests.get(https_server.url + "/v1/namespaces", verify=verify).status_code == 401


def test_tokens_expire(tmp_path):
    """Goal: a token is refused with 401 once its lifetime has passed, and a fresh one
    works. Method: the in-process server with an injected clock moved past the lifetime."""
    now = [1_000_000.0]
    auth = Authenticator(principals=load_principals(str(principals_file(tmp_path))), token_lifetime_s=60,
                         clock=lambda: now[0])
    with RestServer(f"sqlite:///{tmp_path}/c.db", str(tmp_path / "wh"), auth=auth) as s:
        def token():
            return requests.post(s.url + "/v1/oauth/tokens", data={
                "grant_type": "client_credentials", "client_id": "alice",
                "client_secret": SECRETS["alice"]}).json()["access_token"]
        first = token()
        get = lambda t: requests.get(s.url + "/v1/namespaces", headers={"Authorization": f"Bearer {t}"})  # noqa: E731
        assert get(first).status_code == 200
        now[0] += 61
        expired = get(first)
        assert expired.status_code == 401 and "expired" in expired.json()["error"]["message"]
        assert get(token()).status_code == 200


def test_static_token_from_a_file_or_the_environment_never_only_the_command_line(tmp_path):
    """Goal: a static token is read from --token-file or ICEFLOE_SERVE_TOKEN; two sources at
    once are refused; the server started with the variable refuses requests without it (and
    takes --allowed-location and --max-request-bytes from its command line). Method:
    make_authenticator on parsed arguments; the command in a subprocess."""
    def args(**kw):
        base = dict(token=None, token_file=None, principals=None, signing_key_file=None, token_lifetime_s=3600)
        return argparse.Namespace(**{**base, **kw})
    (tmp_path / "token").write_text("from-a-file\n")
    assert make_authenticator(args(token_file=str(tmp_path / "token")), {}).static_token == "from-a-file"
    assert make_authenticator(args(), {"ICEFLOE_SERVE_TOKEN": "from-env"}).static_token == "from-env"
    with pytest.raises(ValueError):
        make_authenticator(args(token_file=str(tmp_path / "token")), {"ICEFLOE_SERVE_TOKEN": "x"})
    server = Serve(tmp_path, "--allowed-location", str(tmp_path / "extra"), "--max-request-bytes", "4000",
                   env={"ICEFLOE_SERVE_TOKEN": "s3cr3t"})
    try:
        assert requests.get(server.url + "/v1/config").status_code == 401
        auth = {"Authorization": "bearer s3cr3t"}
        assert requests.get(server.url + "/v1/config", headers=auth).status_code == 200
        assert "s3cr3t" not in " ".join(server.proc.args)
        requests.post(server.url + "/v1/namespaces", json={"namespace": ["db"]}, headers=auth)
        create = lambda where: requests.post(server.url + "/v1/namespaces/db/tables", headers=auth, json={  # noqa
            "name": "t", "schema": {"type": "struct", "fields": []}, "location": where})
        assert create(f"file://{tmp_path}/elsewhere/t").status_code == 403
        assert create(f"file://{tmp_path}/extra/t").status_code == 200          # --allowed-location
        big = requests.post(server.url + "/v1/namespaces/db/tables/t", headers=auth, json={
            "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "x" * 5000}}]})
        assert big.status_code == 413                                           # --max-request-bytes
    finally:
        server.stop()


def test_hash_secret_command_and_a_malformed_principals_file(tmp_path):
    """Goal: `icefloe serve hash-secret` reads the secret on stdin and prints a hash that
    verifies; a principals file holding a plain secret is refused with a one-line error.
    Method: the command in a subprocess."""
    exe = os.path.join(os.path.dirname(sys.executable), "icefloe")
    done = subprocess.run([exe, "serve", "hash-secret"], input="correct horse\n", capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    stored = done.stdout.strip()
    assert verify_secret("correct horse", stored) and not verify_secret("wrong", stored)
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"principals": [{"client-id": "a", "secret-hash": "plain"}]}))
    done = subprocess.run([exe, "--catalog", f"sqlite:///{tmp_path}/c.db", "serve", "--principals", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "hash-secret" in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_iceberg_java_over_oauth2_and_https(https_server, tmp_path):
    """Goal: Iceberg-Java 1.10.2 (Spark 3.5 SQL, REST catalog with credential=id:secret and
    the JVM trusting the test's certificate) creates, inserts into and reads a table as
    alice; bob reads it and his INSERT is refused with ForbiddenException; alice creates a
    view (CREATE VIEW), selects from it, lists it and drops it. Method: a fresh
    JVM of the java venv (java_env.run_script) against the https server."""
    from icefloe.conformance.testing import java_env
    java_env.require()
    truststore = tmp_path / "trust.p12"
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "icefloe", "-file", str(https_server.cert),
                    "-keystore", str(truststore), "-storetype", "PKCS12", "-storepass", "changeit"],
                   check=True, capture_output=True, timeout=60)
    script = Path(__file__).with_name("java_oauth_client.py")
    done = java_env.run_script(script, https_server.url, truststore, "-", f"alice:{SECRETS['alice']}",
                               f"bob:{SECRETS['bob']}", Path(java_env.__file__).parent, timeout_s=600)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["writer_rows"] == result["reader_rows"] == result["final_rows"] == 3, result
    assert result["reader_insert"] == ["ForbiddenException"], result
    assert "view_error" not in result, result["view_error"]
    assert result["view_rows"] == 2 and result["views"] == ["jv"] and result["views_after_drop"] == [], result
    assert result["replaced_view_rows"] == result["reader_view_rows"] == 1, result


def test_every_route_asks_for_its_grant_before_reading(tmp_path):
    """Goal: each route refuses a principal without the grant it needs with the same 403,
    whether or not what it names exists, and changes nothing: reads need read, every
    mutation (tables, views, namespaces, rename on either side, register, transaction)
    needs write. Method: in-process server; bob (read on db) and carol (grants on other)
    against alice's table and view."""
    auth = Authenticator(principals=load_principals(str(principals_file(tmp_path))))
    schema = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
    version = {"version-id": 1, "timestamp-ms": 1, "schema-id": 0, "summary": {}, "default-namespace": ["db"],
               "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}
    with RestServer(f"sqlite:///{tmp_path}/c.db", str(tmp_path / "wh"), auth=auth) as s:
        def as_(who):
            token = requests.post(s.url + "/v1/oauth/tokens", data={
                "grant_type": "client_credentials", "client_id": who, "client_secret": SECRETS[who]}).json()
            return {"Authorization": f"Bearer {token['access_token']}"}
        alice, bob, carol = as_("alice"), as_("bob"), as_("carol")
        call = lambda h, m, p, b=None: requests.request(m, s.url + p, json=b, headers=h)  # noqa: E731
        assert call(alice, "POST", "/v1/namespaces", {"namespace": ["db"]}).status_code == 200
        assert call(carol, "POST", "/v1/namespaces", {"namespace": ["other"]}).status_code == 200
        assert call(alice, "POST", "/v1/namespaces/db/tables", {"name": "t", "schema": schema}).status_code == 200
        assert call(alice, "POST", "/v1/namespaces/db/views", {"name": "v", "schema": schema,
                                                               "view-version": version}).status_code == 200
        before = call(alice, "GET", "/v1/namespaces/db/tables/t").json()
        rename = lambda a, b: {"source": {"namespace": [a], "name": "t"}, "destination": {"namespace": [b],  # noqa
                                                                                         "name": "t2"}}
        writes = [("POST", "/v1/namespaces/db/tables", {"name": "u", "schema": schema}),
                  ("POST", "/v1/namespaces/db/tables/t", {"requirements": [], "updates": [
                      {"action": "set-properties", "updates": {"k": "v"}}]}),
                  ("DELETE", "/v1/namespaces/db/tables/t", None), ("DELETE", "/v1/namespaces/db/tables/nope", None),
                  ("POST", "/v1/namespaces/db/register", {"name": "r", "metadata-location": "file:///x"}),
                  ("POST", "/v1/tables/rename", rename("db", "other")),
                  ("POST", "/v1/tables/rename", rename("other", "db")),
                  ("POST", "/v1/transactions/commit", {"table-changes": [
                      {"identifier": {"namespace": ["db"], "name": "t"}, "requirements": [], "updates": []}]}),
                  ("POST", "/v1/namespaces/db/properties", {"updates": {"a": "b"}}),
                  ("DELETE", "/v1/namespaces/db", None),
                  ("POST", "/v1/namespaces/db/views", {"name": "w", "schema": schema, "view-version": version}),
                  ("DELETE", "/v1/namespaces/db/views/v", None),
                  ("POST", "/v1/views/rename", {"source": {"namespace": ["db"], "name": "v"},
                                                "destination": {"namespace": ["db"], "name": "v2"}})]
        reads = [("GET", "/v1/namespaces/db", None), ("GET", "/v1/namespaces/db/tables", None),
                 ("GET", "/v1/namespaces/db/tables/t", None), ("GET", "/v1/namespaces/db/tables/nope", None),
                 ("GET", "/v1/namespaces/db/views", None), ("GET", "/v1/namespaces/db/views/v", None),
                 ("GET", "/v1/namespaces?parent=db", None)]
        for who, routes in ((bob, writes), (carol, writes + reads)):
            bodies = set()
            for method, path, body in routes:
                answer = call(who, method, path, body)
                assert answer.status_code == 403, (method, path, answer.text)
                bodies.add(answer.text.replace("other", "db").replace("no read grant", "no write grant"))
            assert len(bodies) == 1, bodies            # one answer, naming nothing of what exists
        for method, path, body in reads:
            assert call(bob, method, path, body).status_code == (404 if "nope" in path else 200), path
        assert call(alice, "GET", "/v1/namespaces/db/tables/t").json() == before
        assert call(alice, "HEAD", "/v1/namespaces/db/views/v").status_code == 204
