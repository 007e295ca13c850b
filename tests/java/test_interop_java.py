"""Interop under concurrency with the reference engine (issue 13 item 5): Iceberg-Java
1.10.2 writers (threads on the shared Spark worker) racing icefloe and pyiceberg writers
(processes) on one table through `icefloe serve`, commit faults of every kind on every
writer, judged afterwards by the history checker."""
from __future__ import annotations

from icefloe.conformance.interop.run import run_interop
from icefloe.conformance.interop.writers import ICEFLOE, JAVA, PYICEBERG


def test_java_pyiceberg_and_icefloe_race_on_one_table_under_commit_faults(java_worker):
    """Goal: three engines on one table lose, duplicate and dirty nothing under server commit
    faults. Method: 1 icefloe + 1 pyiceberg + 2 Java writers x 5 operations (append,
    overwrite, rewrite, rollback), 40% of commit requests faulted; judge the table."""
    result = run_interop(1, 1, 2, 5, seed=21, rate=0.4)
    assert result.valid is True, result.summary()
    assert result.tally() == {"lost": 0, "duplicated": 0, "dangling": 0, "dirty": 0, "other": 0}, result.summary()
    java = result.per_engine[JAVA]
    assert java["landed"] > 0 and sum(java["outcomes"].values()) == 10, result.summary()
    assert set(result.per_engine) == {ICEFLOE, PYICEBERG, JAVA}
    assert sum(v for f in result.per_engine.values() for k, v in f["faults"].items() if " " not in k) > 0
