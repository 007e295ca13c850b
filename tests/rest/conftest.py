"""Fixtures of the `rest` suite: `icefloe serve` on 127.0.0.1 (conformance.testing.rest_server)
over a SQLite catalog in the test's own directory."""
from __future__ import annotations

import pytest

from icefloe.conformance.testing.rest_server import RestServer


@pytest.fixture
def catalog_uri(tmp_path) -> str:
    return f"sqlite:///{tmp_path}/catalog.db"


@pytest.fixture
def warehouse(tmp_path) -> str:
    return str(tmp_path / "warehouse")


@pytest.fixture
def server(catalog_uri, warehouse):
    with RestServer(catalog_uri, warehouse) as s:
        yield s


@pytest.fixture
def rest_catalog(server):
    from pyiceberg.catalog.rest import RestCatalog
    return RestCatalog("rest", uri=server.url)
