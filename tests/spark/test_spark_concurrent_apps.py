"""Two Spark applications (separate processes) append to one table while a third compacts;
the history checker judges the result (the demo pipeline, at test size)."""
from __future__ import annotations

import pytest

from icefloe.conformance.demo.pipeline import run_pipeline

pytestmark = pytest.mark.xdist_group("spark")


def test_two_appending_applications_and_a_compaction(spark, tmp_path):
    """Goal: concurrent Spark jobs contend and keep the history linear and every row exactly
    once, at every snapshot. Method: run the demo pipeline (3 processes, barriers before the
    first swap) and judge it with icefloe.model.checks.history plus row counts and time
    travel through Spark's native read; count the retries and the compaction among appends."""
    verdict = run_pipeline(tmp_path / "demo", appends=2, rows=100, compactions=1, spark=spark, log=lambda _: None)
    assert verdict.valid, verdict.render()
    assert verdict.counts["appends committed"] == 4
    assert verdict.counts["rows"] == 400
    assert verdict.counts["compactions committed"] >= 1
    # The schedule (barriers before the first swap): batch 0's two appends race (one is
    # rejected), batch 1's compaction swaps first (both appends are rejected).
    assert verdict.counts["commit retries"] >= 3 and verdict.counts["compactions among appends"] == 1
    assert verdict.counts["snapshots time-travelled"] == verdict.counts["snapshots"]
    assert "VALID under serializable" in verdict.history_text
