"""Fixtures for the TLA+ suite: one TLC run per configuration, shared by every test
(and every xdist worker) that needs it; the `deep` marker for the long configuration.

Deep tests (the large configuration) are deselected unless `-m` names them:
    .venv/bin/python -m pytest tests/tla -m deep
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))   # tlc.py, abstraction.py

import tlc  # noqa: E402

EXPECTED = tlc.load_expected()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "deep: a long TLC run (the large configuration); deselected unless -m selects it")


def pytest_collection_modifyitems(config, items):
    if config.getoption("markexpr"):
        return      # an explicit -m decides
    here = Path(__file__).resolve().parent
    keep, drop = [], []
    for item in items:
        in_suite = here in Path(str(item.fspath)).resolve().parents
        (drop if in_suite and item.get_closest_marker("deep") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _inputs_digest(cfg: str, module: str) -> str:
    """Everything a TLC result depends on: the tla/ sources and the configuration."""
    h = hashlib.sha1()
    for path in sorted(tlc.TLA_DIR.glob("*.tla")) + [tlc.TLA_DIR / cfg]:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    h.update(module.encode())
    return h.hexdigest()[:16]


@pytest.fixture(scope="session")
def tlc_result(tmp_path_factory):
    """run(cfg) -> TLCResult, with the state dump; computed once per session across
    xdist workers (a file lock in their shared temporary directory), because the small
    configuration's run is needed by both test_tlc_configs and test_agreement."""
    # Under xdist each worker's basetemp is a child of the session's; without xdist the
    # parent is shared by every session, so use the basetemp itself (no stale results).
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "tlc-runs"
    shared.mkdir(parents=True, exist_ok=True)

    def run(cfg: str):
        module = EXPECTED[cfg]["module"]
        stem = f"{Path(cfg).stem}-{_inputs_digest(cfg, module)}"
        result_file = shared / f"{stem}.pickle"
        with open(shared / f"{stem}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if result_file.exists():
                return pickle.loads(result_file.read_bytes())
            res = tlc.run_tlc(cfg, module, dump=shared / stem)
            result_file.write_bytes(pickle.dumps(res))
            return res

    return run
