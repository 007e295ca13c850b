"""The write side of the `icefloe` data source (docs/spark.md "Writing").

`write()` runs in the executors: Arrow batches -> split by the table's partition spec ->
one Parquet file per partition and per `target-file-size-bytes` of input, written with
pyarrow and described with footer statistics (impl/format/parquet.py), each under the
job prefix and named by partition id and attempt number, so a retried or duplicate
attempt never overwrites another's file. It returns the DataFiles as its commit message.

`commit()` and `abort()` run on the driver side (job.py has the cleanup rules).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from icefloe.impl.format import expressions as E
from icefloe.impl.format.expression_parser import parse as parse_filter
from icefloe.impl.format import types as T
from icefloe.impl.format.manifest import DataFile
from icefloe.impl.format.metadata import MAIN_BRANCH
from icefloe.impl.format.parquet import DataFileError, write_data_file
from icefloe.impl.format.partitioning import split_by_partition
from icefloe.impl.format.transforms import PartitionSpec, partition_spec_from_json, partition_spec_to_json
from icefloe.impl.outcomes import Committed, Conflict, require_committed
from icefloe.impl.table.env import partition_path_of
from icefloe.impl.table.producer import SERIALIZABLE, SNAPSHOT
from icefloe.impl.spark.job import JobFiles, abort_job, commit_job, job_prefix
from icefloe.impl.spark.options import SparkOptionError, TableRef, io_of, open_table
from icefloe.impl.spark.producers import AppendFiles, OverwriteFiles

TARGET_FILE_SIZE_BYTES_DEFAULT = 128 << 20


@dataclass
class IcefloeCommitMessage(WriterCommitMessage):
    files: list[DataFile] = field(default_factory=list)
    partition_id: int = 0
    attempt: int = 0


def _task_identity() -> tuple[int, int]:
    from pyspark import TaskContext
    ctx = TaskContext.get()
    if ctx is None:  # called outside a Spark task (a test driving write() by hand)
        return 0, 0
    return ctx.partitionId(), ctx.attemptNumber()


class IcefloeWriter(DataSourceArrowWriter):
    """Pickled from the driver to every executor and to the commit worker: holds only
    plain values (options, schema and spec as JSON, the job id)."""

    def __init__(self, ref: TableRef, table_location: str, schema: T.Schema, spec: PartitionSpec,
                 overwrite: bool, starting_snapshot_id: int | None):
        self.ref = ref
        self.table_location = table_location
        self.schema_json = T.schema_to_json(schema)
        self.spec_json = partition_spec_to_json(spec)
        self.overwrite = overwrite
        self.starting_snapshot_id = starting_snapshot_id
        self.job_id = uuid.uuid4().hex
        self.branch = ref.get("branch", MAIN_BRANCH)
        self.isolation = ref.get("isolation-level", SERIALIZABLE)
        if self.isolation not in (SERIALIZABLE, SNAPSHOT):
            raise SparkOptionError(f"isolation-level must be {SERIALIZABLE!r} or {SNAPSHOT!r}")
        self.overwrite_filter = ref.get("overwrite-filter", "true") if overwrite else None
        if self.overwrite_filter is not None:
            self._bound_filter(schema)  # a bad filter fails the job before any task runs
        try:
            self.target_file_size_bytes = int(ref.get("target-file-size-bytes", TARGET_FILE_SIZE_BYTES_DEFAULT))
        except ValueError:
            raise SparkOptionError("target-file-size-bytes must be an integer") from None
        if self.target_file_size_bytes <= 0:
            raise SparkOptionError("target-file-size-bytes must be positive")

    def _bound_filter(self, schema: T.Schema):
        text = self.overwrite_filter
        if text.strip().lower() == "true":
            return None
        return E.bind(parse_filter(text), schema)

    # -- executors --------------------------------------------------------------------

    def write(self, iterator: Iterator[pa.RecordBatch]) -> IcefloeCommitMessage:
        partition_id, attempt = _task_identity()
        schema = T.schema_from_json(self.schema_json)
        spec = partition_spec_from_json(self.spec_json)
        bound = self._bound_filter(schema) if self.overwrite_filter is not None else None
        mask = None if bound is None else E.to_arrow(bound)
        io = io_of(self.ref)
        prefix = job_prefix(self.table_location, self.job_id)
        job = JobFiles(io, self.table_location, self.job_id)
        files: list[DataFile] = []
        pending: list[pa.RecordBatch] = []
        pending_bytes = 0
        seq = 0

        def flush():
            nonlocal seq, pending, pending_bytes
            if not pending:
                return
            rows = pa.Table.from_batches(pending)
            pending, pending_bytes = [], 0
            if mask is not None:
                outside = rows.num_rows - rows.filter(mask).num_rows
                if outside:
                    raise DataFileError(f"{outside} rows do not match overwrite-filter {self.overwrite_filter!r}")
            for values, part in split_by_partition(rows, spec, schema):
                path = partition_path_of(spec, schema, values)  # Iceberg's `field=value` naming
                middle = f"{path}/" if path else ""
                location = f"{prefix}{middle}{partition_id:05d}-{attempt}-{seq:04d}-{uuid.uuid4().hex}.parquet"
                seq += 1
                data, data_file = write_data_file(part, schema, location, values)
                io.put_if_absent(location, data)
                files.append(data_file)
                job.fence([f.file_path for f in files])  # a zombie attempt removes its files

        for batch in iterator:
            if batch.num_rows == 0:
                continue
            pending.append(batch)
            pending_bytes += batch.nbytes
            if pending_bytes >= self.target_file_size_bytes:
                flush()
        flush()
        return IcefloeCommitMessage(files, partition_id, attempt)

    # -- driver side ------------------------------------------------------------------

    def _job(self, table_io) -> JobFiles:
        return JobFiles(table_io, self.table_location, self.job_id)

    def commit(self, messages) -> None:
        files = [f for m in messages if m is not None for f in m.files]
        table = open_table(self.ref)
        job = self._job(table.io)
        if self.overwrite:
            operation = OverwriteFiles(self.overwrite_filter, files, self.job_id, self.starting_snapshot_id,
                                       self.branch, self.isolation)
            kind = "overwrite"
        else:
            operation = AppendFiles(files, self.job_id, self.branch)
            kind = "append"
        result = commit_job(table, job, operation, kind, files, starting_snapshot_id=self.starting_snapshot_id,
                            commit_log=self.ref.get("commit-log"))
        if not files and isinstance(result.outcome, Committed):
            return
        require_committed(result.outcome)  # Conflict / Unknown: distinct typed errors

    def abort(self, messages) -> None:
        table = open_table(self.ref)
        abort_job(self._job(table.io))


__all__ = ["IcefloeWriter", "IcefloeCommitMessage", "Conflict"]
