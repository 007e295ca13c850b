"""pyiceberg's SqlCatalog and ours share one PostgreSQL database: the interoperability tests of
tests/impl/catalog/test_catalog_pyiceberg_interop.py (written for SQLite), bound here
(foreign_tests.py) with this module's `both` fixture. pyiceberg goes through SQLAlchemy and
psycopg2, ours through psycopg2 alone; nothing is mocked."""
from __future__ import annotations

import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from icefloe.impl.catalog.sql import SqlCatalog
from foreign_tests import bind_tests, load_test_module

_interop = load_test_module("impl/catalog/test_catalog_pyiceberg_interop.py", "icefloe_catalog_pyiceberg_interop")
INTEROP_TESTS = bind_tests(_interop, globals())


@pytest.fixture
def both(postgres, catalog_name, tmp_path):
    """(pyiceberg's catalog, ours, a directory for files), one catalog name per test."""
    uri = postgres.dsn.replace("postgresql://", "postgresql+psycopg2://", 1)
    theirs = PyIcebergSqlCatalog(catalog_name, uri=uri, warehouse=f"file://{tmp_path}/warehouse")
    ours = SqlCatalog(uri, name=catalog_name)
    yield theirs, ours, tmp_path
    ours.close()
    theirs.close()


def test_the_whole_interop_suite_is_bound_here():
    """Goal: no interop test is silently left out on PostgreSQL. Method: every test_* of the
    interop module is a name of this module, bound to its function."""
    assert len(INTEROP_TESTS) >= 4, INTEROP_TESTS
    assert all(globals()[name] is getattr(_interop, name) for name in INTEROP_TESTS)
