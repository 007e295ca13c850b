"""Fixtures for the Java suite (Iceberg-Java 1.10.2 on Spark 3.5.9 in `.venv-java`): ONE
worker process per xdist worker (Spark starts in 10-17 s), every test in xdist group
"java" so `--dist loadgroup` runs them on one worker and the worker starts once.

`make test` builds `.venv-java` (`make java-venv`) before it runs; without it these tests
fail with the reason (a missing engine is not a skip).
"""
from __future__ import annotations

import pytest

from icefloe.conformance.testing import java_env

HADOOP_CATALOG = "h"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/java/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.xdist_group("java"))
    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import NodeId   # pytest 9.2 vs xdist 3.8 (see tests/spark/conftest.py)
    for item in items:
        nodeid = item.nodeid
        if nodeid.startswith("tests/java/") and "@" not in nodeid and hasattr(item, "_id"):
            item._id = NodeId.parse(f"{nodeid}@java")


@pytest.fixture(scope="session")
def java_warehouse(tmp_path_factory):
    return tmp_path_factory.mktemp("java-warehouse")


@pytest.fixture(scope="session")
def java_worker(java_warehouse):
    """The process's one worker (the Java engine's too), with a hadoop catalog `h` on a
    local warehouse; tests add catalogs (e.g. REST ones) with java_env.add_catalog."""
    worker = java_env.shared_worker()
    java_env.add_catalog(worker, HADOOP_CATALOG, "hadoop", warehouse=f"file://{java_warehouse}")
    yield worker
