"""The fault proxy's HTTP side (icefloe.conformance.testing.proxy): a threading server that
keeps track of its open connections, and the handler that reads a request, asks the proxy
for its fault and gate, forwards it byte for byte and answers (or does not).
"""
from __future__ import annotations

import http.client
import socket
import struct
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from icefloe.conformance.testing.proxy_rules import (
    ERROR_CODES, Delay, Exchange, Fault, Gate, LoseResponse, Reject, Reset,
)
from icefloe.conformance.testing.s3_requests import S3Request, describe


HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-connection", "proxy-authorization",
    "proxy-authenticate", "te", "trailer", "trailers", "transfer-encoding", "upgrade",
    "expect",
})
REQUEST_BODY_BYTES_MAX = 1 << 30
CHUNKS_MAX = 1 << 20
TRAILERS_MAX = 64


def _error_body(status: int, request_id: str) -> bytes:
    code, message = ERROR_CODES[status]
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>{message}</Message>"
            f"<RequestId>{request_id}</RequestId></Error>").encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a connection left open by a client must not block stop()

    def __init__(self, *args: object, **kwargs: object):
        super().__init__(*args, **kwargs)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request, client_address):  # type: ignore[override]
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):  # type: ignore[override]
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End every kept-alive client connection, so no handler thread outlives stop()."""
        with self._open_lock:
            open_now = list(self._open)
        for sock in open_now:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # the client went away (often after a fault we injected)
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as SDK connection pools expect
    proxy: object  # the testing.proxy.FaultProxy that started this server (not imported: it imports us)

    def log_message(self, format: str, *args: object) -> None:
        pass  # the history is the log

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without TCP_NODELAY the body waits
        # for the client's delayed ACK (~40 ms per response on Linux loopback).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass  # the connection was reset on purpose

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            for _ in range(CHUNKS_MAX):
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    for _ in range(TRAILERS_MAX + 1):  # trailers, then the blank line
                        if self.rfile.readline() in (b"\r\n", b"\n", b""):
                            return b"".join(parts)
                    raise ValueError("too many trailers")
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            raise ValueError("too many chunks")
        length = int(self.headers.get("Content-Length") or 0)
        assert 0 <= length <= REQUEST_BODY_BYTES_MAX
        return self.rfile.read(length) if length else b""

    def _target(self) -> str:
        if self.path.startswith(("http://", "https://")):  # forward-proxy form
            parts = urlsplit(self.path)
            return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return self.path

    def _handle(self) -> None:
        proxy = self.proxy
        start_s = proxy.clock()
        body = self._read_body()
        target = self._target()
        path, _, query = target.partition("?")
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = describe(self.command, path, query, headers)
        index, gate, fault = proxy._plan(request)
        try:
            self._exchange(request, index, gate, fault, start_s, target, body)
        finally:
            proxy._leave()

    def _exchange(self, request: S3Request, index: int, gate: Gate | None, fault: Fault | None,
                  start_s: float, target: str, body: bytes) -> None:
        proxy = self.proxy
        labels: list[str] = []
        upstream_status: int | None = None

        # Recorded before the client is answered, so a client that has its answer can
        # rely on finding the exchange in the history.
        def record(returned: int | str) -> None:
            proxy._record(Exchange(
                index=index, start_s=start_s, end_s=proxy.clock(), client=request.client,
                method=request.method, operation=request.operation, bucket=request.bucket,
                key=request.key, if_match=request.if_match,
                if_none_match=request.if_none_match, upstream_status=upstream_status,
                returned=returned, fault="+".join(labels) or None))

        if gate is not None and gate.stage == "request":
            labels.append("gate")
            if not gate._hold(proxy._stopping):
                labels.append("gate-timeout")
                record("reset")
                return self._reset()
        if fault is not None:
            labels.append(fault.label())
        if isinstance(fault, Reject):
            record(fault.status)
            return self._reply(fault.status, HTTPStatus(fault.status).phrase,
                               [("Content-Type", "application/xml")],
                               _error_body(fault.status, f"icefloe-proxy-{index}"))
        if isinstance(fault, Reset):
            record("reset")
            return self._reset()
        if isinstance(fault, Delay):
            proxy._stopping.wait(fault.seconds)
        try:
            status, reason, response_headers, payload = self._forward(target, body)
        except (OSError, http.client.HTTPException):
            record(502)
            return self._reply(502, "Bad Gateway", [("Content-Type", "text/plain")],
                               b"upstream unreachable")
        upstream_status = status
        if gate is not None and gate.stage == "response":
            labels.append("gate")
            if not gate._hold(proxy._stopping):
                labels.append("gate-timeout")
                record("reset")
                return self._reset()
        if isinstance(fault, LoseResponse) and fault.statuses is not None \
                and upstream_status not in fault.statuses:
            labels.remove(fault.label())
            proxy._withdraw(request, fault)
            fault = None
        if isinstance(fault, LoseResponse):
            if fault.then == "reset":
                record("reset")
                return self._reset()
            record(500)
            return self._reply(500, "Internal Server Error", [("Content-Type", "application/xml")],
                               _error_body(500, f"icefloe-proxy-{index}"))
        record(status)
        return self._reply(status, reason, response_headers, payload)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _handle

    def _forward(self, target: str, body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        proxy = self.proxy
        conn = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port,
                                          timeout=proxy.upstream_timeout_s)
        try:
            conn.putrequest(self.command, target, skip_host=True, skip_accept_encoding=True)
            has_length = False
            for name, value in self.headers.items():
                lower = name.lower()
                if lower in HOP_BY_HOP:
                    continue
                has_length |= lower == "content-length"
                conn.putheader(name, value)
            if body and not has_length:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body if body else None)
            response = conn.getresponse()
            payload = response.read()
            return response.status, response.reason, response.getheaders(), payload
        finally:
            conn.close()

    def _reply(self, status: int, reason: str, headers: list[tuple[str, str]],
               payload: bytes) -> None:
        self.send_response_only(status, reason)
        bodiless = self.command == "HEAD" or status in (204, 304) or status < 200
        for name, value in headers:
            lower = name.lower()
            if lower in HOP_BY_HOP or (lower == "content-length" and not bodiless):
                continue
            self.send_header(name, value)
        if not bodiless:
            self.send_header("Content-Length", str(len(payload)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if not bodiless and payload:
            self.wfile.write(payload)

    def _reset(self) -> None:
        # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()
