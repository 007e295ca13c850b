"""The catalog contract of tests/impl/catalog/test_catalog_contract.py, run against SqlCatalog
on this suite's real PostgreSQL server: its tests are bound here (foreign_tests.py), and this
module's `catalog` fixture, not the contract's own, supplies the catalog."""
from __future__ import annotations

import pytest

from icefloe.impl.catalog.sql import SqlCatalog
from foreign_tests import bind_tests, load_test_module

LOCK_TIMEOUT_MS = 60_000  # racers queue on the row lock; the machine may be slow

_contract = load_test_module("impl/catalog/test_catalog_contract.py", "icefloe_catalog_contract")
CONTRACT_TESTS = bind_tests(_contract, globals())


@pytest.fixture
def catalog(postgres, catalog_name):
    """A catalog name of its own per test: tests share the server's tables."""
    cat = SqlCatalog(postgres.dsn, name=catalog_name, busy_timeout_ms=LOCK_TIMEOUT_MS)
    yield cat
    cat.close()


def test_the_whole_contract_is_bound_here():
    """Goal: no contract test is silently left out on PostgreSQL. Method: every test_* of the
    contract module is a name of this module, bound to the contract's function."""
    assert len(CONTRACT_TESTS) >= 6, CONTRACT_TESTS
    assert all(globals()[name] is getattr(_contract, name) for name in CONTRACT_TESTS)
