"""pyiceberg 0.12 through its REST catalog client (`RestCatalog`), as a black-box engine:
the default pyiceberg path of `icefloe conform` now that commit faults live at the REST
commit endpoint (conformance.testing.rest_faults); the SQL path stays available as
`--engine pyiceberg-sql` (engines.pyiceberg_engine).

Everything but the catalog is engines.pyiceberg_engine's: the same operations (append,
overwrite and delete by filter, rollback), reads, history and S3 FileIO. Here each writer
has its own `RestCatalog` on the harness's REST URI (`TableContext.catalog_uri`,
http://127.0.0.1:PORT), whose requests carry the writer's number in the
`X-Icefloe-Writer` header (pyiceberg's `header.*` catalog properties), so a fault or gate
at the server's commit endpoint takes one writer. Data, manifests and manifest lists go
to the warehouse through pyiceberg's FileIO (S3 at the harness's endpoint when it gives
one); the metadata file is the server's to write.

Outcomes, as pyiceberg's REST client reports them: 409 -> CommitFailedException (pyiceberg
refreshes and retries, commit.retry.*), 500/502/504 -> CommitStateUnknownException, and a
503 -> ServiceUnavailableError, which the adapter reports as Unknown too (pyiceberg does not
map it, and a 503 does not say the commit was not applied); a dropped connection surfaces
as the HTTP library's own error (requests' ChunkedEncodingError or ConnectionError),
untyped, also reported Unknown (docs/verdicts.md).
"""
from __future__ import annotations

from dataclasses import replace

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import pyiceberg_engine as P

WRITER_HEADER = "X-Icefloe-Writer"
# pyiceberg's own capabilities, on the REST store: its swap is a REST commit, held and faulted
# at icefloe serve's commit endpoint (conformance.rest.driver), its files in the server's
# local warehouse.
CAPABILITIES = replace(P.CAPABILITIES, stores=frozenset({"rest"}), transport=frozenset({A.TRANSPORT_REST}))


def is_rest_uri(uri: str | None) -> bool:
    return bool(uri) and uri.startswith(("http://", "https://"))


def _transport_errors() -> tuple:
    from requests.exceptions import ChunkedEncodingError, ConnectionError, ReadTimeout
    return (ChunkedEncodingError, ConnectionError, ReadTimeout)


class PyicebergRestTable(P.PyicebergTable):
    TRANSPORT_ERRORS = _transport_errors()
    @staticmethod
    def check_context(ctx: A.TableContext) -> None:
        if not is_rest_uri(ctx.catalog_uri):
            raise P.UnsupportedOperation(f"the pyiceberg REST adapter needs an http:// REST catalog URI, "
                                         f"not {ctx.catalog_uri!r}")

    def new_catalog(self, writer: int):
        from pyiceberg.catalog.rest import RestCatalog
        return P.counting(RestCatalog)(P.CATALOG_NAME, uri=self.ctx.catalog_uri,
                                       **{f"header.{WRITER_HEADER}": str(writer)}, **self.io_properties(writer))

    def close(self) -> None:
        for catalog in self._catalogs.values():
            session = getattr(catalog, "_session", None)
            if session is not None:
                session.close()
        self._catalogs.clear()


class PyicebergRestEngine:
    name = "pyiceberg"
    capabilities = CAPABILITIES

    def create_table(self, ctx: A.TableContext) -> PyicebergRestTable:
        return PyicebergRestTable(ctx)


def engine() -> PyicebergRestEngine:
    """`icefloe conform --engine pyiceberg`: pyiceberg 0.12 through icefloe serve (the 'peers'
    and 'rest' extras)."""
    return PyicebergRestEngine()
