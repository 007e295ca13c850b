"""icefloe.conformance.interop: writers of different engines (icefloe, pyiceberg,
Iceberg-Java) on one table under commit faults (`make interop`), judged by the same history
checker as the campaigns: the writers (`writers`, `java`), the fault conductor (`faults`),
which engine made which version (`evidence`) and one run (`run`).

May import: icefloe.model, icefloe.impl, conformance.campaign (its judge, writers and
evidence), conformance.testing, conformance.engines (the Java worker).
Never imports: suite, coverage, report, demo.
"""
