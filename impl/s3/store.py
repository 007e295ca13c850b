"""S3 as an icefloe object store (spec/PROTOCOL.md section 2, "Storage", and the
store side of 4.2, "S3 pointer object"; its ambiguous outcomes are the TLA+ `AckLost`
and `SwapDelayed` faults of section 13 seen from the client).

put_if_absent is `PutObject` with `If-None-Match: *`; compare_and_swap is
`PutObject` with `If-Match: <etag>`. Both are single requests that S3 decides
atomically per key.

Retries are ours, not the SDK's. botocore is configured with one attempt per call
(`total_max_attempts=1`), because an SDK retry of a conditional PUT can turn a
success into a reported failure: the first attempt lands, its response is lost, the
retry is refused with 412, and the caller is told "conflict" about a write that
succeeded (apache/iceberg #7151). Our loop remembers whether an earlier attempt may
have landed and, if so, never trusts a later refusal without reading the object back.

How each failure of one request is classified:
- connection refused, DNS failure, connect timeout, proxy or TLS handshake failure
  (botocore `ConnectionError` family): the request was never sent -> not applied;
- 409 ConditionalRequestConflict (S3 refused a racing conditional write), 408, 429:
  not applied, worth another attempt; any other 4xx (403, 400, ...): not applied,
  and not retried;
- connection reset or closed after sending, read timeout, any 5xx (500 InternalError
  and 503 SlowDown included: S3 does not promise that a 5xx write had no effect):
  may have been applied ("ambiguous").

Outcome of a conditional write (all attempts, bounded by `attempts_max`):
1. a 2xx on any attempt -> success (a retry can only succeed if no earlier attempt
   landed first, and an earlier attempt that arrives late is then refused);
2. a 412 (or, for compare_and_swap, a 404) and no earlier attempt was ambiguous ->
   AlreadyExists / PreconditionFailed / NotFound: definite;
3. otherwise, if some attempt was ambiguous, the object is read back (GET):
   - its bytes equal ours -> success. (If another writer stored byte-identical
     content, the store is in exactly the state our success would have produced, so
     this report is safe.)
   - StoreOutcomeUnknown in exactly these cases: the object is absent (ours may have
     landed and been deleted since, or may still land: a request cut off by a reset
     can be applied later); its bytes differ from ours (another writer won, or ours
     landed and was then replaced by a compare-and-swap that had read it: S3 without
     versioning cannot tell the two apart; a caller whose protocol never replaces
     this object may conclude "lost"); or the read-back itself failed.
4. every attempt failed before it could have had an effect -> StoreUnavailable.

Reads (get, stat, list) retry any failure worth retrying; they have no effect, so
their failure is StoreUnavailable. delete is idempotent on S3 and retries likewise;
exhausting it after an ambiguous attempt is StoreOutcomeUnknown.

Every HTTP request is counted by kind (`counts`): get (read-backs included), stat,
put_if_absent, compare_and_swap, delete, list; retries count once per attempt.
"""
from __future__ import annotations

import os
import random
import threading
import time
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Iterator, Mapping

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionError as BotoConnectionError
from botocore.exceptions import BotoCoreError, HTTPClientError, NoCredentialsError
from botocore.exceptions import PartialCredentialsError

from icefloe.impl.io.base import (
    AlreadyExists, CountingMixin, NotFound, ObjectInfo, PreconditionFailed, StoreError,
    StoreOutcomeUnknown, StoreUnavailable)
from icefloe.impl.outcomes import require

# The request header naming the client (a writer) on every request this store sends,
# so a server-side observer (a test proxy, a request log) can tell writers apart.
CLIENT_HEADER = "x-icefloe-client"

SCHEMES = ("s3://", "s3a://")
# Property names (pyiceberg's FileIO names, so one property map configures both) and the
# environment variables read when a property is absent, in order.
PROPERTY_ENV = {
    "s3.endpoint": ("ICEFLOE_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    "s3.access-key-id": ("AWS_ACCESS_KEY_ID",),
    "s3.secret-access-key": ("AWS_SECRET_ACCESS_KEY",),
    "s3.region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
}
REGION_DEFAULT = "us-east-1"
ATTEMPTS_MAX_DEFAULT = 4
LIST_PAGE_KEYS_MAX = 1000
LIST_PAGES_MAX = 100_000  # 10^8 keys: a bound on the orphan-cleanup scan


_session_lock = threading.Lock()
_session: boto3.session.Session | None = None


def new_client(service_name: str = "s3", **kwargs: Any) -> Any:
    """A boto3 client (S3 unless named) from one shared session: service models load
    once, and the lock makes client creation safe from any thread (sessions are not)."""
    global _session
    with _session_lock:
        if _session is None:
            _session = boto3.session.Session()
        return _session.client(service_name, **kwargs)


def split_location(location: str) -> tuple[str, str]:
    """'s3://bucket/some/key' -> ('bucket', 'some/key')."""
    for scheme in SCHEMES:
        if location.startswith(scheme):
            bucket, _, key = location[len(scheme):].partition("/")
            if not bucket:
                raise ValueError(f"no bucket in {location!r}")
            return bucket, key
    raise ValueError(f"not an s3 location: {location!r}")


def _etag(raw: str) -> str:
    return raw.strip('"')


def _ms_of_http_date(value: str | None) -> int:
    if not value:
        return 0
    return int(parsedate_to_datetime(value).timestamp() * 1000)


# -- one request's fate --------------------------------------------------------------

# 4xx answers worth another attempt: request timeout, a racing conditional write
# (409 ConditionalRequestConflict), throttling. Any other 4xx will not change.
RETRYABLE_4XX = frozenset({408, 409, 429})


class _Failure(Exception):
    """One request failed; `applied` is False (definitely not) or None (may have);
    `retryable` says whether another attempt could fare differently."""

    def __init__(self, applied: bool | None, status: int | None, code: str, detail: str,
                 retryable: bool = True):
        super().__init__(f"{status or '-'} {code}: {detail}")
        self.applied = applied
        self.status = status
        self.code = code
        self.retryable = retryable


class _Refusal(Exception):
    """A definite 404 or 412 answer that the verb maps to a typed error."""

    def __init__(self, status: int, code: str):
        super().__init__(f"{status} {code}")
        self.status = status
        self.code = code


class S3Store(CountingMixin):
    """An ObjectStore over an S3 API endpoint (AWS, moto, MinIO; path-style)."""

    def __init__(self, client: Any, *, attempts_max: int = ATTEMPTS_MAX_DEFAULT,
                 retry_wait_ms_min: int = 0, retry_wait_ms_max: int = 0,
                 sleep: Callable[[float], None] = time.sleep,
                 rng: random.Random | None = None):
        require(attempts_max >= 1, f"attempts_max must be at least 1, not {attempts_max}")
        require(0 <= retry_wait_ms_min <= retry_wait_ms_max,
                f"need 0 <= retry_wait_ms_min <= retry_wait_ms_max, not {retry_wait_ms_min}, {retry_wait_ms_max}")
        self._init_counts()
        self.client = client
        self.attempts_max = attempts_max
        self.retry_wait_ms_min = retry_wait_ms_min
        self.retry_wait_ms_max = retry_wait_ms_max
        self._sleep = sleep
        self._rng = rng or random.Random(0)

    @classmethod
    def from_config(cls, endpoint_url: str | None, access_key: str, secret_key: str,
                    region: str, *, client_name: str | None = None,
                    connect_timeout_s: float = 5, read_timeout_s: float = 30,
                    **store_options: Any) -> "S3Store":
        """Build the boto3 client with SDK retries off and path-style addressing.
        `client_name`, if given, is sent as the `x-icefloe-client` header (signed)."""
        config = Config(
            s3={"addressing_style": "path"},
            retries={"mode": "standard", "total_max_attempts": 1},
            connect_timeout=connect_timeout_s,
            read_timeout=read_timeout_s,
        )
        client = new_client(
            endpoint_url=endpoint_url, aws_access_key_id=access_key,
            aws_secret_access_key=secret_key, region_name=region, config=config)
        if client_name is not None:
            def tag(request: Any, **_: Any) -> None:
                request.headers[CLIENT_HEADER] = client_name
            client.meta.events.register("before-sign.s3", tag)
        return cls(client, **store_options)

    @classmethod
    def from_properties(cls, properties: Mapping[str, str],
                        environ: Mapping[str, str] | None = None) -> "S3Store":
        """A store configured like pyiceberg's S3 FileIO: `s3.endpoint`, `s3.access-key-id`,
        `s3.secret-access-key`, `s3.region`, each falling back to the environment
        (`ICEFLOE_S3_ENDPOINT`, `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
        ...); no endpoint means AWS. The keys are required: boto3's wider credential chain
        (profiles, the instance-metadata address) is never probed, so a missing key is a
        ValueError here rather than a network request to an address no test owns."""
        environ = os.environ if environ is None else environ

        def setting(name: str) -> str | None:
            if properties.get(name):
                return properties[name]
            return next((environ[v] for v in PROPERTY_ENV[name] if environ.get(v)), None)

        access_key, secret_key = setting("s3.access-key-id"), setting("s3.secret-access-key")
        if not access_key or not secret_key:
            raise ValueError("no S3 credentials: set s3.access-key-id and s3.secret-access-key, "
                             "or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        return cls.from_config(setting("s3.endpoint"), access_key, secret_key,
                               setting("s3.region") or REGION_DEFAULT)

    # -- the request primitive -----------------------------------------------------

    def _send(self, kind: str, method: str, **params: Any) -> dict:
        """Send one HTTP request (no SDK retry); classify any failure."""
        self._count(kind)
        try:
            return getattr(self.client, method)(**params)
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
            raise _Failure(False, None, type(exc).__name__, str(exc)) from exc
        except (NoCredentialsError, PartialCredentialsError) as exc:  # refused before sending
            raise _Failure(False, None, type(exc).__name__, f"{exc} (set AWS_ACCESS_KEY_ID and "
                           "AWS_SECRET_ACCESS_KEY, or s3.access-key-id and s3.secret-access-key)",
                           retryable=False) from exc
        except HTTPClientError as exc:
            raise _Failure(None, None, type(exc).__name__, str(exc)) from exc

    def _backoff(self, attempt: int) -> None:
        if attempt < self.attempts_max and self.retry_wait_ms_max > 0:
            wait_ms = self._rng.randint(self.retry_wait_ms_min, self.retry_wait_ms_max)
            self._sleep(wait_ms / 1000)

    # -- reads ------------------------------------------------------------------------

    def _read(self, kind: str, location: str, method: str, **params: Any) -> dict:
        last: _Failure | None = None
        for attempt in range(1, self.attempts_max + 1):
            try:
                return self._send(kind, method, **params)
            except _Refusal as refusal:
                if refusal.status == 404:
                    raise NotFound(location, refusal.code) from None
                raise StoreError(location, f"{refusal.status} {refusal.code}") from None
            except _Failure as failure:
                last = failure
                if not failure.retryable:
                    break
                self._backoff(attempt)
        raise StoreUnavailable(location, f"{kind} failed: {last}")

    def _get(self, location: str) -> tuple[bytes, ObjectInfo]:
        bucket, key = split_location(location)
        # A body cut off mid-stream is retried as a whole request.
        last: Exception | None = None
        for attempt in range(1, self.attempts_max + 1):
            response = self._read("get", location, "get_object", Bucket=bucket, Key=key)
            try:
                data = response["Body"].read()
            except (BotoCoreError, OSError) as exc:  # cut off, timed out, or short
                last = exc
                self._backoff(attempt)
                continue
            info = ObjectInfo(location=location, size=len(data),
                              etag=_etag(response["ETag"]),
                              last_modified_ms=int(response["LastModified"].timestamp() * 1000))
            return data, info
        raise StoreUnavailable(location, f"body read failed {self.attempts_max} times: {last}")

    def get(self, location: str) -> bytes:
        return self._get(location)[0]

    def get_with_info(self, location: str) -> tuple[bytes, ObjectInfo]:
        """The bytes and the etag of exactly those bytes, from one GET (a `stat` then a
        `get` could straddle a swap and pair one version's etag with another's bytes)."""
        return self._get(location)

    def stat(self, location: str) -> ObjectInfo:
        bucket, key = split_location(location)
        response = self._read("stat", location, "head_object", Bucket=bucket, Key=key)
        return ObjectInfo(location=location, size=int(response["ContentLength"]),
                          etag=_etag(response["ETag"]),
                          last_modified_ms=int(response["LastModified"].timestamp() * 1000))

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Every object under `prefix` (s3://bucket/prefix). Orphan cleanup only."""
        bucket, key_prefix = split_location(prefix)
        params: dict[str, Any] = dict(Bucket=bucket, Prefix=key_prefix,
                                      MaxKeys=LIST_PAGE_KEYS_MAX)
        for _ in range(LIST_PAGES_MAX):
            page = self._read("list", prefix, "list_objects_v2", **params)
            for entry in page.get("Contents", []):
                yield ObjectInfo(location=f"s3://{bucket}/{entry['Key']}",
                                 size=int(entry["Size"]), etag=_etag(entry["ETag"]),
                                 last_modified_ms=int(entry["LastModified"].timestamp() * 1000))
            if not page.get("IsTruncated"):
                return
            params["ContinuationToken"] = page["NextContinuationToken"]
        raise StoreUnavailable(prefix, f"more than {LIST_PAGES_MAX} list pages")

    # -- writes -----------------------------------------------------------------------

    def put_if_absent(self, location: str, data: bytes) -> ObjectInfo:
        return self._conditional_put("put_if_absent", location, data, IfNoneMatch="*")

    def compare_and_swap(self, location: str, data: bytes, expected_etag: str) -> ObjectInfo:
        require(bool(expected_etag), "compare_and_swap needs the etag it expects")
        return self._conditional_put("compare_and_swap", location, data,
                                     IfMatch=f'"{_etag(expected_etag)}"')

    def _conditional_put(self, kind: str, location: str, data: bytes,
                         **condition: str) -> ObjectInfo:
        bucket, key = split_location(location)
        require(bool(key), f"no key in {location!r}")
        ambiguous: _Failure | None = None  # first attempt that may have landed
        last: Exception | None = None
        for attempt in range(1, self.attempts_max + 1):
            try:
                response = self._send(kind, "put_object", Bucket=bucket, Key=key,
                                      Body=data, **condition)
            except _Failure as failure:
                last = failure
                if failure.applied is None and ambiguous is None:
                    ambiguous = failure
                if not failure.retryable:
                    break
                self._backoff(attempt)
                continue
            except _Refusal as refusal:
                if ambiguous is None:
                    raise self._refusal_error(kind, location, refusal) from None
                last = refusal
                break  # a refusal after an ambiguous attempt: only a read-back decides
            headers = response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
            info = ObjectInfo(
                location=location, size=len(data), etag=_etag(response["ETag"]),
                last_modified_ms=_ms_of_http_date(
                    headers.get("last-modified") or headers.get("date")))
            if not info.etag:   # not S3's contract: what happened cannot be told apart
                raise StoreOutcomeUnknown(location, "S3 acknowledged a write without an etag")
            return info
        if ambiguous is None:
            raise StoreUnavailable(location, f"{kind}: no attempt could have applied; "
                                             f"last: {last}")
        return self._read_back(kind, location, data, ambiguous, last)

    def _refusal_error(self, kind: str, location: str, refusal: _Refusal) -> StoreError:
        if refusal.status == 412:
            if kind == "put_if_absent":
                return AlreadyExists(location, "If-None-Match: * refused (412)")
            return PreconditionFailed(location, "If-Match refused (412)")
        if refusal.code == "NoSuchBucket":
            return NotFound(location, "no such bucket")
        if kind == "compare_and_swap":
            return NotFound(location, "no object to swap (404)")
        return StoreError(location, f"{kind}: unexpected {refusal.status} {refusal.code}")

    def _read_back(self, kind: str, location: str, data: bytes,
                   ambiguous: _Failure, last: Exception | None) -> ObjectInfo:
        """An earlier attempt may have landed and the later ones did not succeed:
        the object's current bytes decide, or nothing does."""
        why = f"{kind}: an attempt may have landed ({ambiguous}); then: {last}"
        try:
            current, info = self._get(location)
        except NotFound:
            raise StoreOutcomeUnknown(location, f"{why}; read-back: absent") from None
        except StoreError as exc:
            raise StoreOutcomeUnknown(location, f"{why}; read-back failed: {exc}") from None
        if current == data:
            assert info.size == len(data)
            return info
        raise StoreOutcomeUnknown(location, f"{why}; read-back: other content")

    def delete(self, location: str) -> None:
        """Remove the object; deleting an absent key succeeds (S3 cannot tell)."""
        bucket, key = split_location(location)
        ambiguous: _Failure | None = None
        last: _Failure | None = None
        for attempt in range(1, self.attempts_max + 1):
            try:
                self._send("delete", "delete_object", Bucket=bucket, Key=key)
                return
            except _Refusal as refusal:
                if refusal.status == 404:
                    raise NotFound(location, refusal.code) from None
                raise StoreError(location, f"delete: {refusal.status} {refusal.code}") from None
            except _Failure as failure:
                last = failure
                if failure.applied is None and ambiguous is None:
                    ambiguous = failure
                if not failure.retryable:
                    break
                self._backoff(attempt)
        if ambiguous is not None:
            raise StoreOutcomeUnknown(location, f"delete may have applied ({ambiguous}); "
                                                f"last: {last}")
        raise StoreUnavailable(location, f"delete failed: {last}")
