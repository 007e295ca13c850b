"""The catalog contract of tests/impl/catalog/test_catalog_contract.py, run against SqlCatalog
on this suite's real PostgreSQL server.

The contract's test functions are reused, not copied: its module is loaded from its file
(test modules are not importable by name from another folder) and its `test_*` functions are
bound here, where this module's `catalog` fixture, not the contract's own, supplies the catalog.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from icefloe.impl.catalog.sql import SqlCatalog

CONTRACT_PATH = Path(__file__).resolve().parents[1] / "impl" / "catalog" / "test_catalog_contract.py"
LOCK_TIMEOUT_MS = 60_000  # racers queue on the row lock; the machine may be slow


def _load_contract():
    spec = importlib.util.spec_from_file_location("icefloe_catalog_contract", CONTRACT_PATH)
    assert spec is not None and spec.loader is not None, CONTRACT_PATH
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_contract = _load_contract()
CONTRACT_TESTS = sorted(name for name in vars(_contract) if name.startswith("test_"))
globals().update({name: getattr(_contract, name) for name in CONTRACT_TESTS})


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
