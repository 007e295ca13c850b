"""Settings for pointing other engines' S3 clients at an endpoint, typically a FaultProxy.

pyiceberg's S3 FileIO (PyArrowFileIO) builds a pyarrow `S3FileSystem` from table or catalog
properties. Two of those matter when its requests are faulted or held on purpose:

- `s3.retry-strategy-impl`: the AWS SDK for C++ retries a failed request up to 3 times by
  default, so one injected fault would be answered by a hidden second request.
  `SingleAttemptRetryStrategy` (one attempt per request) makes every fault reach pyiceberg.
  pyiceberg instantiates the class named by this property with no arguments.
- `s3.request-timeout`: the SDK abandons and silently re-sends a request after 3 s; a test
  that holds a request at a gate raises it.

Even with one attempt, pyarrow re-sends a request that was reset on a reused connection
(docs/s3.md, "What the tests found about the clients").
"""
from __future__ import annotations

from pyarrow import fs

REQUEST_TIMEOUT_S_DEFAULT = 60


class SingleAttemptRetryStrategy(fs.AwsStandardS3RetryStrategy):
    """The AWS standard retry strategy with one attempt: no SDK-level retry."""

    def __init__(self) -> None:
        super().__init__(max_attempts=1)


def pyiceberg_s3_properties(endpoint_url: str, access_key: str, secret_key: str = "secret",
                            region: str = "us-east-1", *, single_attempt: bool = True,
                            request_timeout_s: float = REQUEST_TIMEOUT_S_DEFAULT) -> dict[str, str]:
    """pyiceberg FileIO / catalog properties for `endpoint_url`; the proxy names the client by
    `access_key` (the SigV4 access key id)."""
    properties = {
        "s3.endpoint": endpoint_url,
        "s3.access-key-id": access_key,
        "s3.secret-access-key": secret_key,
        "s3.region": region,
        "s3.request-timeout": str(request_timeout_s),
    }
    if single_attempt:
        properties["s3.retry-strategy-impl"] = f"{__name__}.{SingleAttemptRetryStrategy.__name__}"
    return properties
