"""A moto S3 server on 127.0.0.1 for tests, benchmarks and local runs.

moto's own `ThreadedMotoServer` builds `DomainDispatcherApplication(create_backend_app)`
and serves it with werkzeug's `make_server`; we build the same server ourselves so
that the application can be wrapped in `AtomicKeysMiddleware` (conditional writes
atomic per key, as on real S3) without touching moto's private methods.

moto keeps its state in process-global backends: every server started in one
process sees the same buckets.

Run `python -m icefloe.conformance.testing.moto_server [--port N] [--bucket NAME]` to print
the endpoint and serve until interrupted.
"""
from __future__ import annotations

import argparse
import re
import signal
import threading
from dataclasses import dataclass, field
from typing import Any

from botocore.config import Config

from icefloe.conformance.testing.atomic import AtomicKeysMiddleware
from icefloe.impl.s3.store import new_client

DEFAULT_BUCKET = "icefloe"
DEFAULT_REGION = "us-east-1"
DEFAULT_ACCESS_KEY = "icefloe-test"
DEFAULT_SECRET_KEY = "icefloe-secret"
# How often serve_forever looks for a shutdown request: stop() waits up to this long.
SERVE_POLL_S = 0.05
# S3's rule for bucket names (3-63 characters: lower-case letters, digits, '.', '-').
BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def client_config(**overrides: Any) -> Config:
    """Path-style addressing (no DNS on 127.0.0.1) and no SDK-level retries."""
    settings: dict[str, Any] = dict(
        s3={"addressing_style": "path"},
        retries={"mode": "standard", "total_max_attempts": 1},
        connect_timeout=5,
        read_timeout=30,
    )
    settings.update(overrides)
    return Config(**settings)


def make_client(endpoint_url: str, access_key: str = DEFAULT_ACCESS_KEY,
                secret_key: str = DEFAULT_SECRET_KEY, region: str = DEFAULT_REGION,
                **config: Any):
    return new_client(
        endpoint_url=endpoint_url, aws_access_key_id=access_key,
        aws_secret_access_key=secret_key, region_name=region,
        config=client_config(**config))


@dataclass
class MotoS3Server:
    """moto's S3 served on `host` (port 0 = any free port), optionally atomic.

    Needs no setup: `with MotoS3Server() as s3:` serves on 127.0.0.1 at a free port, with
    conditional writes atomic per key and the bucket `icefloe` created; `s3.endpoint_url`
    is the address for any S3 client."""

    host: str = "127.0.0.1"
    port: int = 0
    bucket: str | None = DEFAULT_BUCKET
    atomic: bool = True
    region: str = DEFAULT_REGION
    middleware: AtomicKeysMiddleware | None = field(default=None, init=False)
    _server: Any = field(default=None, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.bucket is not None and not BUCKET_NAME.match(self.bucket):
            raise ValueError(f"invalid S3 bucket name {self.bucket!r}: 3-63 characters, "
                             "lower-case letters, digits, '.' and '-'")

    def start(self) -> "MotoS3Server":
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication, MotoRequestHandler, create_backend_app)
        from werkzeug.serving import make_server

        assert self._server is None, "already started"
        app: Any = DomainDispatcherApplication(create_backend_app)
        if self.atomic:
            self.middleware = AtomicKeysMiddleware(app)
            app = self.middleware
        class QuietHandler(MotoRequestHandler):
            def log_request(self, *args: Any, **kwargs: Any) -> None:
                pass  # one line per request on stderr drowns test output

        self._server = make_server(self.host, self.port, app, threaded=True,
                                   request_handler=QuietHandler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(SERVE_POLL_S,),
                                        name=f"moto-s3-{self.port}", daemon=True)
        self._thread.start()
        if self.bucket:
            self.create_bucket(self.bucket)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            assert self._thread is not None
            self._thread.join()
            self._server = None

    def __enter__(self) -> "MotoS3Server":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def endpoint_url(self) -> str:
        assert self._server is not None, "start() first"
        return f"http://{self.host}:{self.port}"

    def client(self, access_key: str = DEFAULT_ACCESS_KEY, **config: Any):
        """A boto3 S3 client for this server (SDK retries off)."""
        return make_client(self.endpoint_url, access_key=access_key, region=self.region,
                           **config)

    def create_bucket(self, bucket: str) -> None:
        client = self.client()
        existing = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
        if bucket not in existing:
            client.create_bucket(Bucket=bucket)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--bucket", default=DEFAULT_BUCKET)
    parser.add_argument("--not-atomic", action="store_true",
                        help="serve moto as is (conditional writes not atomic)")
    args = parser.parse_args(argv)
    server = MotoS3Server(host=args.host, port=args.port, bucket=args.bucket or None,
                          atomic=not args.not_atomic).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(server.endpoint_url, flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        # A second interrupt (a process group signalled twice) must not cut the shutdown.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        server.stop()


if __name__ == "__main__":
    main()
