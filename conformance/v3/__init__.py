"""icefloe.conformance.v3: the suite's format v3 phase (spec/PROTOCOL.md 19; issue 30 item 3).
The v3 model (icefloe.model.v3: deletion vectors under a declared policy, row lineage) is a
transition system of its own, smaller than the v2 model the main lockstep drives, so its
phase is a room of its own: the coverage families `dvs` and `lineage` (`families`: each a
few small instances of the v3 model searched exhaustively, every transition class with a
shortest program), the lockstep that replays a program step by step on an engine's v3
table and compares outcomes, phases, rows, live DVs per data file, first-row-ids,
next-row-id and _row_ids with the model's (`lockstep`), P11-P14 judged on the engine's own
history by the model's checks (`judge`), and the phase as a run sees it (`phase`).

May import: icefloe.model, conformance.adapter, conformance.violation, conformance.suite
(the run's counts, its backends, the runs' Failure).
Never imports: coverage, report, campaign, interop, demo, engines, rest.
"""
