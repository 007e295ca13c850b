"""Maintenance as Spark jobs (spec/PROTOCOL.md 7.3 "rewrite files"; docs/spark.md
"Maintenance").

`compact(spark, ref)`: plan at the current snapshot of a branch (distributed planning for
tables with many manifests), rewrite each partition's small files into one file per
`target-file-size-bytes` in a Spark task, then commit one `replace` snapshot on the
driver whose starting snapshot is the one planned at: the rewritten files must still be
live and no delete may have been added against them since (apache/iceberg #10312). The
new files live under the job prefix and get the job cleanup rules (job.py).

On v3 rows keep their lineage (spec "Row Lineage"); a table column named `_row_id` or
`_last_updated_sequence_number` is then SchemaMismatch naming it before the rewrite job,
nothing committed (producer.check_lineage_names, as Table.rewrite_files): the executors
would get a schema with two fields of one name. Below v3 such a column is data.
"""
from __future__ import annotations

import uuid

import pyarrow as pa

from icefloe.impl.format import name_mapping as NM
from icefloe.impl.format import types as T
from icefloe.impl.format.metadata import MAIN_BRANCH
from icefloe.impl.format.transforms import partition_spec_from_json, partition_spec_to_json
from icefloe.impl.format.parquet import write_data_file
from icefloe.impl.outcomes import Committed
from icefloe.impl.table import producer as P
from icefloe.impl.table import scan as S
from icefloe.impl.table.deletes import DeleteReader
from icefloe.impl.table.env import partition_path_of
from icefloe.impl.table.files import TreeReader
from icefloe.impl.spark import planning as PL
from icefloe.impl.spark.job import JobFiles, JobResult, abort_job, commit_job, job_prefix
from icefloe.impl.spark.job_tasks import tagged, wait_for_tasks
from icefloe.impl.spark.options import TableRef, io_of, open_table, table_ref
from icefloe.impl.spark.producers import RewriteDataFiles
from icefloe.impl.spark.writer import TARGET_FILE_SIZE_BYTES_DEFAULT

FILES_MIN_DEFAULT = 2


def _rewrite_group(ref: TableRef, table_location: str, job_id: str, schema_json: dict, spec_json: dict,
                   index: int, tasks: list, target_bytes: int, name_mapping: dict | None = None):
    """One Spark task: the live rows of `tasks` (one partition) as new files; `name_mapping`
    (the table's) resolves files written without field ids, as the icefloe compaction does."""
    io = io_of(ref)
    schema = T.schema_from_json(schema_json)
    deletes = DeleteReader(io)
    rows = pa.concat_tables([S.read_task(io, t, schema, deletes, name_mapping) for t in tasks])
    partition = tasks[0].data_file.partition
    middle = partition_path_of(partition_spec_from_json(spec_json), schema, partition)  # `field=value`
    prefix = job_prefix(table_location, job_id) + (f"{middle}/" if middle else "")
    job = JobFiles(io, table_location, job_id)
    out = []
    per_file = max(1, int(rows.num_rows * target_bytes / max(1, rows.nbytes)))
    for n, start in enumerate(range(0, max(rows.num_rows, 1), per_file)):
        part = rows.slice(start, per_file)
        if part.num_rows == 0:
            continue
        location = f"{prefix}{index:05d}-{n:04d}-{uuid.uuid4().hex}.parquet"
        data, data_file = write_data_file(part, schema, location, partition)
        io.put_if_absent(location, data)
        out.append(data_file)
        job.fence([f.file_path for f in out])  # the job ended without this attempt: remove its files
    return out


def _nothing_to_do(table, job_id: str, snapshot_id: int | None = None) -> JobResult:
    """No commit at all (5.4: an operation with nothing to do is a no-op)."""
    return JobResult(Committed(None, 0, table.metadata_location), job_id, "replace",
                     starting_snapshot_id=snapshot_id)


def compact(spark, path_or_ref, options: dict | None = None, *, branch: str = MAIN_BRANCH,
            files_min: int = FILES_MIN_DEFAULT, planning: str = "auto",
            target_file_size_bytes: int = TARGET_FILE_SIZE_BYTES_DEFAULT,
            commit_log: str | None = None, before_swap=None) -> JobResult:
    """Compact a table with a Spark job; returns the JobResult (outcome, files, cleanup).
    `before_swap` (injected scheduling) is called once, when the commit is about to swap."""
    ref = path_or_ref if isinstance(path_or_ref, TableRef) else table_ref(options or {}, path_or_ref)
    table = open_table(ref)
    metadata = table.metadata
    start = metadata.ref_head(branch) if branch in metadata.refs else None
    job_id = uuid.uuid4().hex
    job = JobFiles(table.io, table.location, job_id)
    if start is None:
        return _nothing_to_do(table, job_id)
    tree = TreeReader(table.io)
    manifests = tree.manifests(start)
    if planning == "distributed" or (planning == "auto" and len(manifests) >= PL.DISTRIBUTED_MANIFESTS_MIN_DEFAULT):
        tasks = PL.plan_files_distributed(spark, ref, metadata, start)
    else:
        tasks = S.plan_files(tree, metadata, start)
    groups: dict = {}
    for t in tasks:
        groups.setdefault((t.spec_id, t.data_file.partition), []).append(t)
    chosen = [ts for (spec_id, _), ts in sorted(groups.items(), key=lambda kv: repr(kv[0]))
              if spec_id == metadata.default_spec_id
              and (len(ts) >= files_min or any(t.has_deletes for t in ts))]  # a DV counts too
    if not chosen:
        return _nothing_to_do(table, job_id, start.snapshot_id)
    removed = [t.data_file for ts in chosen for t in ts]
    added = []
    if chosen:
        # the table's schema, as Table.rewrite_files writes (rows are read by field id): a
        # column renamed since the branch's last snapshot is written under its new name
        schema = metadata.schema()
        if metadata.format_version >= 3:  # rows keep _row_id and their sequence number (spec "Row Lineage")
            P.check_lineage_names(schema)  # not beside a column of the same name: refused before the job
            schema = S.lineage_schema(schema)
        schema_json = T.schema_to_json(schema)
        spec_json = partition_spec_to_json(metadata.spec())  # every chosen group has the default spec
        location = table.location
        mapping = NM.of(metadata.properties)

        def run(item):
            index, ts = item
            return _rewrite_group(ref, location, job_id, schema_json, spec_json, index, ts, target_file_size_bytes,
                                  mapping)

        with tagged(spark) as tag:
            try:
                added = spark.sparkContext.parallelize(list(enumerate(chosen)), len(chosen)).flatMap(run).collect()
            except BaseException:
                wait_for_tasks(spark, tag)  # then nothing is committed and every new file goes
                abort_job(job)
                raise
    operation = RewriteDataFiles(removed, added, job_id, start.snapshot_id, branch)
    return commit_job(table, job, operation, "replace", added, [f.file_path for f in removed],
                      starting_snapshot_id=start.snapshot_id, commit_log=commit_log, before_swap=before_swap)
