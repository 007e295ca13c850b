"""icefloe.conformance.coverage: coverage by construction. Each family (`families`, and the
row-level and ref families in `rows`) is a small model instance whose transition classes
are searched exhaustively (`families.explore`, the result kept on disk by `cache`); the
directed programs (`directed`) are the shortest that reach every class, replayed on the
engine through the suite's lockstep. `transport` covers the transport-level faults.

May import: icefloe.model, conformance.adapter, conformance.violation, conformance.suite
(the view of the model, profiles, replay), conformance.rest (the REST families).
Never imports: report, campaign, interop, demo, engines.
"""
