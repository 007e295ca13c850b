"""Fixtures for the table tests: every real stack, parametrized (helpers live in
table_helpers.py, which test modules import by that unique name).

- `stack`: LocalStore + SQLite, MemoryStore + MemoryCatalog, and S3Store + S3Catalog on
  one atomic moto server per xdist worker (`conformance/testing/moto_server.py`).
- `mem`: the interleaving tests' stack, MemoryStore + MemoryCatalog and S3Store +
  S3Catalog. A test that drives catalog fault hooks (lost acknowledgements, delayed
  swaps delivered later) runs on the memory stack only, whose catalog is wrapped in the
  test infrastructure's FaultInjectingCatalog. On S3 the same faults are injected at the HTTP level by the FaultProxy
  (tests/s3/test_s3_catalog.py, test_s3_table.py).

moto's state is process-global: each test works under a key prefix named after its node
id, never by restarting moto.
"""
from __future__ import annotations

import inspect
import re
from typing import Iterator

import pytest

from icefloe.conformance.testing.moto_server import MotoS3Server
from table_helpers import local_stack, memory_stack, s3_stack

BUCKET = "icefloe-tables"
# FaultInjectingCatalog's hooks (wrapped around the memory stack's catalog only); a test naming one cannot run on another catalog.
MEMORY_HOOKS = re.compile(r"\.catalog\.(lose_acknowledgements|delay_swaps|deliver|pending|drop_pending)\b")
# Tests that need the memory stack for another reason, with the reason.
MEMORY_ONLY = {
    "test_overwrite_conflicts_with_a_concurrent_matching_append_only_under_serializable":
        "builds a fresh MemoryStore + MemoryCatalog per isolation level",
}


@pytest.fixture(scope="session")
def tables_moto_s3() -> Iterator[MotoS3Server]:
    with MotoS3Server(bucket=BUCKET, atomic=True) as server:
        yield server


def _prefix(request: pytest.FixtureRequest) -> str:
    return "t/" + re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.nodeid)


def _stack(request: pytest.FixtureRequest, kind: str, tmp_path):
    if kind == "local":
        return local_stack(tmp_path)
    if kind == "memory":
        return memory_stack()
    assert kind == "s3", kind
    server = request.getfixturevalue("tables_moto_s3")
    return s3_stack(server.endpoint_url, BUCKET, _prefix(request))


@pytest.fixture(params=["local", "memory", "s3"])
def stack(request, tmp_path):
    s = _stack(request, request.param, tmp_path)
    yield s
    if s.kind == "local":
        s.catalog.close()


def memory_only(function) -> bool:
    if function.__name__ in MEMORY_ONLY:
        return True
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return True
    return bool(MEMORY_HOOKS.search(source))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "mem" in metafunc.fixturenames:
        kinds = ["memory"] if memory_only(metafunc.function) else ["memory", "s3"]
        metafunc.parametrize("mem", kinds, indirect=True)


@pytest.fixture
def mem(request, tmp_path):
    return _stack(request, request.param, tmp_path)
