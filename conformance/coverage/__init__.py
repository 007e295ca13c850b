"""icefloe.conformance.coverage: coverage by construction. Each family (`families`, and the
row-level and ref families in `rows`) is a small model instance whose transition classes
are searched exhaustively (`families.explore`, the result kept on disk by `cache`); the
directed programs (`directed`) are the shortest that reach every class, replayed on the
engine through the suite's lockstep. `transport` covers the transport-level faults; `pairs`
every pair of operation kinds racing; `races` the same races on every store the suite
runs; `reflife` what the model has no transition for (ref creation racing, retention per
ref), driven through icefloe's own API.

May import: icefloe.model, icefloe.impl (reflife only: icefloe's own table API),
conformance.adapter, conformance.violation, conformance.suite (the view of the model,
profiles, replay), conformance.rest (the REST families and the wire checks),
conformance.testing (races: the PostgreSQL server).
Never imports: report, campaign, interop, demo, engines.
"""
