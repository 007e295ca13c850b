"""icefloe.conformance.report: a run's verdict as data and its renderings (after Jepsen's
Elle): the result and the text report (`result`), Markdown (`md`), one self-contained HTML
page (`html`) with the version graph as SVG (`graph`), and the report directory (`write`).

May import: icefloe.model (the history checker's types), conformance.violation,
conformance.adapter, conformance.suite (the run's counts and replays).
Never imports: coverage, campaign, interop, demo, engines, testing.
"""
