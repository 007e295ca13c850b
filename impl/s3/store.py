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

Time is bounded three ways (an endpoint that accepts connections and never answers used to
give 4 attempts x 30 s of silence): a connect timeout, a read timeout (no byte for that
long), and a deadline per store call across its attempts: no attempt starts once the
deadline has passed, so a call ends within the deadline plus one timeout. When the failure was a timeout, the error is `S3Timeout` (a StoreUnavailable, or a
StoreOutcomeUnknown for a write that may have landed) naming the endpoint, the timeouts
and the time spent. A missing bucket is `NoSuchBucket`, never NotFound: an absent object
and an absent bucket are different facts (a table that does not exist vs. a warehouse
that is misconfigured).

Every HTTP request is counted by kind (`counts`): get (read-backs included), stat,
put_if_absent, compare_and_swap, delete, list; retries count once per attempt.
"""
from __future__ import annotations

import random
import time
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Iterator, Mapping

from botocore.exceptions import BotoCoreError

from icefloe.impl.io.base import (
    AlreadyExists, CountingMixin, NotFound, ObjectInfo, PreconditionFailed, StoreError,
    StoreOutcomeUnknown, StoreUnavailable)
from icefloe.impl.outcomes import require
from icefloe.impl.s3.client import (  # noqa: F401 - CLIENT_HEADER, new_client: re-exported
    CLIENT_HEADER, CONNECT_TIMEOUT_S_DEFAULT, DEADLINE_S_DEFAULT, READ_TIMEOUT_S_DEFAULT, build_client,
    new_client, settings_from_properties,
)
from icefloe.impl.s3.errors import (  # noqa: F401 - the failure kinds: re-exported for subclasses
    NoSuchBucket, S3Timeout, S3TimeoutOutcomeUnknown, _Failure, _Refusal, send,
)

SCHEMES = ("s3://", "s3a://")
ATTEMPTS_MAX_DEFAULT = 4
LIST_PAGE_KEYS_MAX = 1000
LIST_PAGES_MAX = 100_000  # 10^8 keys: a bound on the orphan-cleanup scan


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


class _Attempts:
    """One call's attempts: the first that may have landed, the last failure, and whether
    another may start (attempts left, deadline not passed), with the backoff between."""

    def __init__(self, store: "S3Store", kind: str, location: str):
        self.store, self.kind, self.location = store, kind, location
        self.started, self.count = store._clock(), 0
        self.ambiguous: _Failure | None = None   # first attempt that may have landed
        self.last: Exception | None = None

    def __iter__(self) -> Iterator[int]:
        while True:
            self.count += 1
            yield self.count

    def failed(self, failure: _Failure) -> bool:
        """Record a failed attempt; True (after the backoff) when another may start."""
        self.last = failure
        if failure.applied is None and self.ambiguous is None:
            self.ambiguous = failure
        if not failure.retryable or not self.store._another(self.count, self.started):
            return False
        self.store._backoff(self.count)
        return True

    def gave_up(self, why: str) -> StoreError:
        """The error for a call that ran out of attempts with none of them landed."""
        if isinstance(self.last, _Failure) and self.last.timeout:
            return S3Timeout(self.location,
                             self.store._timeout_text(self.kind, self.started, self.count))
        return StoreUnavailable(self.location, f"{why}; last: {self.last}")


class S3Store(CountingMixin):
    """An ObjectStore over an S3 API endpoint (AWS, moto, MinIO; path-style)."""

    def __init__(self, client: Any, *, attempts_max: int = ATTEMPTS_MAX_DEFAULT,
                 retry_wait_ms_min: int = 0, retry_wait_ms_max: int = 0,
                 sleep: Callable[[float], None] = time.sleep,
                 rng: random.Random | None = None, deadline_s: float = DEADLINE_S_DEFAULT,
                 clock: Callable[[], float] = time.monotonic):
        require(attempts_max >= 1, f"attempts_max must be at least 1, not {attempts_max}")
        require(0 <= retry_wait_ms_min <= retry_wait_ms_max,
                f"need 0 <= retry_wait_ms_min <= retry_wait_ms_max, not {retry_wait_ms_min}, {retry_wait_ms_max}")
        require(deadline_s > 0, f"deadline_s must be positive, not {deadline_s}")
        self._init_counts()
        self.client = client
        self.attempts_max = attempts_max
        self.retry_wait_ms_min = retry_wait_ms_min
        self.retry_wait_ms_max = retry_wait_ms_max
        self.deadline_s = deadline_s
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random(0)
        config = getattr(getattr(client, "meta", None), "config", None)
        self.endpoint = getattr(getattr(client, "meta", None), "endpoint_url", None) or "AWS S3"
        self.connect_timeout_s = getattr(config, "connect_timeout", None)
        self.read_timeout_s = getattr(config, "read_timeout", None)

    @classmethod
    def from_config(cls, endpoint_url: str | None, access_key: str, secret_key: str,
                    region: str, *, client_name: str | None = None,
                    connect_timeout_s: float = CONNECT_TIMEOUT_S_DEFAULT,
                    read_timeout_s: float = READ_TIMEOUT_S_DEFAULT,
                    **store_options: Any) -> "S3Store":
        """A store on a fresh boto3 client (client.build_client: SDK retries off, path-style,
        these timeouts; `client_name` sent as the signed `x-icefloe-client` header)."""
        return cls(build_client(endpoint_url, access_key, secret_key, region, client_name=client_name,
                                connect_timeout_s=connect_timeout_s, read_timeout_s=read_timeout_s),
                   **store_options)

    @classmethod
    def from_properties(cls, properties: Mapping[str, str],
                        environ: Mapping[str, str] | None = None) -> "S3Store":
        """A store configured like pyiceberg's S3 FileIO (client.settings_from_properties)."""
        settings = settings_from_properties(properties, environ)
        return cls.from_config(settings.pop("endpoint_url"), settings.pop("access_key"),
                               settings.pop("secret_key"), settings.pop("region"), **settings)

    # -- the request primitive -----------------------------------------------------

    def _send(self, kind: str, method: str, **params: Any) -> dict:
        """Send one HTTP request (no SDK retry); classify any failure (errors.send)."""
        self._count(kind)
        return send(getattr(self.client, method), **params)

    def _backoff(self, attempt: int) -> None:
        if attempt < self.attempts_max and self.retry_wait_ms_max > 0:
            wait_ms = self._rng.randint(self.retry_wait_ms_min, self.retry_wait_ms_max)
            self._sleep(wait_ms / 1000)

    def _another(self, attempt: int, started: float) -> bool:
        """Whether attempt `attempt + 1` may start: attempts left and the call's deadline not
        passed (so a call ends within its deadline plus one timeout)."""
        return attempt < self.attempts_max and self._clock() - started < self.deadline_s

    def _timeout_text(self, kind: str, started: float, attempts: int) -> str:
        limits = ", ".join(f"{name} {value:g} s" for name, value in (
            ("connect timeout", self.connect_timeout_s), ("read timeout", self.read_timeout_s),
            ("deadline", self.deadline_s)) if value)
        return (f"S3 endpoint {self.endpoint} did not answer ({kind}): "
                f"{attempts} attempt(s) in {self._clock() - started:.1f} s; {limits}")

    def _no_bucket(self, location: str) -> NoSuchBucket:
        bucket = split_location(location)[0]
        return NoSuchBucket(location, f"the bucket {bucket!r} does not exist at {self.endpoint}")

    # -- reads ------------------------------------------------------------------------

    def _read(self, kind: str, location: str, method: str, **params: Any) -> dict:
        tries = _Attempts(self, kind, location)
        for _ in tries:
            try:
                return self._send(kind, method, **params)
            except _Refusal as refusal:
                if refusal.code == "NoSuchBucket" or (refusal.status == 404 and method == "head_object"
                                                      and not self._bucket_exists(params["Bucket"])):
                    raise self._no_bucket(location) from None
                if refusal.status == 404:
                    raise NotFound(location, refusal.code) from None
                raise StoreError(location, f"{refusal.status} {refusal.code}") from None
            except _Failure as failure:
                if not tries.failed(failure):
                    break
        raise tries.gave_up(f"{kind} failed")

    def _bucket_exists(self, bucket: str) -> bool:
        """A HEAD's 404 has no body to say whether the key or the bucket is missing: ask."""
        try:
            self._send("stat", "head_bucket", Bucket=bucket)
        except _Refusal as refusal:
            return refusal.status != 404
        except _Failure:
            return True  # cannot tell: report the object as absent, as the HEAD said
        return True

    def _get(self, location: str) -> tuple[bytes, ObjectInfo]:
        bucket, key = split_location(location)
        # A body cut off mid-stream is retried as a whole request.
        last: Exception | None = None
        started = self._clock()
        for attempt in range(1, self.attempts_max + 1):
            if attempt > 1 and not self._another(attempt - 1, started):
                break
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
        raise StoreUnavailable(location, f"body read failed: {last}")

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
        tries = _Attempts(self, kind, location)
        for _ in tries:
            try:
                response = self._send(kind, "put_object", Bucket=bucket, Key=key,
                                      Body=data, **condition)
            except _Failure as failure:
                if not tries.failed(failure):
                    break
                continue
            except _Refusal as refusal:
                if tries.ambiguous is None:
                    raise self._refusal_error(kind, location, refusal) from None
                tries.last = refusal
                break  # a refusal after an ambiguous attempt: only a read-back decides
            headers = response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
            info = ObjectInfo(
                location=location, size=len(data), etag=_etag(response["ETag"]),
                last_modified_ms=_ms_of_http_date(
                    headers.get("last-modified") or headers.get("date")))
            if not info.etag:   # not S3's contract: what happened cannot be told apart
                raise StoreOutcomeUnknown(location, "S3 acknowledged a write without an etag")
            return info
        if tries.ambiguous is None:
            raise tries.gave_up(f"{kind}: no attempt could have applied")
        return self._read_back(kind, location, data, tries.ambiguous, tries.last)

    def _refusal_error(self, kind: str, location: str, refusal: _Refusal) -> StoreError:
        if refusal.status == 412:
            if kind == "put_if_absent":
                return AlreadyExists(location, "If-None-Match: * refused (412)")
            return PreconditionFailed(location, "If-Match refused (412)")
        if refusal.code == "NoSuchBucket":
            return self._no_bucket(location)
        if kind == "compare_and_swap":
            return NotFound(location, "no object to swap (404)")
        return StoreError(location, f"{kind}: unexpected {refusal.status} {refusal.code}")

    def _read_back(self, kind: str, location: str, data: bytes, ambiguous: _Failure,
                   last: Exception | None) -> ObjectInfo:
        """An earlier attempt may have landed and the later ones did not succeed:
        the object's current bytes decide, or nothing does."""
        why = f"{kind}: an attempt may have landed ({ambiguous}); then: {last}"
        try:
            current, info = self._get(location)
        except NotFound:
            raise StoreOutcomeUnknown(location, f"{why}; read-back: absent") from None
        except S3Timeout as exc:
            raise S3TimeoutOutcomeUnknown(location, f"{kind} may have landed ({ambiguous}), and reading it "
                                                    f"back failed: {exc}") from None
        except StoreError as exc:
            raise StoreOutcomeUnknown(location, f"{why}; read-back failed: {exc}") from None
        if current == data:
            assert info.size == len(data)
            return info
        raise StoreOutcomeUnknown(location, f"{why}; read-back: other content")

    def delete(self, location: str) -> None:
        """Remove the object; deleting an absent key succeeds (S3 cannot tell)."""
        bucket, key = split_location(location)
        tries = _Attempts(self, "delete", location)
        for _ in tries:
            try:
                self._send("delete", "delete_object", Bucket=bucket, Key=key)
                return
            except _Refusal as refusal:
                if refusal.code == "NoSuchBucket":
                    raise self._no_bucket(location) from None
                if refusal.status == 404:
                    raise NotFound(location, refusal.code) from None
                raise StoreError(location, f"delete: {refusal.status} {refusal.code}") from None
            except _Failure as failure:
                if not tries.failed(failure):
                    break
        if tries.ambiguous is not None:
            raise StoreOutcomeUnknown(location, f"delete may have applied ({tries.ambiguous}); "
                                                f"last: {tries.last}")
        raise tries.gave_up("delete failed")
