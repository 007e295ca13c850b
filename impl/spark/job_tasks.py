"""Waiting for a failed Spark job's tasks to end before its files are cleaned up
(docs/spark.md "Guarantees"; job.py's cleanup rules).

When a task fails for good, Spark fails the job and returns to the driver at once; it
kills the job's other running tasks asynchronously. Cleanup that lists the job prefix
right then can miss a file a task is still writing. The native write path tags its Spark
jobs and, after a failure, waits (bounded) until every task of those jobs has ended, so
the cleanup's listing comes after the last write. (Tasks of the Python data source check
the job's `closed` fence instead: their abort() runs in a worker without a SparkContext.)
"""
from __future__ import annotations

import contextlib
import time
import uuid

TASKS_END_WAIT_S = 120.0   # a bound: killed tasks end within spark.python.task.killTimeout (2 s) normally
POLL_S = 0.1
NO_JOB_GRACE_S = 5.0      # no tagged job known after this: none started


@contextlib.contextmanager
def tagged(spark, prefix: str = "icefloe-job"):
    """Tag the Spark jobs this thread starts inside the block; yields the tag."""
    sc = spark.sparkContext
    tag = f"{prefix}-{uuid.uuid4().hex}"
    sc.addJobTag(tag)
    try:
        yield tag
    finally:
        sc.removeJobTag(tag)


def _state(spark, tag: str) -> tuple[int, bool, int]:
    """(jobs tagged `tag` the status store knows, whether all have ended, their running tasks)."""
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    job_ids = list(sc._jsc.sc().statusTracker().getJobIdsForTag(tag))
    ended, active = True, 0
    for job_id in job_ids:
        info = tracker.getJobInfo(job_id)
        ended = ended and info is not None and info.status != "RUNNING"
        for stage_id in (info.stageIds if info is not None else ()):
            stage = tracker.getStageInfo(stage_id)
            active += stage.numActiveTasks if stage is not None else 0
    return len(job_ids), ended, active


def wait_for_tasks(spark, tag: str, timeout_s: float = TASKS_END_WAIT_S, clock=time.monotonic,
                   sleep=time.sleep) -> bool:
    """Wait until the jobs tagged `tag` have ended and none of their tasks runs; False if
    `timeout_s` passed first. The status store follows Spark's listener bus, in order: once
    it has a job's end, it has every task start before it, so no running task is missed."""
    started = clock()
    while True:  # bounded by timeout_s
        jobs, ended, active = _state(spark, tag)
        if jobs and ended and active == 0:
            return True
        if not jobs and clock() - started > NO_JOB_GRACE_S:
            return True  # the failure came before any job started
        if clock() - started > timeout_s:
            return False
        sleep(POLL_S)
