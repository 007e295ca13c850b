"""Fixtures for the Spark suite: ONE local-mode Spark session per xdist worker (Spark
starts in 10-17 s), and every Spark test in xdist group "spark" so `--dist loadgroup`
runs them all on one worker and the session starts once.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

@pytest.fixture(scope="session")
def spark():
    from icefloe.impl.spark.session import local_session
    session = local_session("icefloe-tests", cores=2)
    yield session
    session.stop()

@pytest.fixture
def opts(tmp_path: Path) -> dict:
    """Options naming a SQLite catalog on a local warehouse of this test's own."""
    (tmp_path / "warehouse").mkdir()
    return {"catalog-uri": f"sqlite:///{tmp_path / 'catalog.db'}", "warehouse": str(tmp_path / "warehouse")}
