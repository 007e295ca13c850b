"""Scan planning for Spark (Iceberg spec "Scan Planning"; impl/table/scan.py is the
single-process planner).

Two ways to plan one snapshot:
- local: the planner reads every manifest in one process (scan.plan_files) and the files
  are grouped into input partitions of about `split-size-bytes`;
- distributed: for tables with very many manifests, the driver reads only the manifest
  list (pruning manifests by their partition summaries) and the delete manifests; each
  Spark task reads its share of the data manifests, prunes entries by partition and
  column statistics, attaches the deletes that apply and reads the files. The compaction
  job uses the same per-manifest planning inside an RDD (`plan_files_distributed`).
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from itertools import accumulate

import pyarrow as pa

from icefloe.impl.format import expressions as E
from icefloe.impl.format import evaluators as EV
from icefloe.impl.format import types as T
from icefloe.impl.format.manifest import DataFile, DataFileContent, ManifestContent, ManifestFile
from icefloe.impl.format.manifest_reader import Projection
from icefloe.impl.format.metadata import Snapshot, TableMetadata
from icefloe.impl.format.transforms import PartitionSpec
from icefloe.impl.table.deletes import equality_delete_applies, position_delete_applies
from icefloe.impl.table.files import TreeReader
from icefloe.impl.table.scan import FileScanTask, attach_deletes
from icefloe.impl.spark import manifest_columns as MC

SPLIT_SIZE_BYTES_DEFAULT = 128 << 20
DISTRIBUTED_MANIFESTS_MIN_DEFAULT = 64
ENTRIES_PER_TASK_MAX = 250_000  # a bound on one planning task's entries (and its result)
ENTRIES_ASSUMED = 10_000  # for a manifest whose list entry has no counts
TASKS_PER_CORE = 2  # executor planning: few tasks (each costs ~20-50 ms of CPU in PySpark), balanced
LIVE = (0, 1)  # EXISTING, ADDED

DeleteRef = tuple  # (sequence number, spec id, DataFile, spec unpartitioned)


@dataclass
class ManifestGroup:
    """What one distributed-planning task needs: its manifests, the specs they use, the
    filter, and every live delete file of the snapshot."""
    manifests: list[ManifestFile]
    specs: dict[int, PartitionSpec]
    deletes: list[DeleteRef] = field(default_factory=list)


def data_and_delete_manifests(tree: TreeReader, metadata: TableMetadata, snapshot: Snapshot | None,
                              expr: E.Expression, schema: T.Schema) -> tuple[list[ManifestFile], list[ManifestFile]]:
    """The data manifests that may match `expr` (by partition summaries), and all delete manifests."""
    data, deletes = [], []
    evaluators: dict[int, EV.ManifestEvaluator] = {}
    for m in tree.manifests(snapshot):
        if m.content == ManifestContent.DELETES:
            deletes.append(m)
            continue
        if m.partition_spec_id not in evaluators:
            evaluators[m.partition_spec_id] = EV.ManifestEvaluator(expr, metadata.spec_by_id(m.partition_spec_id), schema)
        if evaluators[m.partition_spec_id].might_match(m):
            data.append(m)
    return data, deletes


def delete_refs(tree: TreeReader, metadata: TableMetadata, manifests: list[ManifestFile]) -> list[DeleteRef]:
    out = []
    for m in manifests:
        unpartitioned = metadata.spec_by_id(m.partition_spec_id).is_unpartitioned
        for e in tree.entries(m):
            if e.status in LIVE:
                out.append((e.sequence_number, m.partition_spec_id, e.data_file, unpartitioned))
    return out


def plan_manifest(tree: TreeReader, manifest: ManifestFile, spec: PartitionSpec, schema: T.Schema,
                  expr: E.Expression) -> list[FileScanTask]:
    """The live data files of one manifest that may hold rows matching `expr` (as
    scan.plan_files: no column statistics decoded without a filter, and with one only for
    the entries whose partition may match)."""
    out = []
    if isinstance(expr, E.AlwaysTrue):
        for e in tree.entries(manifest, Projection.WITHOUT_COLUMN_STATS):
            if e.status in LIVE and e.data_file.record_count != 0:
                out.append(FileScanTask(e.data_file, manifest.partition_spec_id, e.sequence_number))
        return out
    partition_eval = EV.PartitionEvaluator(expr, spec, schema)
    metrics = EV.MetricsEvaluator(expr, schema)
    keep = lambda e: e.status in LIVE and partition_eval.might_match(e.data_file.partition)  # noqa: E731
    for e in tree.entries(manifest, Projection.ALL, keep=keep):
        if metrics.might_match(e.data_file):
            out.append(FileScanTask(e.data_file, manifest.partition_spec_id, e.sequence_number))
    return out


def plan_group(tree: TreeReader, group: ManifestGroup, schema: T.Schema, expr: E.Expression) -> list[FileScanTask]:
    tasks = []
    for m in group.manifests:
        tasks.extend(plan_manifest(tree, m, group.specs[m.partition_spec_id], schema, expr))
    return attach_deletes(tasks, group.deletes)


def manifest_groups(tree: TreeReader, metadata: TableMetadata, snapshot: Snapshot | None, expr: E.Expression,
                    schema: T.Schema, groups_max: int) -> list[ManifestGroup]:
    """The data manifests that may match, in about `groups_max` groups of about equal
    announced entries (more groups where a group would exceed `ENTRIES_PER_TASK_MAX`),
    each with the snapshot's live delete files."""
    data, delete_manifests = data_and_delete_manifests(tree, metadata, snapshot, expr, schema)
    deletes = delete_refs(tree, metadata, delete_manifests)
    specs = {m.partition_spec_id: metadata.spec_by_id(m.partition_spec_id) for m in data}
    runs = balanced_runs([_entries(m) for m in data], groups_max, ENTRIES_PER_TASK_MAX)
    return [ManifestGroup(data[start:end], specs, deletes) for start, end in runs]


def balanced_runs(weights: list[int], groups_max: int, weight_per_group_max: int) -> list[tuple[int, int]]:
    """Contiguous (start, end) runs of `weights` (the plan keeps the manifests' order):
    `groups_max` of them, or more where a run would exceed `weight_per_group_max`, at most
    one per item, cut where the running total passes each equal share."""
    total = sum(weights)
    n = max(1, min(len(weights), max(groups_max, -(-total // weight_per_group_max))))
    runs, start, done = [], 0, 0
    for i, w in enumerate(weights):
        done += w
        if len(runs) < n - 1 and done * n >= total * (len(runs) + 1):
            runs.append((start, i + 1))
            start = i + 1
    if start < len(weights):
        runs.append((start, len(weights)))
    return runs


def _entries(m: ManifestFile) -> int:
    """A manifest's announced live entries (optional counts missing: assume a full manifest)."""
    if m.added_files_count is None and m.existing_files_count is None:
        return ENTRIES_ASSUMED
    return max(1, (m.added_files_count or 0) + (m.existing_files_count or 0))


def split_tasks(tasks: list[FileScanTask], split_size_bytes: int) -> list[list[FileScanTask]]:
    """Group files into splits of about `split_size_bytes` (first fit, largest first)."""
    splits: list[list[FileScanTask]] = []
    sizes: list[int] = []
    for t in sorted(tasks, key=lambda t: -t.data_file.file_size_in_bytes):
        size = t.data_file.file_size_in_bytes
        for i, used in enumerate(sizes):
            if used + size <= split_size_bytes:
                splits[i].append(t)
                sizes[i] += size
                break
        else:
            splits.append([t])
            sizes.append(size)
    return splits


def plan_files_distributed(spark, ref, metadata: TableMetadata, snapshot: Snapshot | None,
                           expr: E.Expression = E.AlwaysTrue(), groups_max: int | None = None) -> list[FileScanTask]:
    """scan.plan_files, with the data manifests read in Spark tasks (one RDD job)."""
    from icefloe.impl.spark.options import io_of
    from icefloe.impl.table.scan import snapshot_schema
    schema = snapshot_schema(metadata, snapshot)
    tree = TreeReader(io_of(ref))
    groups_max = groups_max or spark.sparkContext.defaultParallelism * 4
    groups = manifest_groups(tree, metadata, snapshot, expr, schema, groups_max)
    if not groups:
        return []

    def run(group: ManifestGroup):
        return plan_group(TreeReader(io_of(ref)), group, schema, expr)

    return spark.sparkContext.parallelize(groups, len(groups)).flatMap(run).collect()


# -- plans as Arrow tables (the native read path; planning on executors at scale) ------

DISTRIBUTED_ENTRIES_MIN_DEFAULT = 100_000
PLAN_SCHEMA = pa.schema([
    pa.field("file_path", pa.string(), False), pa.field("file_size_in_bytes", pa.int64(), False),
    pa.field("record_count", pa.int64(), False), pa.field("data_sequence_number", pa.int64()),
    pa.field("spec_id", pa.int32(), False), pa.field("partition_key", pa.string()),
    pa.field("position_deletes", pa.list_(pa.int32())), pa.field("equality_deletes", pa.list_(pa.int32())),
])


@dataclass
class PlanStats:
    """What a plan cost and how it was made (docs/spark.md "Planning")."""
    mode: str
    manifests: int = 0
    entries: int = 0  # live entries the manifest list announces for the data manifests
    data_manifests_read: int = 0
    files: int = 0
    delete_files: int = 0
    tasks: int = 0  # Spark tasks of an executor plan
    plan_ms: float = 0.0
    driver_requests: int = 0
    executor_requests: int = 0
    executor_cpu_ms: float = 0.0  # CPU of the planning tasks, summed
    executor_cpu_busiest_ms: float = 0.0  # of the Python worker that spent the most on them

    def to_json(self) -> dict:
        return dict(self.__dict__)


def announced_entries(manifests: list[ManifestFile]) -> int:
    return sum((m.added_files_count or 0) + (m.existing_files_count or 0)
               for m in manifests if m.content == ManifestContent.DATA)


def choose_mode(manifests: list[ManifestFile], manifests_min: int = DISTRIBUTED_MANIFESTS_MIN_DEFAULT,
                entries_min: int = DISTRIBUTED_ENTRIES_MIN_DEFAULT) -> str:
    """Executors plan once a table has `manifests_min` manifests or `entries_min` entries."""
    if len(manifests) >= manifests_min or announced_entries(manifests) >= entries_min:
        return "distributed"
    return "local"


# The native read's automatic switch (docs/benchmarks.md, spark section: both planners
# make the same columnar plan, so the switch is a matter of a Spark job's fixed cost,
# about a second, against the per-entry work the executors share). Measured on local[2]
# at load 4-7: without a filter on columns the one-process planner is faster at 10^5
# entries (1.1-1.6 s vs 2.0-2.3 s) and slower at 10^6 (12.7 vs 10.2 s); a filter on
# columns makes each entry about three times dearer (statistics decoded and evaluated),
# and the two tie at 10^5 (4.3-5.4 vs 4.8 s).
NATIVE_ENTRIES_MIN = 300_000
NATIVE_ENTRIES_MIN_WITH_STATS = 100_000
NATIVE_PARALLELISM_MIN = 2  # with one core, executors only add a job's cost


def choose_native_mode(manifests: list[ManifestFile], parallelism: int, stats_needed: bool) -> str:
    """The native read's planning mode for planning='auto': on the executors when Spark has
    two or more cores and the data manifests announce enough entries (fewer when the
    filter needs column statistics), else in this process."""
    data = [m for m in manifests if m.content == ManifestContent.DATA]
    entries_min = NATIVE_ENTRIES_MIN_WITH_STATS if stats_needed else NATIVE_ENTRIES_MIN
    if parallelism >= NATIVE_PARALLELISM_MIN and len(data) >= 2 and announced_entries(data) >= entries_min:
        return "distributed"
    return "local"


def partition_key(spec_id: int, partition: tuple) -> str:
    """One string per (spec, partition tuple), for joining data and delete files in Spark."""
    return repr((spec_id, tuple(partition)))


def tasks_to_table(tasks: list[FileScanTask], delete_index: dict[str, int]) -> pa.Table:
    """A plan as columns; delete files as indices into the plan's list of delete refs."""
    return pa.table({
        "file_path": [t.data_file.file_path for t in tasks],
        "file_size_in_bytes": [t.data_file.file_size_in_bytes for t in tasks],
        "record_count": [t.data_file.record_count for t in tasks],
        "data_sequence_number": [t.data_sequence_number for t in tasks],
        "spec_id": [t.spec_id for t in tasks],
        "partition_key": [partition_key(t.spec_id, t.data_file.partition) for t in tasks],
        "position_deletes": [[delete_index[d.file_path] for d in t.position_deletes] or None for t in tasks],
        "equality_deletes": [[delete_index[d.file_path] for d in t.equality_deletes] or None for t in tasks],
    }, schema=PLAN_SCHEMA)


class _DataFileView:
    """What position_delete_applies and equality_delete_applies read of a data file: its
    partition, and its path (decoded only when a position delete's path bounds are asked)."""
    __slots__ = ("partition", "_path")

    def __init__(self, partition: tuple, path: bytes):
        self.partition, self._path = partition, path

    @property
    def file_path(self) -> str:
        return self._path.decode("utf-8")


def _attach(columns: MC.ManifestColumns, deletes: list[DeleteRef]) -> tuple[list, list, list]:
    """Per planned file: the indices (into `deletes`) of the position and of the equality
    delete files that apply to it (scan.attach_deletes's rules, deletes.py), and its
    partition key where any does. Candidates are looked up by spec and partition."""
    by_partition: dict[tuple, list[int]] = {}
    unpartitioned: list[int] = []
    for i, (_, spec_id, d, global_) in enumerate(deletes):
        (unpartitioned if global_ else by_partition.setdefault((spec_id, tuple(d.partition)), [])).append(i)
    positions, equalities, keys = [], [], []
    for seq, spec_id, partition, path in zip(columns.data_sequence_number, columns.spec_id, columns.partition,
                                             columns.file_path):
        view = _DataFileView(partition, path)
        found_pos, found_eq = [], []
        for i in unpartitioned + by_partition.get((spec_id, partition), []):
            dseq, dspec, d, global_ = deletes[i]
            args = (dseq, dspec, d, seq, spec_id, view, global_)
            if d.content == DataFileContent.POSITION_DELETES and position_delete_applies(*args):
                found_pos.append(i)
            elif d.content == DataFileContent.EQUALITY_DELETES and equality_delete_applies(*args):
                found_eq.append(i)
        positions.append(sorted(found_pos) or None)
        equalities.append(sorted(found_eq) or None)
        keys.append(partition_key(spec_id, partition) if found_pos or found_eq else None)
    return positions, equalities, keys


def _int64(values) -> pa.Array:
    if isinstance(values, array):
        return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])
    if None in values:
        return pa.array(values, pa.int64())
    return _int64(array("q", values))


def _strings(values: list[bytes]) -> pa.Array:
    """UTF-8 bytes (checked by the decoder) as a string array, from buffers."""
    data = b"".join(values)
    large = len(data) >= 1 << 31  # past 32-bit offsets
    offsets = array("q" if large else "i", [0])
    offsets.extend(accumulate(map(len, values)))
    out = pa.Array.from_buffers(pa.large_string() if large else pa.string(), len(values),
                                [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return out.cast(pa.string()) if large else out  # (a plan's paths beyond 2 GiB fail in the cast)


def columns_to_table(columns: MC.ManifestColumns, deletes: list[DeleteRef]) -> pa.Table:
    """A columnar plan (manifest_columns.py) as a PLAN_SCHEMA table, deletes attached."""
    n = len(columns)
    if deletes:
        positions, equalities, keys = _attach(columns, deletes)
        positions, equalities = pa.array(positions, pa.list_(pa.int32())), pa.array(equalities, pa.list_(pa.int32()))
        keys = pa.array(keys, pa.string())
    else:
        positions = equalities = pa.nulls(n, pa.list_(pa.int32()))
        keys = pa.nulls(n, pa.string())
    spec_ids = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(columns.spec_id)])
    return pa.Table.from_arrays(
        [_strings(columns.file_path), _int64(columns.file_size_in_bytes), _int64(columns.record_count),
         _int64(columns.data_sequence_number), spec_ids, keys, positions, equalities], schema=PLAN_SCHEMA)


def plan_columns(io, manifests: list[ManifestFile], specs: dict[int, PartitionSpec], schema: T.Schema,
                 expr: E.Expression, deletes: list[DeleteRef]) -> pa.Table:
    """The plan of some data manifests (already pruned by their partition summaries) as
    a PLAN_SCHEMA table: each manifest decoded straight into columns (manifest_columns.py),
    entries pruned by partition and by the statistics of the filter's columns only, the
    deletes attached. What scan.plan_files plans, without an object per entry."""
    bound = None if isinstance(expr, E.AlwaysTrue) else EV.rewrite_not(E.bind(expr, schema))
    ids = MC.referenced_field_ids(bound) if bound is not None else frozenset()
    evaluators: dict[int, EV.PartitionEvaluator] = {}
    out = MC.ManifestColumns()
    for m in manifests:
        partition_eval = None
        if bound is not None:
            partition_eval = evaluators.get(m.partition_spec_id)
            if partition_eval is None:
                partition_eval = evaluators[m.partition_spec_id] = EV.PartitionEvaluator(
                    expr, specs[m.partition_spec_id], schema)
        MC.decode_manifest(io.get(m.manifest_path), m, partition_eval, bound, ids, out)
    return columns_to_table(out, deletes)


def plan_table_local(io, tree: TreeReader, metadata: TableMetadata, snapshot: Snapshot | None,
                     expr: E.Expression = E.AlwaysTrue(), stats: PlanStats | None = None
                     ) -> tuple[pa.Table, list[DeleteRef]]:
    """The plan of `snapshot` in this process, as plan_table_distributed makes it."""
    from icefloe.impl.table.scan import snapshot_schema
    if snapshot is None:
        return PLAN_SCHEMA.empty_table(), []
    schema = snapshot_schema(metadata, snapshot)
    data, delete_manifests = data_and_delete_manifests(tree, metadata, snapshot, expr, schema)
    deletes = delete_refs(tree, metadata, delete_manifests)
    specs = {m.partition_spec_id: metadata.spec_by_id(m.partition_spec_id) for m in data}
    if stats is not None:
        stats.data_manifests_read = len(data)
    return plan_columns(io, data, specs, schema, expr, deletes), deletes


def _ipc(table: pa.Table) -> bytes:
    """Arrow IPC, LZ4-compressed (file paths share long prefixes)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def plan_table_distributed(spark, ref, metadata: TableMetadata, snapshot: Snapshot | None,
                           expr: E.Expression = E.AlwaysTrue(), groups_max: int | None = None,
                           stats: PlanStats | None = None) -> tuple[pa.Table, list[DeleteRef]]:
    """The plan of `snapshot` with the data manifests decoded and pruned on the executors
    (one Spark task per group of manifests, plan_columns); each task returns its part of
    the plan as Arrow IPC bytes, so the driver holds columns, not one object per file."""
    from icefloe.impl.spark.options import io_of
    from icefloe.impl.table.scan import snapshot_schema
    schema = snapshot_schema(metadata, snapshot)
    tree = TreeReader(io_of(ref))
    groups_max = groups_max or spark.sparkContext.defaultParallelism * TASKS_PER_CORE
    groups = manifest_groups(tree, metadata, snapshot, expr, schema, groups_max)
    deletes = groups[0].deletes if groups else []
    if stats is not None:
        stats.tasks, stats.data_manifests_read = len(groups), sum(len(g.manifests) for g in groups)
    if not groups:
        return PLAN_SCHEMA.empty_table(), deletes
    schema_json = T.schema_to_json(schema)

    def run(group: ManifestGroup):
        import os
        import time
        cpu_before = time.process_time()
        io = io_of(ref)
        before = sum(io.counts.values())
        table = plan_columns(io, group.manifests, group.specs, T.schema_from_json(schema_json), expr, group.deletes)
        data = _ipc(table)
        yield data, sum(io.counts.values()) - before, (time.process_time() - cpu_before) * 1000, os.getpid()

    parts = spark.sparkContext.parallelize(groups, len(groups)).flatMap(run).collect()
    if stats is not None:
        stats.executor_requests = sum(p[1] for p in parts)
        stats.executor_cpu_ms = sum(p[2] for p in parts)
        by_worker: dict = {}
        for p in parts:
            by_worker[p[3]] = by_worker.get(p[3], 0.0) + p[2]
        stats.executor_cpu_busiest_ms = max(by_worker.values(), default=0.0)
    tables = [pa.ipc.open_stream(p[0]).read_all() for p in parts]
    return pa.concat_tables(tables) if tables else PLAN_SCHEMA.empty_table(), deletes
