"""How one S3 request failed (spec/PROTOCOL.md section 2; see store.py for what the store
makes of each): `Failure` (not applied, or may have been; retryable or not; a timeout or
not) or `Refusal` (a definite 404 or 412), and the typed errors the store raises that the
generic store errors do not name: a missing bucket and an endpoint that did not answer.
"""
from __future__ import annotations

from typing import Any, Callable

from botocore.exceptions import ClientError, ConnectionError as BotoConnectionError
from botocore.exceptions import ConnectTimeoutError, HTTPClientError, NoCredentialsError
from botocore.exceptions import PartialCredentialsError, ReadTimeoutError

from icefloe.impl.io.base import StoreError, StoreOutcomeUnknown, StoreUnavailable

# 4xx answers worth another attempt: request timeout, a racing conditional write
# (409 ConditionalRequestConflict), throttling. Any other 4xx will not change.
RETRYABLE_4XX = frozenset({408, 409, 429})


class NoSuchBucket(StoreError):
    """The bucket of a location does not exist (S3's NoSuchBucket): a misconfigured warehouse
    or catalog, not an absent object."""


class S3Timeout(StoreUnavailable):
    """The endpoint did not answer in time (connect or read timeout) and the call's deadline
    or attempts ran out; nothing was applied."""


class S3TimeoutOutcomeUnknown(StoreOutcomeUnknown):
    """A conditional write timed out after it was sent: it may have landed."""


class _Failure(Exception):
    """One request failed; `applied` is False (definitely not) or None (may have);
    `retryable` says whether another attempt could fare differently; `timeout` is
    "connect" or "read" when the endpoint did not answer in time."""

    def __init__(self, applied: bool | None, status: int | None, code: str, detail: str,
                 retryable: bool = True, timeout: str | None = None):
        super().__init__(f"{status or '-'} {code}: {detail}")
        self.applied = applied
        self.status = status
        self.code = code
        self.retryable = retryable
        self.timeout = timeout


class _Refusal(Exception):
    """A definite 404 or 412 answer that the verb maps to a typed error."""

    def __init__(self, status: int, code: str):
        super().__init__(f"{status} {code}")
        self.status = status
        self.code = code


def send(call: Callable[..., dict], **params: Any) -> dict:
    """Make one SDK call (no SDK retry); raise any failure as a Failure or a Refusal."""
    try:
        return call(**params)
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if status is not None and status >= 500:
            raise _Failure(None, status, code, str(exc)) from exc
        if status in (404, 412):
            raise _Refusal(status, code) from exc
        raise _Failure(False, status, code, str(exc),
                       retryable=status in RETRYABLE_4XX) from exc
    except BotoConnectionError as exc:
        raise _Failure(False, None, type(exc).__name__, str(exc),
                       timeout="connect" if isinstance(exc, ConnectTimeoutError) else None) from exc
    except (NoCredentialsError, PartialCredentialsError) as exc:  # refused before sending
        raise _Failure(False, None, type(exc).__name__, f"{exc} (set AWS_ACCESS_KEY_ID and "
                       "AWS_SECRET_ACCESS_KEY, or s3.access-key-id and s3.secret-access-key)",
                       retryable=False) from exc
    except HTTPClientError as exc:
        raise _Failure(None, None, type(exc).__name__, str(exc),
                       timeout="read" if isinstance(exc, ReadTimeoutError) else None) from exc
