"""The Starlette application of `icefloe serve` (REST spec paths under /v1, no prefix).

Every route is a thin adapter: parse the path and body (models.py), call the service in
a worker thread (the catalog and store calls block), render its Response or RestError as
JSON. Mutations go through Idempotency.run with the request's Idempotency-Key. With a
static token or principals (auth.py), every request but `POST /v1/oauth/tokens` needs
`Authorization: Bearer <token>` (401 otherwise), and each handler asks for the read or
write grant on the namespaces it touches before it reads anything (403). An error that
escapes the service is a 500 InternalServerError; on the commit endpoints it is a
CommitStateUnknownException, since nothing then says the commit did not land.
"""
from __future__ import annotations

import logging
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response as HttpResponse
from starlette.routing import Route

from icefloe.impl.serve import errors as E
from icefloe.impl.serve.auth import READ, WRITE, Authenticator, OAuthError
from icefloe.impl.serve import models as M
from icefloe.impl.serve.commit import Committer
from icefloe.impl.serve.idempotency import Idempotency, iso_duration
from icefloe.impl.serve.service import CatalogService, Response, identifier, namespace_of
from icefloe.impl.serve.view_service import ViewService

log = logging.getLogger("icefloe.rest")
NS = "/v1/namespaces/{namespace}"
TABLE = NS + "/tables/{table}"
ENDPOINTS = (
    "GET /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}", "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties", "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables", "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}", "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/tables/rename", "POST /v1/{prefix}/transactions/commit",
)
VIEW_ENDPOINTS = (
    "GET /v1/{prefix}/namespaces/{namespace}/views", "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}", "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}", "POST /v1/{prefix}/views/rename",
    "POST /v1/{prefix}/namespaces/{namespace}/register-view",
)
VIEWS = NS + "/views"
VIEW = VIEWS + "/{view}"
COMMIT_PATHS = ("transactions/commit",)
MAX_REQUEST_BYTES_DEFAULT = 16 << 20  # a commit of thousands of columns or snapshots stays far below
DRAIN_BYTES_MAX = 256 << 20           # a refused body read and discarded up to this, so the 413 is read


def _json(response: Response) -> HttpResponse:
    if response.body is None:
        return HttpResponse(status_code=response.status)
    return JSONResponse(response.body, status_code=response.status)


def _error(e: E.RestError) -> JSONResponse:
    return JSONResponse(e.body(), status_code=e.status)


class RestCatalogApp:
    """Routes over one CatalogService. `client_config` is sent as /v1/config defaults
    (a FileIO's endpoint and keys, say). `committer` and `idempotency` are the classes
    that run commits and keys (a negative control overrides one method of either)."""

    def __init__(self, service: CatalogService, *, token: str | None = None,
                 idempotency_lifetime_s: int = 1800, client_config: dict | None = None,
                 committer: type = Committer, idempotency: type = Idempotency,
                 max_request_bytes: int = MAX_REQUEST_BYTES_DEFAULT, auth: Authenticator | None = None):
        assert max_request_bytes > 0, max_request_bytes
        assert token is None or auth is None, "a static token goes into the Authenticator"
        self.service = service
        self.auth = auth if auth is not None else Authenticator(static_token=token)
        self.max_request_bytes = max_request_bytes
        self.committer = committer(service)
        self.views = ViewService(service)
        self.idempotency = idempotency(service, idempotency_lifetime_s)
        self.client_config = dict(client_config or {})
        self.lifetime = iso_duration(idempotency_lifetime_s)

    # -- plumbing ---------------------------------------------------------------------

    @staticmethod
    def allow(request: Request, namespace: tuple[str, ...], privilege: str) -> None:
        """403 unless the request's principal holds `privilege` on `namespace` (decided
        before anything is read, so the answer tells nothing of what exists)."""
        principal = request.state.principal
        if not principal.may(namespace, privilege):
            raise E.forbidden(f"Forbidden: principal {principal.name} holds no {privilege} grant on namespace "
                              f"{'.'.join(namespace)}")

    async def _body(self, request: Request) -> bytes:
        """The body, refused with 413 once past the limit: by its Content-Length, or (chunked)
        as soon as the bytes read pass it. What is refused is read on and discarded, up to
        DRAIN_BYTES_MAX, and never kept: a client that sends its whole body before reading
        (urllib, requests) then reads the 413 instead of a reset connection."""
        limit = self.max_request_bytes
        declared = request.headers.get("content-length")
        if declared is not None and not declared.isdigit():
            raise E.bad_request("Malformed Content-Length")
        too_large = declared is not None and int(declared) > limit
        if too_large and int(declared) > DRAIN_BYTES_MAX:
            raise E.too_large(limit)
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > DRAIN_BYTES_MAX:
                break
            if size > limit:
                too_large, chunks = True, []
            if not too_large:
                chunks.append(chunk)
        if too_large or size > limit:
            raise E.too_large(limit)
        return b"".join(chunks)

    def endpoint(self, handler, mutation: bool = False, commit: bool = False):
        async def run(request: Request):
            try:
                request.state.principal = self.auth.authenticate(request.headers.get("authorization"))
            except E.RestError as e:
                return _error(e)
            try:
                body = await self._body(request)
                key = request.headers.get("idempotency-key") if mutation else None
                operation = f"{request.method} {request.url.path}"

                def call():
                    if mutation:
                        return self.idempotency.run(key, operation, lambda draft: handler(request, body, draft))
                    return handler(request, body, None)
                return _json(await run_in_threadpool(call))
            except E.RestError as e:
                return _error(e)
            except Exception as e:  # noqa: BLE001 - a bug of ours must still be an ErrorModel answer
                log.exception("internal error on %s %s", request.method, request.url.path)
                if commit:
                    return _error(E.commit_state_unknown(f"Internal error, commit state unknown: {type(e).__name__}"))
                return _error(E.RestError(500, "InternalServerError", f"Internal error: {type(e).__name__}: {e}"))
        return run

    # -- handlers -----------------------------------------------------------------------

    def config(self, request, body, draft):
        try:
            self.views.require()
            endpoints = ENDPOINTS + VIEW_ENDPOINTS
        except E.RestError:
            endpoints = ENDPOINTS                      # this store keeps no views: none advertised
        return Response(200, {"defaults": self.client_config, "overrides": {}, "endpoints": list(endpoints),
                              "idempotency-key-lifetime": self.lifetime})

    async def oauth_tokens(self, request: Request):
        """POST /v1/oauth/tokens: form-encoded, answered with OAuthTokenResponse or OAuthError."""
        try:
            raw = await self._body(request)
            form = {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True).items()}
            if not self.auth.principals:
                raise OAuthError("unsupported_grant_type", "this catalog issues no tokens (icefloe serve "
                                                           "--principals FILE)")
            answer = await run_in_threadpool(self.auth.token, form, request.headers.get("authorization"))
        except OAuthError as e:
            return JSONResponse(e.body(), status_code=e.status)
        except E.RestError as e:
            return JSONResponse({"error": "invalid_request", "error_description": e.message}, status_code=e.status)
        return JSONResponse(answer, headers={"Cache-Control": "no-store"})

    def list_namespaces(self, request, body, draft):
        parent = request.query_params.get("parent")
        parent_ns = namespace_of(parent) if parent else None
        principal = request.state.principal
        if parent_ns is not None and not principal.sees(parent_ns):
            self.allow(request, parent_ns, READ)
        answer = self.service.list_namespaces(parent_ns)
        answer.body["namespaces"] = [ns for ns in answer.body["namespaces"] if principal.sees(tuple(ns))]
        return answer

    def create_namespace(self, request, body, draft):
        r = M.parse(M.CreateNamespaceRequest, body)
        namespace = namespace_of("\x1f".join(r.namespace)) if r.namespace else ()
        if not namespace:
            raise E.bad_request("Malformed CreateNamespaceRequest: an empty namespace")
        self.allow(request, namespace, WRITE)
        return self.service.create_namespace(namespace, r.properties)

    def namespace(self, request, body, draft):
        ns = namespace_of(request.path_params["namespace"])
        method = request.method
        self.allow(request, ns, WRITE if method == "DELETE" else READ)
        if method == "HEAD":
            return self.service.namespace_exists(ns)
        if method == "DELETE":
            return self.service.drop_namespace(ns)
        return self.service.load_namespace(ns)

    def namespace_properties(self, request, body, draft):
        ns = namespace_of(request.path_params["namespace"])
        self.allow(request, ns, WRITE)
        r = M.parse(M.UpdateNamespacePropertiesRequest, body)
        return self.service.update_namespace_properties(ns, r.updates, r.removals)

    def tables(self, request, body, draft):
        ns = namespace_of(request.path_params["namespace"])
        self.allow(request, ns, READ if request.method == "GET" else WRITE)
        if request.method == "GET":
            return self.service.list_tables(ns)
        r = M.parse(M.CreateTableRequest, body)
        ident = identifier(ns, r.name)
        self.service._require_namespace(ns)
        metadata = self.service.new_metadata(ident, r)
        if r.stage_create:
            return Response(200, {"metadata-location": None, "metadata": _document(metadata), "config": {}})
        if self.service.location_of(ident) is not None:
            raise E.table_exists(str(ident))
        location = self.service.write_metadata(metadata, 0)
        try:
            return self.service.register_change(ident, location, _as_create(draft, ident, location))
        except E.RestError as e:
            if e.status < 500:
                self.service.delete_quietly(location)
            raise

    def table(self, request, body, draft):
        ns = namespace_of(request.path_params["namespace"])
        name = request.path_params["table"]
        method = request.method
        self.allow(request, ns, READ if method in ("GET", "HEAD") else WRITE)
        if method == "POST":
            return self.committer.commit_table(ns, name, M.parse(M.CommitTableRequest, body), draft)
        ident = identifier(ns, name)
        if method == "HEAD":
            return self.service.table_exists(ident)
        if method == "DELETE":
            purge = request.query_params.get("purgeRequested", "false").lower() == "true"
            return self.service.drop_table(ident, purge)
        return self.service.load_table(ident)

    def register(self, request, body, draft):
        ns = namespace_of(request.path_params["namespace"])
        self.allow(request, ns, WRITE)
        r = M.parse(M.RegisterTableRequest, body)
        return self.service.register_table(ns, r, draft)

    def rename(self, request, body, draft):
        r = M.parse(M.RenameTableRequest, body)
        source = identifier(tuple(r.source.namespace), r.source.name)
        destination = identifier(tuple(r.destination.namespace), r.destination.name)
        self.allow(request, source.namespace, WRITE)
        self.allow(request, destination.namespace, WRITE)
        return self.service.rename_table(source, destination)

    # -- views --------------------------------------------------------------------------------

    @staticmethod
    def _object(body: bytes, what: str) -> dict:
        value = M.read_json(body)
        if not isinstance(value, dict):
            raise E.bad_request(f"Malformed {what}: expected a JSON object")
        return value

    def list_or_create_views(self, request, body, draft):
        ns = namespace_of(request.path_params["namespace"])
        self.allow(request, ns, READ if request.method == "GET" else WRITE)
        if request.method == "GET":
            return self.views.list_views(ns)
        r = self._object(body, "CreateViewRequest")
        if not isinstance(r.get("name"), str):
            raise E.bad_request("Malformed CreateViewRequest: name: a string")
        return self.views.create_view(identifier(ns, r["name"]), r, draft)

    def view(self, request, body, draft):
        ns = namespace_of(request.path_params["namespace"])
        method = request.method
        self.allow(request, ns, READ if method in ("GET", "HEAD") else WRITE)
        ident = identifier(ns, request.path_params["view"])
        if method == "HEAD":
            return self.views.view_exists(ident)
        if method == "DELETE":
            return self.views.drop_view(ident)
        if method == "POST":
            r = self._object(body, "CommitViewRequest")
            named = r.get("identifier")
            if named is not None and (not isinstance(named, dict) or (tuple(named.get("namespace") or ()),
                                                                       named.get("name")) != (ns, ident.name)):
                raise E.bad_request(f"the body names {named!r:.120}, the path {ident}")
            return self.views.replace_view(ident, r, draft)
        return self.views.load_view(ident)

    def register_view(self, request, body, draft):
        ns = namespace_of(request.path_params["namespace"])
        self.allow(request, ns, WRITE)
        r = self._object(body, "RegisterViewRequest")
        if not isinstance(r.get("name"), str):
            raise E.bad_request("Malformed RegisterViewRequest: name: a string")
        return self.views.register_view(identifier(ns, r["name"]), r, draft)

    def rename_view(self, request, body, draft):
        r = M.parse(M.RenameTableRequest, body)
        source = identifier(tuple(r.source.namespace), r.source.name)
        destination = identifier(tuple(r.destination.namespace), r.destination.name)
        self.allow(request, source.namespace, WRITE)
        self.allow(request, destination.namespace, WRITE)
        return self.views.rename_view(source, destination)

    def transaction(self, request, body, draft):
        r = M.parse(M.CommitTransactionRequest, body)
        for change in r.table_changes:
            if change.identifier is not None:
                self.allow(request, identifier(tuple(change.identifier.namespace), change.identifier.name).namespace,
                           WRITE)
        return self.committer.commit_transaction(r, draft)

    # -- the application ------------------------------------------------------------------

    def routes(self) -> list[Route]:
        e = self.endpoint
        return [
            Route("/v1/oauth/tokens", self.oauth_tokens, methods=["POST"]),
            Route("/v1/config", e(self.config), methods=["GET"]),
            Route("/v1/namespaces", e(self.list_namespaces), methods=["GET"]),
            Route("/v1/namespaces", e(self.create_namespace, mutation=True), methods=["POST"]),
            Route(NS, e(self.namespace), methods=["GET", "HEAD"]),
            Route(NS, e(self.namespace, mutation=True), methods=["DELETE"]),
            Route(NS + "/properties", e(self.namespace_properties, mutation=True), methods=["POST"]),
            Route(NS + "/tables", e(self.tables), methods=["GET"]),
            Route(NS + "/tables", e(self.tables, mutation=True), methods=["POST"]),
            Route(TABLE, e(self.table), methods=["GET", "HEAD"]),
            Route(TABLE, e(self.table, mutation=True, commit=True), methods=["POST"]),
            Route(TABLE, e(self.table, mutation=True), methods=["DELETE"]),
            Route(NS + "/register", e(self.register, mutation=True), methods=["POST"]),
            Route("/v1/tables/rename", e(self.rename, mutation=True), methods=["POST"]),
            Route("/v1/transactions/commit", e(self.transaction, mutation=True, commit=True), methods=["POST"]),
            Route(VIEWS, e(self.list_or_create_views), methods=["GET"]),
            Route(VIEWS, e(self.list_or_create_views, mutation=True), methods=["POST"]),
            Route(VIEW, e(self.view), methods=["GET", "HEAD"]),
            Route(VIEW, e(self.view, mutation=True, commit=True), methods=["POST"]),
            Route(VIEW, e(self.view, mutation=True), methods=["DELETE"]),
            Route(NS + "/register-view", e(self.register_view, mutation=True), methods=["POST"]),
            Route("/v1/views/rename", e(self.rename_view, mutation=True), methods=["POST"]),
        ]


def _document(metadata) -> dict:
    import json
    from icefloe.impl.format.metadata import to_json
    return json.loads(to_json(metadata))


def _as_create(draft, ident, location):
    """A create's key record: replayed as the table it created."""
    if draft is None:
        return None
    import json
    from icefloe.impl.serve.records import KeyRecord
    return KeyRecord(draft.key, draft.operation, 200, json.dumps(
        {"kind": "load", "table": str(ident), "metadata-location": location}), draft.created_at_ms)


def not_found(request, exc):
    return _error(E.RestError(404, "NotFoundException", f"No route {request.method} {request.url.path}"))


def method_not_allowed(request, exc):
    return _error(E.RestError(405, "MethodNotAllowedException", f"{request.method} is not allowed on {request.url.path}"))


def build_app(service: CatalogService, **options) -> Starlette:
    """The ASGI application. Test harnesses wrap it (conformance/testing/rest_faults.py)."""
    rest = RestCatalogApp(service, **options)
    app = Starlette(routes=rest.routes(), exception_handlers={404: not_found, 405: method_not_allowed})
    app.state.rest = rest
    return app
