"""A catalog behind the Iceberg REST catalog protocol (REST spec: the Catalog API's table
routes and CommitTableRequest; spec/PROTOCOL.md 3 "The catalog's swap" and 9 "Commit
outcomes"; TLA+ `Swap`).

`RestCatalog(uri, io)` is a Catalog (base.py): `load` reads the table's metadata location
(GET), `create` registers a metadata file icefloe wrote (POST .../register), and `swap`
is a commit: the attempt's changes of its base as requirements and updates
(rest_changes.py), POSTed with an `Idempotency-Key`. The server writes its own version,
so a Swapped names the server's location, not the attempt's file (`writes_own_versions`).

The answer decides the outcome, by how far the request got (as impl/serve/commit.py maps
it on the server's side):
  200        Swapped(the location the server made current);
  409        SwapRejected: a requirement failed, nothing was applied;
  other 4xx  SwapRejected (unavailable): the server refused the request as such;
  5xx, a dropped or timed-out answer   unknown: the request is sent again with the same
             key (at most `replays_max` times; the server answers a key that landed with
             its original answer, and records a refused one, so a replay decides the
             outcome and can never apply the change twice); still unknown: SwapUnknown;
  a refused connection  SwapRejected (unavailable): nothing was sent.
The key is derived from the attempt's location, and the request from the attempt's file
and its base (the attempt's metadata log names it), so `landed(identifier, attempts)`,
which the commit loop asks after an unknown swap (and `resolve_unknown` later, from any
process), replays each attempt's request to learn whether it landed: a location, None
(never landed, and never will: the server recorded the refusal), or CatalogUnavailable
when the server still cannot say.

Writers can be told apart by the server (or a fault layer in front of it) through
`headers` (e.g. X-Icefloe-Writer) or a bearer `token`. Standard library HTTP only.
"""
from __future__ import annotations

import http.client
import json
import socket
import uuid
from urllib.parse import quote, urlsplit

from icefloe.impl.catalog.base import (
    CatalogUnavailable, NamespaceAlreadyExists, NamespaceNotEmpty, NoSuchNamespace, NoSuchTable, TableAlreadyExists,
    TableIdentifier,
)
from icefloe.impl.catalog.rest_changes import commit_request
from icefloe.impl.io.locations import canonical_location
from icefloe.impl.outcomes import InvalidArgument, SwapRejected, SwapResult, Swapped, SwapUnknown, require

NAMESPACE_SEPARATOR = "\x1f"
LIST_REQUESTS_MAX = 10_000   # namespace listing: requests (levels and pages) before giving up
TIMEOUT_S_DEFAULT = 30.0
REPLAYS_MAX_DEFAULT = 2
KEY_NAMESPACE = uuid.UUID("6f1c5a9e-3b7d-4c1e-9a52-1ce0f10e5a11")   # keys: uuid5(this, attempt location)


class _NoAnswer(Exception):
    """The request may have reached the server, but no complete answer came back."""


class _NotSent(Exception):
    """The connection was refused: the request never reached the server."""


def idempotency_key(attempt_location: str) -> str:
    return str(uuid.uuid5(KEY_NAMESPACE, canonical_location(attempt_location)))


class RestCatalog:
    writes_own_versions = True

    def __init__(self, uri: str, io, *, name: str = "rest", headers: dict | None = None,
                 token: str | None = None, timeout_s: float = TIMEOUT_S_DEFAULT,
                 replays_max: int = REPLAYS_MAX_DEFAULT):
        parts = urlsplit(uri)
        require(parts.scheme in ("http", "https") and bool(parts.hostname),
                f"a REST catalog URI is http(s)://host:port[/path], not {uri!r}")
        require(replays_max >= 0 and timeout_s > 0, "replays_max >= 0 and timeout_s > 0")
        self.name, self.uri, self.io = name, uri.rstrip("/"), io
        self._https, self._host = parts.scheme == "https", parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._root = parts.path.rstrip("/") + "/v1"
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.timeout_s, self.replays_max = timeout_s, replays_max
        self._prefix: str | None = None
        # What the wire did, for reports: answers by kind and replays by what they decided.
        self.counts = {"commits": 0, "committed": 0, "rejected": 0, "unknown_answers": 0,
                       "replays": 0, "replay_committed": 0, "replay_rejected": 0, "left_unknown": 0}

    # -- HTTP --------------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: dict | None = None, key: str | None = None):
        """(status, parsed body or None); _NotSent / _NoAnswer when no full answer came."""
        conn_type = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = conn_type(self._host, self._port, timeout=self.timeout_s)
        headers = dict(self.headers)
        if key is not None:
            headers["Idempotency-Key"] = key
        data = None if body is None else json.dumps(body).encode()
        try:
            try:
                conn.connect()
            except OSError as e:
                raise _NotSent(f"{type(e).__name__}: {e}") from None
            try:
                conn.request(method, path, body=data, headers=headers)
                response = conn.getresponse()
                raw = response.read()
            except (OSError, http.client.HTTPException, socket.timeout) as e:
                raise _NoAnswer(f"{type(e).__name__}: {e}") from None
        finally:
            conn.close()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return response.status, parsed

    def _call(self, method: str, path: str, body: dict | None = None):
        """For requests other than a commit: every failure to get an answer is unavailability."""
        try:
            return self._request(method, self._path(path), body)
        except (_NotSent, _NoAnswer) as e:
            raise CatalogUnavailable(f"{self.uri}: {method} {path}: {e}") from None

    def _path(self, path: str) -> str:
        if self._prefix is None:
            self._prefix = ""
            try:
                status, body = self._request("GET", self._root + "/config")
            except (_NotSent, _NoAnswer) as e:
                self._prefix = None
                raise CatalogUnavailable(f"{self.uri}: GET /v1/config: {e}") from None
            prefix = ((body or {}).get("overrides") or {}).get("prefix") if status == 200 else None
            self._prefix = f"/{quote(prefix, safe='')}" if prefix else ""
        return self._root + self._prefix + path

    @staticmethod
    def _ns(namespace) -> str:
        return quote(NAMESPACE_SEPARATOR.join(namespace), safe="")

    def _table_path(self, identifier: TableIdentifier) -> str:
        return f"/namespaces/{self._ns(identifier.namespace)}/tables/{quote(identifier.name, safe='')}"

    @staticmethod
    def _message(status: int, body) -> str:
        error = (body or {}).get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            return f"{status} {error.get('type', '')}: {error.get('message', '')}"
        return f"HTTP {status}"

    # -- the Catalog protocol ----------------------------------------------------------------

    def load(self, identifier: TableIdentifier) -> str:
        status, body = self._call("GET", self._table_path(identifier))
        if status == 200 and isinstance(body, dict) and isinstance(body.get("metadata-location"), str):
            return body["metadata-location"]
        if status == 404:
            raise NoSuchTable(str(identifier))
        raise CatalogUnavailable(f"load {identifier}: {self._message(status, body)}")

    def create(self, identifier: TableIdentifier, metadata_location: str) -> None:
        status, body = self._call("POST", f"/namespaces/{self._ns(identifier.namespace)}/register",
                                  {"name": identifier.name, "metadata-location": metadata_location})
        if status == 200:
            return
        if status == 409:
            raise TableAlreadyExists(str(identifier))
        if status == 404:
            raise NoSuchNamespace(identifier.namespace_str)
        raise CatalogUnavailable(f"register {identifier}: {self._message(status, body)}")

    def create_namespace(self, namespace: tuple[str, ...], properties: dict | None = None) -> None:
        status, body = self._call("POST", "/namespaces",
                                  {"namespace": list(namespace), "properties": dict(properties or {})})
        if status == 409:
            raise NamespaceAlreadyExists(".".join(namespace))
        if status != 200:
            raise CatalogUnavailable(f"create namespace {'.'.join(namespace)}: {self._message(status, body)}")

    def list_namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace, nested ones too (GET /v1/namespaces?parent=..., level by level,
        following next-page-token), as the SQL catalog lists them."""
        out: list[tuple[str, ...]] = []
        todo: list[tuple[str, ...] | None] = [None]
        for _ in range(LIST_REQUESTS_MAX):
            if not todo:
                return sorted(out)
            parent, token = todo.pop(), None
            while True:
                query = "&".join(x for x in ((f"parent={self._ns(parent)}" if parent else ""),
                                             (f"pageToken={quote(token, safe='')}" if token else "")) if x)
                status, body = self._call("GET", "/namespaces" + (f"?{query}" if query else ""))
                if status != 200 or not isinstance(body, dict):
                    raise CatalogUnavailable(f"list namespaces: {self._message(status, body)}")
                for ns in body.get("namespaces", []):
                    out.append(tuple(ns))
                    todo.append(tuple(ns))
                token = body.get("next-page-token")
                if not token:
                    break
        raise CatalogUnavailable(f"list namespaces: more than {LIST_REQUESTS_MAX} requests")

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        status, body = self._call("DELETE", f"/namespaces/{self._ns(namespace)}")
        if status in (200, 204):
            return
        if status == 404:
            raise NoSuchNamespace(".".join(namespace))
        if status == 409:
            raise NamespaceNotEmpty(f"namespace {'.'.join(namespace)} holds tables: drop them first")
        raise CatalogUnavailable(f"drop namespace {'.'.join(namespace)}: {self._message(status, body)}")

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]:
        status, body = self._call("GET", f"/namespaces/{self._ns(namespace)}/tables")
        if status == 404:
            raise NoSuchNamespace(".".join(namespace))
        if status != 200:
            raise CatalogUnavailable(f"list tables: {self._message(status, body)}")
        return sorted(TableIdentifier(tuple(i["namespace"]), i["name"]) for i in body.get("identifiers", []))

    def rename(self, source: TableIdentifier, destination: TableIdentifier) -> None:
        """POST /v1/tables/rename (the REST spec's renameTable)."""
        status, body = self._call("POST", "/tables/rename", {
            "source": {"namespace": list(source.namespace), "name": source.name},
            "destination": {"namespace": list(destination.namespace), "name": destination.name}})
        if status in (200, 204):
            return
        if status == 409:
            raise TableAlreadyExists(str(destination))
        if status == 404:
            raise NoSuchTable(f"{source} ({self._message(status, body)})")
        raise CatalogUnavailable(f"rename {source}: {self._message(status, body)}")

    def drop(self, identifier: TableIdentifier) -> None:
        status, body = self._call("DELETE", self._table_path(identifier))
        if status == 404:
            raise NoSuchTable(str(identifier))
        if status not in (200, 204):
            raise CatalogUnavailable(f"drop {identifier}: {self._message(status, body)}")

    # -- the swap as a commit ----------------------------------------------------------------

    def _read(self, location: str) -> dict:
        return json.loads(self.io.get(location))

    def _commit_of(self, identifier: TableIdentifier, attempt_location: str, base_location: str | None = None):
        """(path, request body, key, base location) of the commit that applies an attempt's file."""
        attempt = self._read(attempt_location)
        if base_location is None:
            log = attempt.get("metadata-log") or []
            if not log:
                raise InvalidArgument(f"{attempt_location} names no base in its metadata log")
            base_location = log[-1]["metadata-file"]
        request = commit_request(self._read(base_location), attempt, identifier.namespace, identifier.name)
        return self._path(self._table_path(identifier)), request, idempotency_key(attempt_location), base_location

    def _send(self, path: str, request: dict, key: str, replays: int, expected_location: str,
              new_location: str) -> SwapResult:
        """The request sent, then replayed with its key while its answer is unknown: Swapped
        (the location the server made current), SwapRejected (a 4xx: `unavailable` unless 409,
        or not sent at all) or SwapUnknown (no decisive answer after `replays` replays)."""
        why = "no answer"
        for n in range(replays + 1):
            if n:
                self.counts["replays"] += 1
            try:
                status, body = self._request("POST", path, request, key)
            except _NotSent as e:
                if n == 0:
                    return SwapRejected(expected_location, None, f"not sent: {e}", unavailable=True)
                why = f"replay not sent: {e}"           # the first may still have landed
                continue
            except _NoAnswer as e:
                self.counts["unknown_answers"] += 1
                why = f"the answer was lost: {e}"
                continue
            if status == 200 and isinstance(body, dict) and isinstance(body.get("metadata-location"), str):
                self.counts["replay_committed"] += bool(n)
                return Swapped(body["metadata-location"])
            if 400 <= status < 500:
                self.counts["replay_rejected"] += bool(n)
                return SwapRejected(expected_location, None, self._message(status, body),
                                    unavailable=status != 409)
            self.counts["unknown_answers"] += 1
            why = self._message(status, body)            # 5xx (or a 2xx without a location)
        return SwapUnknown(expected_location, new_location, why)

    def swap(self, identifier: TableIdentifier, expected_location: str, new_location: str) -> SwapResult:
        require(expected_location != new_location, "a swap must move the pointer")
        self.counts["commits"] += 1
        try:
            path, request, key, _ = self._commit_of(identifier, new_location, expected_location)
        except Exception as e:  # noqa: BLE001 - unreadable files, an unexpressible change: nothing was sent
            return SwapRejected(expected_location, None, f"no commit request sent: {type(e).__name__}: {e}",
                                unavailable=True)
        result = self._send(path, request, key, self.replays_max, expected_location, new_location)
        if isinstance(result, Swapped):
            self.counts["committed"] += 1
            self._forget(new_location)
            return result
        if isinstance(result, SwapRejected):
            self.counts["rejected"] += 1
            return result
        self.counts["left_unknown"] += 1
        return SwapUnknown(expected_location, new_location, f"{result.reason} (after {self.replays_max} replays)")

    def landed(self, identifier: TableIdentifier, attempted_locations) -> str | None:
        """Which attempt landed, by replaying each one's request with its key: the location
        the server made current for it, None when none did (nor ever will), and
        CatalogUnavailable when the server cannot say yet."""
        undecided = []
        for location in attempted_locations:
            try:
                path, request, key, base_location = self._commit_of(identifier, location)
            except CatalogUnavailable as e:
                undecided.append(str(e))
                continue
            except (InvalidArgument, ValueError, OSError) as e:
                undecided.append(f"{location}: cannot rebuild its request: {e}")
                continue
            except Exception as e:  # noqa: BLE001 - a store error: the attempt's file is unreadable
                undecided.append(f"{location}: {type(e).__name__}: {e}")
                continue
            result = self._send(path, request, key, 0, base_location, location)
            self.counts["replays"] += 1
            if isinstance(result, Swapped):
                self.counts["replay_committed"] += 1
                return result.new_location
            if isinstance(result, SwapRejected) and not result.unavailable:
                self.counts["replay_rejected"] += 1
                continue
            undecided.append(f"{location}: {result.reason}")
        if undecided:
            raise CatalogUnavailable("cannot tell whether an attempt landed: " + "; ".join(undecided))
        return None

    def _forget(self, attempt_location: str) -> None:
        """The attempt's own file once the server applied it as a version of its own: no
        version names it, so it is the writer's to delete (an orphan otherwise)."""
        try:
            self.io.delete(attempt_location)
        except Exception:  # noqa: BLE001 - an orphan at worst: orphan removal finds it
            pass
