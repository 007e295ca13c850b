"""The demo pipeline's judge finds what it claims to find: a clean history passes; rows added
behind the pipeline's back and a lost acknowledged commit fail (negative controls)."""
from __future__ import annotations

import json

import pyarrow as pa

from icefloe.conformance.demo.pipeline import TABLE, create_demo_table, judge, options, row_id
from icefloe.impl.spark.source import IcefloeDataSource

ROWS = 20


def _append(workdir, app: str, batch: int):
    """One append job as the data source runs it (write in a 'task', commit on the 'driver')."""
    opts = {**options(workdir), "path": TABLE}
    source = IcefloeDataSource(opts)
    writer = source.writer(source.schema(), False)
    ids = [row_id(app, batch, i) for i in range(ROWS)]
    rows = pa.table({"id": pa.array(ids, pa.int64()), "app": [app] * ROWS, "batch": pa.array([batch] * ROWS, pa.int32()),
                     "cat": [str(i % 4) for i in range(ROWS)]})
    writer.commit([writer.write(iter(rows.to_batches(max_chunksize=7)))])


def test_judge_passes_a_clean_history_and_fails_doctored_ones(tmp_path):
    """Goal: the judge is not vacuous. Method: three appends through the data source's writer
    pass; an append made outside the pipeline (extra rows) fails; a commit-log record of an
    acknowledged commit whose snapshot is not in the table fails as a lost commit."""
    workdir = tmp_path / "demo"
    table = create_demo_table(workdir)
    for app, batch in (("A", 0), ("B", 0), ("A", 1)):
        _append(workdir, app, batch)
    clean = judge(workdir, ROWS)
    assert clean.valid, clean.render()
    assert clean.counts["appends committed"] == 3 and clean.counts["rows"] == 3 * ROWS

    log = options(workdir)["commit-log"]
    records = [json.loads(line) for line in open(log)]
    lost = {**records[0], "job-id": "f" * 32, "snapshot-id": 42, "metadata-location": "file:///nowhere.json"}
    with open(log, "a") as f:
        f.write(json.dumps(lost) + "\n")
    verdict = judge(workdir, ROWS)
    assert not verdict.valid and "lost commit" in verdict.history_text

    with open(log, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))
    table.refresh().append(pa.table({"id": pa.array([1], pa.int64()), "app": ["X"], "batch": pa.array([9], pa.int32()),
                                     "cat": ["0"]}))
    verdict = judge(workdir, ROWS)
    assert not verdict.valid and any("extra [1]" in line for line in verdict.lines), verdict.render()
