"""`icefloe serve`: the Iceberg REST catalog server over an icefloe catalog.

    icefloe [--catalog URI] [--warehouse DIR|s3://...] serve [--host 127.0.0.1] [--port 8181]
            [--principals FILE] [--signing-key-file FILE] [--token-lifetime-s 3600]
            [--token-file FILE] [--tls-cert PEM --tls-key PEM]
            [--idempotency-lifetime-s 1800] [--client-config KEY=VALUE ...]
            [--allowed-location ROOT ...] [--max-request-bytes N]
    icefloe serve hash-secret        (reads a secret on stdin, prints its scrypt hash)

Secrets never go on the command line (visible in `ps`): principals and their hashed secrets
come from a file, a static token from a file or ICEFLOE_SERVE_TOKEN (`--token` is kept for
old scripts), the token signing key from a file or ICEFLOE_SERVE_SIGNING_KEY (replicas
behind one load balancer share it, so each accepts the others' tokens).

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
SHUTDOWN_GRACE_S = 10


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="serve the catalog as an Iceberg REST catalog (needs the rest extra)")
    p.add_argument("--catalog", default=argparse.SUPPRESS, help="as the global --catalog")
    p.add_argument("--warehouse", default=argparse.SUPPRESS, help="as the global --warehouse")
    p.add_argument("--host", default=DEFAULT_HOST)
    p.add_argument("--port", type=int, default=DEFAULT_PORT)
    p.add_argument("action", nargs="?", choices=["hash-secret"],
                   help="hash-secret: read a client secret on stdin and print the hash a principals file holds")
    p.add_argument("--token", help="require 'Authorization: Bearer TOKEN' on every request (401 without); "
                                   "visible in ps: prefer --token-file or ICEFLOE_SERVE_TOKEN")
    p.add_argument("--token-file", help="a file holding the static bearer token")
    p.add_argument("--principals", metavar="FILE",
                   help="JSON file of OAuth2 clients: client-id, secret-hash, grants per namespace (docs/rest.md)")
    p.add_argument("--signing-key-file", metavar="FILE",
                   help="key that signs issued tokens (share it between replicas; default: random per process)")
    p.add_argument("--token-lifetime-s", type=int, default=3600, help="lifetime of an issued token")
    p.add_argument("--tls-cert", metavar="PEM", help="serve https with this certificate (chain)")
    p.add_argument("--tls-key", metavar="PEM", help="the certificate's private key")
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


def _secret_file(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            value = f.read().strip()
    except OSError as e:
        raise ValueError(f"{what} {path}: {e.strerror}") from None
    if not value:
        raise ValueError(f"{what} {path} is empty")
    return value


def make_authenticator(args, environ=None):
    """The Authenticator the arguments and the environment describe."""
    import os
    from icefloe.impl.serve.auth import Authenticator, load_principals
    environ = os.environ if environ is None else environ
    given = [x for x in (args.token, args.token_file, environ.get("ICEFLOE_SERVE_TOKEN")) if x]
    if len(given) > 1:
        raise ValueError("one static token: --token, --token-file or ICEFLOE_SERVE_TOKEN")
    token = args.token or (_secret_file(args.token_file, "--token-file") if args.token_file else None) \
        or environ.get("ICEFLOE_SERVE_TOKEN") or None
    key = _secret_file(args.signing_key_file, "--signing-key-file") if args.signing_key_file \
        else environ.get("ICEFLOE_SERVE_SIGNING_KEY")
    if args.token_lifetime_s < 1:
        raise ValueError("--token-lifetime-s must be at least 1")
    principals = load_principals(args.principals) if args.principals else None
    return Authenticator(static_token=token, principals=principals, token_lifetime_s=args.token_lifetime_s,
                         signing_key=key.encode() if key else None)


def hash_secret_command() -> int:
    import getpass
    from icefloe.impl.serve.auth import hash_secret
    secret = getpass.getpass("client secret: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\n")
    if not secret:
        print("icefloe serve hash-secret: an empty secret", file=sys.stderr)
        return EXIT_USAGE
    print(hash_secret(secret))
    return 0


def run(args) -> int:
    if args.action == "hash-secret":
        return hash_secret_command()
    if bool(args.tls_cert) != bool(args.tls_key):
        raise ValueError("--tls-cert and --tls-key go together")
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
    auth = make_authenticator(args)
    app = build_app(make_service(args.catalog, args.warehouse, args.allowed_location), auth=auth,
                    idempotency_lifetime_s=args.idempotency_lifetime_s, client_config=_pairs(args.client_config),
                    max_request_bytes=args.max_request_bytes)
    scheme = "https" if args.tls_cert else "http"
    print(f"icefloe serve: {args.catalog} on {scheme}://{args.host}:{args.port}", file=sys.stderr, flush=True)
    tls = {"ssl_certfile": args.tls_cert, "ssl_keyfile": args.tls_key} if args.tls_cert else {}
    # A stop (SIGTERM) lets requests in flight finish, but does not wait on idle keep-alive
    # or TLS connections past SHUTDOWN_GRACE_S.
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning",
                timeout_graceful_shutdown=SHUTDOWN_GRACE_S, **tls)
    return 0
