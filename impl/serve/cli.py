"""`icefloe serve`: the Iceberg REST catalog server over an icefloe catalog.

    icefloe [--catalog URI] [--warehouse DIR|s3://...] serve [--host 127.0.0.1] [--port 8181]
            [--token T] [--idempotency-lifetime-s 1800] [--client-config KEY=VALUE ...]
            [--allowed-location ROOT ...] [--max-request-bytes N]

`--catalog`/`--warehouse` may also follow `serve`. The catalog is any icefloe catalog
(sqlite:///F by default, postgresql://..., s3://bucket/prefix); new tables go under the
warehouse. `--client-config` pairs are sent to clients as /v1/config defaults (e.g. the
S3 endpoint their FileIO should use). impl/cli.py registers this command with
`add_parser`; starlette and uvicorn are imported only when it runs (the `rest` extra).
"""
from __future__ import annotations

import argparse
import sys

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8181
EXIT_USAGE = 2


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="serve the catalog as an Iceberg REST catalog (needs the rest extra)")
    p.add_argument("--catalog", default=argparse.SUPPRESS, help="as the global --catalog")
    p.add_argument("--warehouse", default=argparse.SUPPRESS, help="as the global --warehouse")
    p.add_argument("--host", default=DEFAULT_HOST)
    p.add_argument("--port", type=int, default=DEFAULT_PORT)
    p.add_argument("--token", help="require 'Authorization: Bearer TOKEN' on every request (401 without)")
    p.add_argument("--idempotency-lifetime-s", type=int, default=1800,
                   help="how long an Idempotency-Key is honoured (advertised in /v1/config)")
    p.add_argument("--client-config", action="append", default=[], metavar="KEY=VALUE",
                   help="a property sent to clients as a /v1/config default (repeatable)")
    p.add_argument("--allowed-location", action="append", default=[], metavar="ROOT",
                   help="a root besides the warehouse where clients may put tables (repeatable); "
                        "any other location is refused with 403")
    p.add_argument("--max-request-bytes", type=int, default=16 << 20,
                   help="largest request body accepted (413 beyond; default 16 MiB)")
    p.set_defaults(fn=run)


def make_service(catalog_uri: str, warehouse: str, allowed_locations: tuple[str, ...] = ()):
    """The catalog, its store and the CatalogService for a catalog URI and a warehouse."""
    from icefloe.impl.catalog.s3 import S3Catalog
    from icefloe.impl.catalog.sql import SqlCatalog
    from icefloe.impl.io.router import StoreRouter
    from icefloe.impl.serve.service import CatalogService
    from icefloe.impl.serve.store import store_for
    io = StoreRouter()
    if catalog_uri.startswith(("s3://", "s3a://")):
        catalog = S3Catalog(io.store_for(catalog_uri), catalog_uri)  # type: ignore[arg-type]
    else:
        catalog = SqlCatalog(catalog_uri)
    return CatalogService(catalog, store_for(catalog), io, warehouse, allowed_locations=tuple(allowed_locations))


def _pairs(items) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--client-config {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


def run(args) -> int:
    try:
        import uvicorn
        from icefloe.impl.serve.app import build_app
    except ImportError as e:
        print(f"icefloe serve: needs {e.name}: pip install 'icefloe[rest]'", file=sys.stderr)
        return EXIT_USAGE
    if args.idempotency_lifetime_s < 1:
        raise ValueError("--idempotency-lifetime-s must be at least 1")
    if args.max_request_bytes < 1:
        raise ValueError("--max-request-bytes must be at least 1")
    app = build_app(make_service(args.catalog, args.warehouse, args.allowed_location), token=args.token,
                    idempotency_lifetime_s=args.idempotency_lifetime_s, client_config=_pairs(args.client_config),
                    max_request_bytes=args.max_request_bytes)
    print(f"icefloe serve: {args.catalog} on http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
