"""icefloe.conformance: the conformance suite an engine author runs against their own
Iceberg commit path (engine adapters, the lockstep state machine against icefloe.model,
reports). `icefloe.impl` imports neither this package nor the model."""

# `pytest -p icefloe.conformance` loads the suite's pytest plugin (also registered as the
# pytest11 entry point of the same name, so pytest registers it once either way).
pytest_plugins = ("icefloe.conformance.plugin",)
