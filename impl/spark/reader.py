"""The read side of the `icefloe` data source (docs/spark.md "Reading"; spec/PROTOCOL.md
10 "Readers": pointer -> metadata -> manifest list -> manifests -> data files).

Snapshot choice: `snapshot-id`, `as-of-timestamp` (ms), `tag` or `branch` (at most one),
else the current snapshot. Filters pushed by Spark prune manifests and files and are
applied to the rows. Each input partition is a group of files (local planning) or of
manifests (distributed planning, planning.py). Batches are cast to the declared schema.
A declared schema (`spark.read.schema(...)`) may name the row lineage columns `_row_id` and
`_last_updated_sequence_number` on a v3 table (each file read whole, so positions count
from its start, as Table.scan reads them); below v3 the reader is refused by impl/table's
one check (scan.check_lineage_columns: UnsupportedFormatVersion naming them).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema

from icefloe.impl.format import expressions as E
from icefloe.impl.format import name_mapping as NM
from icefloe.impl.format import types as T
from icefloe.impl.table import scan as S
from icefloe.impl.table.deletes import DeleteReader
from icefloe.impl.table.files import TreeReader
from icefloe.impl.spark import filters as F
from icefloe.impl.spark import planning as PL
from icefloe.impl.spark.options import SparkOptionError, TableRef, io_of, open_table

LOCAL, DISTRIBUTED, AUTO = "local", "distributed", "auto"
BATCH_ROWS_MAX = 1 << 16
READ_PARTITIONS_MIN_DEFAULT = 8


@dataclass
class FilesPartition(InputPartition):
    tasks: list = field(default_factory=list)

    def __init__(self, tasks):
        super().__init__(len(tasks))
        self.tasks = tasks


@dataclass
class ManifestsPartition(InputPartition):
    group: PL.ManifestGroup = None

    def __init__(self, group):
        super().__init__(len(group.manifests))
        self.group = group


def _int_option(ref: TableRef, key: str, default: int | None) -> int | None:
    text = ref.get(key)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise SparkOptionError(f"{key} must be an integer, got {text!r}") from None


def select_snapshot(ref: TableRef):
    """(io, metadata, snapshot) chosen by the time-travel options."""
    chosen = [k for k in ("snapshot-id", "as-of-timestamp", "tag", "branch") if ref.get(k) is not None]
    if len(chosen) > 1:
        raise SparkOptionError(f"choose one of snapshot-id, as-of-timestamp, tag, branch; got {chosen}")
    snapshot_id = _int_option(ref, "snapshot-id", None)
    as_of = _int_option(ref, "as-of-timestamp", None)
    name = ref.get("tag") or ref.get("branch")
    opened = open_table(ref)
    if isinstance(opened, tuple):
        io, metadata = opened
    else:
        io, metadata = opened.io, opened.metadata
    try:
        if snapshot_id is not None:
            snapshot = metadata.snapshot_by_id(snapshot_id)
            if snapshot is None:
                raise ValueError(f"snapshot {snapshot_id} is not retained")
        elif name is not None:
            ref_obj = metadata.refs.get(name)
            kind = "tag" if ref.get("tag") else "branch"
            if ref_obj is None or ref_obj.type != kind:
                raise ValueError(f"no {kind} {name!r}")
            snapshot = metadata.ref_head(name)
        elif as_of is not None:
            snapshot = metadata.snapshot_as_of(as_of)
            if snapshot is None:
                raise ValueError(f"no snapshot was current at {as_of}")
        else:
            snapshot = metadata.current_snapshot()
    except ValueError as e:
        raise SparkOptionError(str(e)) from None
    return io, metadata, snapshot


class IcefloeReader(DataSourceReader):
    def __init__(self, ref: TableRef, schema):
        self.ref = ref
        self.spark_schema = schema
        _, metadata, snapshot = select_snapshot(ref)
        self.snapshot_id = None if snapshot is None else snapshot.snapshot_id
        table_schema = S.snapshot_schema(metadata, snapshot)
        self.table_schema_json = T.schema_to_json(table_schema)
        # refused below v3 before any task runs, as Table.scan and `icefloe scan` refuse
        self.lineage = bool(S.check_lineage_columns(metadata, list(schema.fieldNames()), table_schema))
        self.name_mapping = NM.of(metadata.properties)  # files without field ids, resolved as scan.scan does
        self.row_filter: E.Expression = E.AlwaysTrue()
        self.planning = ref.get("planning", AUTO)
        if self.planning not in (LOCAL, DISTRIBUTED, AUTO):
            raise SparkOptionError(f"planning must be {LOCAL}, {DISTRIBUTED} or {AUTO}")
        self.split_size_bytes = _int_option(ref, "split-size-bytes", PL.SPLIT_SIZE_BYTES_DEFAULT)
        self.distributed_min = _int_option(ref, "distributed-planning-manifests-min",
                                           PL.DISTRIBUTED_MANIFESTS_MIN_DEFAULT)
        self.groups_max = _int_option(ref, "planning-tasks-max", 64)
        self.partitions_min = _int_option(ref, "read-partitions-min", READ_PARTITIONS_MIN_DEFAULT)

    @property
    def table_schema(self) -> T.Schema:
        return T.schema_from_json(self.table_schema_json)

    def pushFilters(self, filters):
        self.row_filter, left = F.push(filters, self.table_schema)
        return left

    def plan(self) -> list[InputPartition]:
        """The input partitions; the driver calls it through partitions()."""
        if self.snapshot_id is None:
            return [FilesPartition([])]
        _, metadata, _ = select_snapshot(self.ref)  # a fresh read; the snapshot is immutable
        snapshot = metadata.snapshot_by_id(self.snapshot_id)
        schema = self.table_schema
        tree = TreeReader(io_of(self.ref))
        mode = self.planning
        if mode == AUTO:
            mode = PL.choose_mode(tree.manifests(snapshot), self.distributed_min)
        if mode == DISTRIBUTED:
            groups = PL.manifest_groups(tree, metadata, snapshot, self.row_filter, schema, self.groups_max)
            return [ManifestsPartition(g) for g in groups] or [FilesPartition([])]
        tasks = S.plan_files(tree, metadata, snapshot, self.row_filter)
        # Small tables still get `read-partitions-min` splits (one per file at most), so
        # every core reads: the source cannot ask Spark for its parallelism.
        total = sum(t.data_file.file_size_in_bytes for t in tasks)
        split = max(1, min(self.split_size_bytes, -(-total // max(1, self.partitions_min))))
        return [FilesPartition(t) for t in PL.split_tasks(tasks, split)] or [FilesPartition([])]

    def partitions(self):
        return self.plan()

    def read(self, partition):
        io = io_of(self.ref)
        schema = self.table_schema
        if isinstance(partition, ManifestsPartition):
            tasks = PL.plan_group(TreeReader(io), partition.group, schema, self.row_filter)
        else:
            tasks = partition.tasks
        target = to_arrow_schema(self.spark_schema, timezone="UTC")
        mask = None if isinstance(self.row_filter, E.AlwaysTrue) else E.to_arrow(E.bind(self.row_filter, schema))
        deletes = DeleteReader(io)
        read_schema = S.lineage_schema(schema) if self.lineage else schema  # filled per file by read_task
        for task in tasks:
            rows = S.read_task(io, task, read_schema, deletes, self.name_mapping)
            if mask is not None:
                rows = rows.filter(mask)
            if rows.num_rows == 0:
                continue
            rows = rows.select(target.names).cast(target)
            yield from rows.to_batches(max_chunksize=BATCH_ROWS_MAX)
