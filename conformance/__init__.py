"""icefloe.conformance: the conformance suite an engine author runs against their own
Iceberg commit path (engine adapters, the lockstep state machine against icefloe.model,
reports). `icefloe.impl` imports neither this package nor the model."""
