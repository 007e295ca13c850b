"""icefloe.conformance.campaign: multi-process fault campaigns (docs/campaigns.md). Writer
processes (`writer`) commit to one table under a fault plan (`faults`) within a budget
(`budget`); afterwards the evidence is gathered from storage (`evidence`) and the history
judged (`judge`); `run` conducts one campaign, `deep` the long one (`make campaign-deep`).

May import: icefloe.model (the history checker), icefloe.impl, conformance.testing.
Never imports: suite, coverage, report, interop, demo, engines.
"""
