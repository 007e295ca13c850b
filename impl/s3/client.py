"""Building the boto3 client an S3Store sends through (spec/PROTOCOL.md section 2, "Storage"):
SDK retries off (the store retries, and reads back after an ambiguous conditional write),
path-style addressing, connect and read timeouts, the writer's name in a signed header;
and the settings from pyiceberg-style properties with the environment as fallback.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Mapping

import boto3
from botocore.config import Config

from icefloe.impl.outcomes import InvalidArgument, require

# The request header naming the client (a writer) on every request this store sends,
# so a server-side observer (a test proxy, a request log) can tell writers apart.
CLIENT_HEADER = "x-icefloe-client"

# Property names (pyiceberg's FileIO names, so one property map configures both) and the
# environment variables read when a property is absent, in order.
PROPERTY_ENV = {
    "s3.endpoint": ("ICEFLOE_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    "s3.access-key-id": ("AWS_ACCESS_KEY_ID",),
    "s3.secret-access-key": ("AWS_SECRET_ACCESS_KEY",),
    "s3.region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
    "s3.connect-timeout": ("ICEFLOE_S3_CONNECT_TIMEOUT",),
    "s3.request-timeout": ("ICEFLOE_S3_REQUEST_TIMEOUT",),
    "s3.deadline": ("ICEFLOE_S3_DEADLINE",),
}
REGION_DEFAULT = "us-east-1"
CONNECT_TIMEOUT_S_DEFAULT = 5.0
READ_TIMEOUT_S_DEFAULT = 10.0
DEADLINE_S_DEFAULT = 20.0
# Timeouts from properties (pyiceberg's S3 FileIO names, in seconds; the deadline is ours).
TIMEOUT_PROPERTIES = {"s3.connect-timeout": "connect_timeout_s", "s3.request-timeout": "read_timeout_s",
                      "s3.deadline": "deadline_s"}


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




def build_client(endpoint_url: str | None, access_key: str, secret_key: str, region: str, *,
                 client_name: str | None = None, connect_timeout_s: float = CONNECT_TIMEOUT_S_DEFAULT,
                 read_timeout_s: float = READ_TIMEOUT_S_DEFAULT) -> Any:
    """The boto3 client with SDK retries off and path-style addressing. `client_name`, if
    given, is sent as the `x-icefloe-client` header (signed)."""
    require(connect_timeout_s > 0 and read_timeout_s > 0,
            f"timeouts must be positive, not connect {connect_timeout_s}, read {read_timeout_s}")
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
    return client


def settings_from_properties(properties: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict:
    """Keyword arguments for `S3Store.from_config` from pyiceberg's S3 FileIO properties:
    `s3.endpoint`, `s3.access-key-id`, `s3.secret-access-key`, `s3.region`, each falling back
    to the environment (`ICEFLOE_S3_ENDPOINT`, `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`,
    `AWS_ACCESS_KEY_ID`, ...; no endpoint means AWS), and the timeouts `s3.connect-timeout`,
    `s3.request-timeout` and `s3.deadline`, in seconds (`ICEFLOE_S3_CONNECT_TIMEOUT`,
    `ICEFLOE_S3_REQUEST_TIMEOUT`, `ICEFLOE_S3_DEADLINE`). The keys are required: boto3's wider
    credential chain (profiles, the instance-metadata address) is never probed, so a missing
    key is a ValueError here rather than a network request to an address no test owns."""
    environ = os.environ if environ is None else environ

    def setting(name: str) -> str | None:
        if properties.get(name):
            return properties[name]
        return next((environ[v] for v in PROPERTY_ENV[name] if environ.get(v)), None)

    access_key, secret_key = setting("s3.access-key-id"), setting("s3.secret-access-key")
    if not access_key or not secret_key:
        raise ValueError("no S3 credentials: set s3.access-key-id and s3.secret-access-key, "
                         "or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    out: dict = dict(endpoint_url=setting("s3.endpoint"), access_key=access_key, secret_key=secret_key,
                     region=setting("s3.region") or REGION_DEFAULT)
    for name, option in TIMEOUT_PROPERTIES.items():
        value = setting(name)
        if value:
            try:
                out[option] = float(value)
            except ValueError:
                raise InvalidArgument(f"{name} must be a number of seconds, not {value!r}") from None
            require(out[option] > 0, f"{name} must be positive, not {value!r}")
    return out
