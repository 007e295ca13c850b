"""The pytest entry to the conformance suite (registered as the pytest11 entry point
`icefloe.conformance.plugin`, so it loads after `pip install icefloe`).

    pytest -p icefloe.conformance --engine mypackage.adapter:engine      # from any repository
    pytest tests/conformance --engine mypackage.adapter:engine          # in this repository

It does nothing unless asked: it adds the options and the `conformance_engine` fixture,
and only when `--engine` is given and no collected test already uses that fixture does it
add one test item, `conformance[<engine>]`, which runs the whole suite (the state machine
on every store the engine supports, then the non-vacuity checks) and fails with the
counterexample report.
"""
from __future__ import annotations

import os

import pytest

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import registry

FIXTURE = "conformance_engine"


def pytest_addoption(parser):
    group = parser.getgroup("icefloe-conformance", "icefloe conformance suite")
    group.addoption("--engine", default=None, metavar="MODULE:FACTORY",
                    help="run the icefloe conformance suite against this engine "
                         f"(shortcuts: {', '.join(sorted(registry.ENGINE_SHORTCUTS))})")
    default = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    group.addoption("--conform-profile", default=default if default in ("ci", "deep") else "ci",
                    choices=("ci", "deep"),
                    help="the conformance suite's profile (default: $HYPOTHESIS_PROFILE if ci/deep, else ci)")
    group.addoption("--conform-seed", type=int, default=0, help="the conformance suite's seed")


@pytest.fixture(scope="session")
def conformance_engine(request):
    """The engine under test: --engine, else icefloe's own."""
    spec = request.config.getoption("--engine") or registry.DEFAULT_ENGINE
    try:
        return registry.load_engine(spec)
    except A.EngineSpecError as e:
        raise pytest.UsageError(str(e)) from e


def run_suite(engine, spec: str, profile_name: str = "ci", seed: int = 0, profile=None):
    """Run the suite; returns the RunResult (its `passed`, `violated`, `vacuity`)."""
    from icefloe.conformance.suite import run as suite
    from icefloe.conformance.suite.profiles import PROFILES
    return suite.run_suite(engine, spec, profile or PROFILES[profile_name], seed)


class ConformanceFailed(Exception):
    pass


class ConformanceItem(pytest.Item):
    def __init__(self, *, spec: str, **kwargs):
        super().__init__(**kwargs)
        self.spec = spec

    def runtest(self):
        from icefloe.conformance.report import result as R
        config = self.config
        engine = registry.load_engine(self.spec)
        result = run_suite(engine, self.spec, config.getoption("--conform-profile"),
                           config.getoption("--conform-seed"))
        if not result.passed:
            raise ConformanceFailed(R.report_text(result))

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ConformanceFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"conformance[{self.spec}]"


def pytest_collection_modifyitems(session, config, items):
    spec = config.getoption("--engine", default=None)
    if not spec:
        return
    if any(FIXTURE in getattr(item, "fixturenames", ()) for item in items):
        return                        # the session already runs the suite through the fixture
    try:
        registry.load_engine(spec)
    except A.EngineSpecError as e:
        raise pytest.UsageError(str(e)) from e
    items.append(ConformanceItem.from_parent(session, name=f"conformance[{spec}]", spec=spec))
