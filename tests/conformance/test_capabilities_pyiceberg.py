"""The pyiceberg adapter's capabilities follow the installed pyiceberg's API (issue 32): a method
the version lacks is a capability it lacks, never a divergence the suite reports as a violation.
pyiceberg 0.10's `ManageSnapshots` has no `rollback_to_snapshot`; these tests take that method
off the installed (0.12) class, which is exactly 0.10's API for this operation."""
from __future__ import annotations

import importlib
from contextlib import contextmanager

import pytest

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import pyiceberg_engine as P


def _reloaded():
    """pyiceberg_engine and pyiceberg_rest as imported against the API as it is now."""
    from icefloe.conformance.engines import pyiceberg_rest
    return importlib.reload(P), importlib.reload(pyiceberg_rest)


@contextmanager
def _adapters_restored():
    """Put both adapter modules back as they were first imported once the test is done.

    A reload makes new classes under the old names; a test in the same process that had
    imported the first ones (`from ...pyiceberg_engine import UnsupportedOperation`) would
    no longer catch what the reloaded adapter raises. Reloading again does not undo that,
    so the modules' namespaces are saved and restored instead."""
    from icefloe.conformance.engines import pyiceberg_rest
    saved = [(m, dict(vars(m))) for m in (P, pyiceberg_rest)]
    try:
        yield
    finally:
        for module, namespace in saved:
            vars(module).clear()
            vars(module).update(namespace)
        assert P.UnsupportedOperation is saved[0][1]["UnsupportedOperation"]


@pytest.fixture
def without_rollback(monkeypatch):
    from pyiceberg.table.update.snapshot import ManageSnapshots
    with _adapters_restored():
        monkeypatch.delattr(ManageSnapshots, "rollback_to_snapshot")
        yield
        monkeypatch.undo()


def test_installed_pyiceberg_declares_rollback():
    """Goal: on pyiceberg 0.12 nothing is missing and rollback is declared. Method: probe the API."""
    assert P.missing_operations() == {}
    assert A.ROLLBACK in P.CAPABILITIES.operations
    assert P.CAPABILITIES.operations == P.CAPABILITIES_0_12.operations


def test_a_missing_method_is_a_missing_capability(without_rollback):
    """Goal: without ManageSnapshots.rollback_to_snapshot (pyiceberg 0.10) rollback is not declared,
    for the SQL and the REST adapter alike, and the reason names the method. Method: reload both
    adapters against the class without it."""
    engine_module, rest_module = _reloaded()
    assert set(engine_module.missing_operations()) == {A.ROLLBACK}
    assert "rollback_to_snapshot" in engine_module.missing_operations()[A.ROLLBACK]
    for capabilities in (engine_module.CAPABILITIES, rest_module.CAPABILITIES):
        assert A.ROLLBACK not in capabilities.operations
        assert {A.APPEND, A.OVERWRITE, A.DELETE} <= capabilities.operations
    assert rest_module.engine().capabilities.transport == frozenset({A.TRANSPORT_REST})


def test_an_undeclared_operation_is_refused_with_the_reason(without_rollback, tmp_path):
    """Goal: asked for rollback anyway, the adapter refuses with a typed error naming the missing
    method, and starts nothing. Method: begin a rollback on a SQLite-catalog table handle."""
    engine_module, _ = _reloaded()
    handle = object.__new__(engine_module.PyicebergTable)     # begin() needs no catalog to refuse
    with pytest.raises(engine_module.UnsupportedOperation, match="rollback_to_snapshot"):
        handle.begin(1, A.OpSpec(kind=A.ROLLBACK, op_id="1.1", target_snapshot_id=1))


@pytest.fixture
def without_commit_retry(monkeypatch):
    from pyiceberg.table import TableProperties
    with _adapters_restored():
        monkeypatch.delattr(TableProperties, "COMMIT_NUM_RETRIES")
        yield
        monkeypatch.undo()


def test_no_commit_retry_is_one_attempt_and_its_classes_are_out_of_reach(without_commit_retry):
    """Goal: a pyiceberg without commit.retry.* (0.10, 0.11) declares one attempt per commit, so
    the model's writer ends Conflict at the first rejection too and the classes that need a
    second attempt are out of reach with that reason. Method: reload without
    TableProperties.COMMIT_NUM_RETRIES; read the engine's bounds and the reason the suite gives."""
    from icefloe.conformance.coverage.directed import _why
    from icefloe.conformance.suite.profiles import PROFILES, bounds_for
    _, rest_module = _reloaded()
    engine = rest_module.engine()
    assert engine.capabilities.commit_attempts_max == 1
    assert bounds_for(engine, PROFILES["ci"]).attempts_max == 1
    assert "does not retry" in _why(("append", ("append",), "next attempt"), engine.capabilities)


def test_installed_pyiceberg_retries_as_the_suite_asks():
    """Goal: pyiceberg 0.12 retries (commit.retry.*), so its bounds keep the profile's attempts.
    Method: read its capabilities and bounds."""
    from icefloe.conformance.engines import pyiceberg_rest
    from icefloe.conformance.suite.profiles import PROFILES, bounds_for
    assert P.CAPABILITIES.commit_attempts_max is None
    assert bounds_for(pyiceberg_rest.engine(), PROFILES["ci"]).attempts_max == PROFILES["ci"].attempts_max


def test_commit_attempts_max_is_checked():
    """Goal: a capability of 0 attempts is refused with a typed error naming it. Method: build one."""
    with pytest.raises(A.EngineSpecError, match="commit_attempts_max"):
        A.Capabilities(operations=frozenset({A.APPEND}), mode=A.BLACK_BOX, commit_attempts_max=0)
