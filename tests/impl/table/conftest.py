"""Fixtures for the table tests: both real stacks, parametrized, and a memory stack
(helpers live in table_helpers.py, which test modules import by that unique name)."""
from __future__ import annotations

import pytest

from table_helpers import local_stack, memory_stack


@pytest.fixture(params=["local", "memory"])
def stack(request, tmp_path):
    s = local_stack(tmp_path) if request.param == "local" else memory_stack()
    yield s
    if s.kind == "local":
        s.catalog.close()


@pytest.fixture
def mem():
    return memory_stack()
