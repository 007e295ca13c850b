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

from dataclasses import dataclass, field

from icefloe.impl.format import expressions as E
from icefloe.impl.format import evaluators as EV
from icefloe.impl.format import types as T
from icefloe.impl.format.manifest import DataFile, ManifestContent, ManifestFile
from icefloe.impl.format.metadata import Snapshot, TableMetadata
from icefloe.impl.format.transforms import PartitionSpec
from icefloe.impl.table.files import TreeReader
from icefloe.impl.table.scan import FileScanTask, attach_deletes

SPLIT_SIZE_BYTES_DEFAULT = 128 << 20
DISTRIBUTED_MANIFESTS_MIN_DEFAULT = 64
MANIFESTS_PER_TASK_MAX = 32
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
    """The live data files of one manifest that may hold rows matching `expr`."""
    partition_eval = EV.PartitionEvaluator(expr, spec, schema)
    metrics = EV.MetricsEvaluator(expr, schema)
    out = []
    for e in tree.entries(manifest):
        if e.status not in LIVE:
            continue
        f = e.data_file
        if partition_eval.might_match(f.partition) and metrics.might_match(f):
            out.append(FileScanTask(f, manifest.partition_spec_id, e.sequence_number))
    return out


def plan_group(tree: TreeReader, group: ManifestGroup, schema: T.Schema, expr: E.Expression) -> list[FileScanTask]:
    tasks = []
    for m in group.manifests:
        tasks.extend(plan_manifest(tree, m, group.specs[m.partition_spec_id], schema, expr))
    return attach_deletes(tasks, group.deletes)


def manifest_groups(tree: TreeReader, metadata: TableMetadata, snapshot: Snapshot | None, expr: E.Expression,
                    schema: T.Schema, groups_max: int) -> list[ManifestGroup]:
    data, delete_manifests = data_and_delete_manifests(tree, metadata, snapshot, expr, schema)
    deletes = delete_refs(tree, metadata, delete_manifests)
    specs = {m.partition_spec_id: metadata.spec_by_id(m.partition_spec_id) for m in data}
    n = max(1, min(groups_max, len(data)))
    per = max(1, min(MANIFESTS_PER_TASK_MAX, -(-len(data) // n)))
    return [ManifestGroup(data[i:i + per], specs, deletes) for i in range(0, len(data), per)]


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
