"""icefloe.conformance.demo: `icefloe demo-pipeline`, two Spark jobs appending while a third
compacts (`pipeline`), and the checker's verdict on what they did (`judge`).

May import: icefloe.model (the history checker), icefloe.impl (tables, the Spark source).
Never imports: suite, coverage, report, campaign, interop, engines, testing.
"""
