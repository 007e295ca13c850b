"""icefloe.conformance.rest: the suite's REST side. `driver` runs a program's commits
through an Iceberg REST catalog's commit endpoint with the server-side fault layer;
`coverage` is the REST family of transition classes; `conform` is
`icefloe conform --rest-uri`, which judges any REST catalog at the wire; `wire` is the
strict client that judges the run's own `icefloe serve` on every default run (the
rest-wire family).

May import: icefloe.model, icefloe.impl, conformance.adapter, conformance.violation,
conformance.suite (the view of the model, the black-box gate), conformance.testing, and
conformance.coverage.base (the family base its REST family extends).
Never imports: report, campaign, interop, demo.
"""
