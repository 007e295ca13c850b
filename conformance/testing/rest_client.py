"""A raw REST catalog client for probes (test infrastructure): one HTTP exchange per call,
no retries, every answer returned as it came, so a probe sees exactly what the server (or
the fault layer in front of it) said. `Answer.status` is None when the connection failed
or the answer was cut off (a lost response)."""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import requests

TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Answer:
    status: int | None
    body: dict | None
    error: str | None = None

    @property
    def type(self) -> str | None:
        return (self.body or {}).get("error", {}).get("type")


def new_key() -> str:
    return str(uuid.uuid4())


class RestClient:
    def __init__(self, url: str, *, writer: int | None = None, token: str | None = None,
                 timeout_s: float = TIMEOUT_S):
        self.url = url.rstrip("/")
        self.session = requests.Session()
        self.timeout_s = timeout_s
        if writer is not None:
            self.session.headers["X-Icefloe-Writer"] = str(writer)
        if token is not None:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, body=None, *, key: str | None = None, raw: bytes | None = None,
             params: dict | None = None) -> Answer:
        headers = {"Content-Type": "application/json"}
        if key is not None:
            headers["Idempotency-Key"] = key
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        try:
            r = self.session.request(method, self.url + path, data=data, headers=headers, params=params,
                                     timeout=self.timeout_s)
            content = r.content
        except requests.RequestException as e:
            return Answer(None, None, f"{type(e).__name__}: {e}")
        try:
            parsed = json.loads(content) if content else None
        except ValueError:
            parsed = {"text": content[:200].decode("utf-8", "replace")}
        return Answer(r.status_code, parsed)

    # -- shorthands ---------------------------------------------------------------------

    def config(self) -> Answer:
        return self.call("GET", "/v1/config")

    def create_namespace(self, namespace: str, key: str | None = None) -> Answer:
        return self.call("POST", "/v1/namespaces", {"namespace": namespace.split("."), "properties": {}}, key=key)

    def create_table(self, namespace: str, name: str, schema: dict, key: str | None = None,
                     location: str | None = None) -> Answer:
        body = {"name": name, "schema": schema}
        if location:
            body["location"] = location
        return self.call("POST", f"/v1/namespaces/{namespace}/tables", body, key=key)

    def load(self, namespace: str, name: str) -> Answer:
        return self.call("GET", f"/v1/namespaces/{namespace}/tables/{name}")

    def commit(self, namespace: str, name: str, requirements: list, updates: list, key: str | None = None) -> Answer:
        return self.call("POST", f"/v1/namespaces/{namespace}/tables/{name}",
                         {"requirements": requirements, "updates": updates}, key=key)

    def transaction(self, changes: list, key: str | None = None) -> Answer:
        return self.call("POST", "/v1/transactions/commit", {"table-changes": changes}, key=key)
