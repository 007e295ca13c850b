"""REST error responses (REST spec: ErrorModel, IcebergErrorResponse; the commit endpoint's
409 / 500 / 502 / 504 rules).

A RestError carries the HTTP status, the exception type name a client maps (Iceberg-Java's
ErrorHandlers and pyiceberg's `_handle_non_200_response` read `type` and the status) and a
message. The rule for commits (spec/PROTOCOL.md 9): 409 CommitFailedException only when
nothing was applied; 500 CommitStateUnknownException when the outcome is unknown; a 4xx is
never sent for an unknown state.
"""
from __future__ import annotations

BAD_REQUEST, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, NOT_ACCEPTABLE, CONFLICT = 400, 401, 403, 404, 406, 409
TOO_LARGE, UNPROCESSABLE = 413, 422
INTERNAL, SERVICE_UNAVAILABLE = 500, 503


class RestError(Exception):
    """An error response: `status`, `type` (the exception name clients map), `message`."""

    def __init__(self, status: int, type_: str, message: str):
        super().__init__(message)
        self.status, self.type, self.message = status, type_, message

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "code": self.status}}


def bad_request(message: str) -> RestError:
    return RestError(BAD_REQUEST, "BadRequestException", message)


def unsupported(message: str) -> RestError:
    return RestError(NOT_ACCEPTABLE, "UnsupportedOperationException", message)


def no_such_table(what: str) -> RestError:
    return RestError(NOT_FOUND, "NoSuchTableException", f"Table does not exist: {what}")


def no_such_view(what: str) -> RestError:
    return RestError(NOT_FOUND, "NoSuchViewException", f"View does not exist: {what}")


def view_exists(what: str) -> RestError:
    return RestError(CONFLICT, "AlreadyExistsException", f"View already exists: {what}")


def no_such_namespace(what: str) -> RestError:
    return RestError(NOT_FOUND, "NoSuchNamespaceException", f"Namespace does not exist: {what}")


def table_exists(what: str) -> RestError:
    return RestError(CONFLICT, "AlreadyExistsException", f"Table already exists: {what}")


def namespace_exists(what: str) -> RestError:
    return RestError(CONFLICT, "AlreadyExistsException", f"Namespace already exists: {what}")


def namespace_not_empty(what: str) -> RestError:
    return RestError(CONFLICT, "NamespaceNotEmptyException", f"Namespace is not empty: {what}")


def commit_failed(message: str) -> RestError:
    """409: definitely not applied (a requirement failed, or the swap lost every race)."""
    return RestError(CONFLICT, "CommitFailedException", message)


def commit_state_unknown(message: str, status: int = INTERNAL) -> RestError:
    """500 (or 502 / 504): the commit may or may not have been applied."""
    assert status in (500, 502, 504), status
    return RestError(status, "CommitStateUnknownException", message)


def unavailable(message: str) -> RestError:
    """503 for a request that changed nothing (the catalog's database is unreachable)."""
    return RestError(SERVICE_UNAVAILABLE, "ServiceUnavailableException", message)


def unauthorized(message: str = "Not authorized: a bearer token is required") -> RestError:
    return RestError(UNAUTHORIZED, "NotAuthorizedException", message)


def forbidden(message: str) -> RestError:
    """403: the principal may not do this here (nothing of the resource is told)."""
    return RestError(FORBIDDEN, "ForbiddenException", message)


def too_large(limit: int) -> RestError:
    return RestError(TOO_LARGE, "RequestTooLargeException", f"Request body larger than {limit} bytes "
                     "(icefloe serve --max-request-bytes)")
