"""`icefloe serve` on 127.0.0.1 for tests, campaigns and benchmarks: the real Starlette
application under a real uvicorn server, in a thread of the calling process, on a free
port (test infrastructure: impl never imports it).

`RestServer(catalog_uri, warehouse, wrap=...)` builds the service exactly as `icefloe
serve` does (impl.serve.cli.make_service); `wrap(app)` installs ASGI middleware around the
application (conformance/testing/rest_faults.py). Use as a context manager; `url` is the
base URI a REST client takes.
"""
from __future__ import annotations

import socket
import threading
import time

START_WAIT_S = 30.0
STOP_WAIT_S = 10.0
POLL_S = 0.02


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AsgiServer:
    """Any ASGI application under uvicorn on 127.0.0.1, in a thread (the fault proxy of
    `icefloe conform --rest-uri` is one)."""

    def __init__(self, asgi):
        self.asgi = asgi
        self.service = None
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = None
        self._thread = None

    def start(self) -> "RestServer":
        import uvicorn
        config = uvicorn.Config(self.asgi, host="127.0.0.1", port=self.port, log_level="error",
                                lifespan="off", timeout_keep_alive=30)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name=f"icefloe-serve-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_WAIT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"icefloe serve did not start on {self.url}")
            time.sleep(POLL_S)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._thread.join(STOP_WAIT_S)
            self._server = None
        catalog = getattr(self.service, "catalog", None)
        if hasattr(catalog, "close"):
            catalog.close()

    def __enter__(self) -> "RestServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class RestServer(AsgiServer):
    def __init__(self, catalog_uri: str, warehouse: str, *, token: str | None = None, wrap=None,
                 idempotency_lifetime_s: int = 1800, client_config: dict | None = None, service=None,
                 **app_options):
        from icefloe.impl.serve.app import build_app
        from icefloe.impl.serve.cli import make_service
        service = service or make_service(catalog_uri, warehouse)
        self.app = build_app(service, token=token, idempotency_lifetime_s=idempotency_lifetime_s,
                             client_config=client_config, **app_options)
        super().__init__(wrap(self.app) if wrap is not None else self.app)
        self.service = service


def faulty_rest_server(catalog_uri: str, warehouse: str, tokens: dict | None = None, **options) -> RestServer:
    """`icefloe serve` with the commit fault layer installed (`server.faults`, a RestFaults;
    writers told apart by X-Icefloe-Writer or by `tokens`: token -> writer): what a harness
    driving black-box engines through REST starts."""
    from icefloe.conformance.testing.rest_faults import RestFaults
    box = {}

    def wrap(app):
        box["faults"] = RestFaults(app, tokens)
        return box["faults"]
    server = RestServer(catalog_uri, warehouse, wrap=wrap, **options)
    server.faults = box["faults"]
    return server
