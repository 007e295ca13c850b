"""Reading a snapshot (spec/PROTOCOL.md 10 "Readers"; Iceberg spec "Scan Planning").

pointer -> metadata -> manifest list -> manifests -> data files, nothing else: no listing
(2.4), no version hint (4.2.6). Manifests are pruned by their partition field summaries,
data files by partition and column metrics; the filter is then applied to the rows.
v2 delete files are applied by the sequence-number rules of deletes.py. The incremental
read (10.4) walks a ref's ancestry back to the last consumed snapshot and reads what the
append snapshots in between added; if that snapshot is not on the ancestry it reports
the gap instead of skipping. The row lineage columns are read on v3 tables only: below
v3 naming them is a typed refusal (`check_lineage_columns`), never a column of nulls.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import pyarrow as pa

from icefloe.impl.format import expressions as E
from icefloe.impl.format import evaluators as EV
from icefloe.impl.format.expression_parser import parse as parse_filter
from icefloe.impl.format import name_mapping as NM
from icefloe.impl.format import types as T
from icefloe.impl.format.manifest import DataFile, DataFileContent, ManifestContent
from icefloe.impl.format.manifest_reader import Projection
from icefloe.impl.format.metadata import Snapshot, TableMetadata, UnsupportedFormatVersion
from icefloe.impl.format.parquet import iter_data_file, read_data_file
from icefloe.impl.io.base import ObjectStore
from icefloe.impl.format.integrity import CorruptMetadata
from icefloe.impl.outcomes import IcefloeError, require
from icefloe.impl.io.locations import comparable_location
from icefloe.impl.table.append_schema import SchemaMismatch
from icefloe.impl.table.deletes import (
    DeleteReader, deletion_vector_applies, equality_delete_applies, position_delete_applies,
)
from icefloe.impl.table.files import LIVE, TreeReader


class IncrementalGap(IcefloeError):
    """The last consumed snapshot is not an ancestor of the ref's head any more (10.4)."""


@dataclass
class FileScanTask:
    data_file: DataFile
    spec_id: int
    data_sequence_number: int
    position_deletes: list[DataFile] = field(default_factory=list)
    equality_deletes: list[DataFile] = field(default_factory=list)
    deletion_vector: DataFile | None = None  # v3: replaces position_deletes for this file

    @property
    def has_deletes(self) -> bool:
        return bool(self.position_deletes or self.equality_deletes or self.deletion_vector)


# Row lineage metadata columns (spec "Reserved Field IDs", "Row Lineage"): read by name
# through `columns`, derived by inheritance where the file holds no value.
ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER = "_row_id", "_last_updated_sequence_number"
ROW_ID_FIELD_ID, LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID = 2147483540, 2147483539
LINEAGE_COLUMNS = (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)
LINEAGE_FORMAT_VERSION_MIN = 3  # spec "Row Lineage": v3 tables track it, older ones have none


def lineage_asked(columns, schema: T.Schema | None = None) -> list[str]:
    """The row lineage columns among `columns` (None: none); a name `schema` holds as a
    column of its own is that column, not lineage."""
    return [c for c in (columns or ()) if c in LINEAGE_COLUMNS
            and (schema is None or schema.field_by_name(c) is None)]


def lineage_named(schema: T.Schema) -> list[T.NestedField]:
    """The top-level columns of `schema` named like a row lineage column: a table's own
    columns (lineage is told by its reserved field ids), which the lineage columns cannot
    be read or written beside under the same name."""
    return [f for f in schema.fields if f.name in LINEAGE_COLUMNS]


def check_lineage_columns(metadata: TableMetadata, columns, schema: T.Schema | None = None) -> list[str]:
    """The row lineage columns `columns` asks for (`lineage_asked`); if it asks for any on a
    table below v3, UnsupportedFormatVersion naming them and the table's format version: no
    row of a v1 or v2 table has lineage, and a reference never reads nulls in their place. The one
    check of Table.scan, `icefloe scan --columns` and Spark's reads. The table's current
    version decides: time travel on a table now at v3 reads them (null for files written
    before the upgrade, spec "Row Lineage for Upgraded Tables")."""
    asked = lineage_asked(columns, schema)
    version = metadata.format_version
    if asked and version < LINEAGE_FORMAT_VERSION_MIN:
        steps = ", then ".join(f"--format-version {v}" for v in range(version + 1, LINEAGE_FORMAT_VERSION_MIN + 1))
        raise UnsupportedFormatVersion(f"{', '.join(asked)}: row lineage needs format v{LINEAGE_FORMAT_VERSION_MIN}; "
                                       f"the table at {metadata.location} is v{version} "
                                       f"(upgrade it: icefloe upgrade TABLE {steps})")
    clash = [f.name for f in lineage_named(schema)] if schema is not None and asked else []
    if clash:  # the lineage columns are read beside the table's: two columns of one name
        raise SchemaMismatch(f"{', '.join(asked)}: the table has a column named {', '.join(map(repr, clash))}, "
                             "the name of a row lineage column, so the lineage columns cannot be read beside it "
                             "(rename it first)")
    return asked


def _as_expression(row_filter) -> E.Expression:
    if row_filter is None:
        return E.AlwaysTrue()
    if isinstance(row_filter, str):
        return parse_filter(row_filter)
    return row_filter


def snapshot_schema(metadata: TableMetadata, snapshot: Snapshot | None) -> T.Schema:
    if snapshot is not None and snapshot.schema_id is not None:
        found = metadata.schema_by_id(snapshot.schema_id)
        if found is not None:
            return found
    return metadata.schema()


def plan_files(tree: TreeReader, metadata: TableMetadata, snapshot: Snapshot | None,
               row_filter=None, schema: T.Schema | None = None) -> list[FileScanTask]:
    """The data files of `snapshot` that may hold rows matching `row_filter`, each with
    the delete files that apply to it. The filter's names are bound to `schema` (default:
    the snapshot's), the schema the rows are read with; files are then pruned by field id
    (partition source ids, column metrics), so a file written before a column was renamed
    or added is judged by the same column (Iceberg spec "Scan Planning")."""
    if snapshot is None:
        return []
    with tree.reading():
        return _plan_files(tree, metadata, snapshot, row_filter, schema or snapshot_schema(metadata, snapshot))


def _plan_files(tree: TreeReader, metadata: TableMetadata, snapshot: Snapshot,
                row_filter, schema: T.Schema) -> list[FileScanTask]:
    expr = _as_expression(row_filter)
    metrics = EV.MetricsEvaluator(expr, schema)
    evaluators: dict[int, tuple] = {}

    def for_spec(spec_id: int):
        if spec_id not in evaluators:
            spec = metadata.spec_by_id(spec_id)
            if spec is None:
                raise CorruptMetadata(snapshot.manifest_list, f"a manifest names partition spec {spec_id}, "
                                      "which the table metadata does not define")
            evaluators[spec_id] = (spec, EV.ManifestEvaluator(expr, spec, schema),
                                   EV.PartitionEvaluator(expr, spec, schema))
        return evaluators[spec_id]

    # Data files' column metrics are decoded only for the entries that survive the
    # partition filter, and not at all without a filter (impl/format/avro_decode.py).
    # Delete files keep theirs: their bounds decide which data files they apply to.
    unfiltered = isinstance(expr, E.AlwaysTrue)
    tasks: list[FileScanTask] = []
    deletes: list[tuple[int, int, DataFile, bool]] = []
    for m in tree.manifests(snapshot):
        spec, manifest_eval, partition_eval = for_spec(m.partition_spec_id)
        if m.content == ManifestContent.DELETES:
            for e in tree.entries(m):
                if e.status in (0, 1):  # EXISTING, ADDED
                    deletes.append((e.sequence_number, m.partition_spec_id, e.data_file, spec.is_unpartitioned))
            continue
        if not manifest_eval.might_match(m):
            continue
        if unfiltered:
            for e in tree.entries(m, Projection.WITHOUT_COLUMN_STATS):
                # record_count 0: what the metrics evaluator says of an empty file
                if e.status in (0, 1) and e.data_file.record_count != 0:
                    tasks.append(FileScanTask(e.data_file, m.partition_spec_id, e.sequence_number))
            continue
        if isinstance(partition_eval.projected, E.AlwaysTrue):  # no partition predicate: every entry
            entries = [e for e in tree.entries(m) if e.status in LIVE]
        else:  # a partition index first: only entries whose partition may match are decoded
            entries = tree.matching_entries(m, partition_eval.might_match)
        for e in entries:
            if metrics.might_match(e.data_file):
                tasks.append(FileScanTask(e.data_file, m.partition_spec_id, e.sequence_number))
    return attach_deletes(tasks, deletes)


def attach_deletes(tasks: list[FileScanTask], deletes) -> list[FileScanTask]:
    """Give each data file task the delete files that apply to it (sequence-number rules).
    A deletion vector is found by the data file it references; two live DVs for one data
    file are a corrupt table (spec: "at most one deletion vector ... per data file")."""
    dvs: dict[str, list[tuple[int, DataFile]]] = {}
    rest = []
    for seq, spec_id, d, unpartitioned in deletes:
        if d.is_deletion_vector:
            dvs.setdefault(comparable_location(d.referenced_data_file or ""), []).append((seq, d))
        else:
            rest.append((seq, spec_id, d, unpartitioned))
    for task in tasks:
        applying = [d for seq, d in dvs.get(comparable_location(task.data_file.file_path), ())
                    if deletion_vector_applies(seq, d, task.data_sequence_number, task.data_file)]
        if len(applying) > 1:
            raise CorruptMetadata(task.data_file.file_path, f"{len(applying)} live deletion vectors apply "
                                  "to this data file; the spec allows one")
        task.deletion_vector = applying[0] if applying else None
        for seq, spec_id, d, unpartitioned in rest:
            args = (seq, spec_id, d, task.data_sequence_number, task.spec_id, task.data_file, unpartitioned)
            if d.content == DataFileContent.POSITION_DELETES and position_delete_applies(*args):
                if task.deletion_vector is None:  # a DV holds them (spec "Deletion Vectors")
                    task.position_deletes.append(d)
            elif d.content == DataFileContent.EQUALITY_DELETES and equality_delete_applies(*args):
                task.equality_deletes.append(d)
    return tasks


def lineage_schema(schema: T.Schema) -> T.Schema:
    """`schema` with the two row lineage columns, as optional longs with their reserved ids."""
    return T.Schema(schema.fields + (T.NestedField(ROW_ID_FIELD_ID, ROW_ID, T.LONG, False),
                                     T.NestedField(LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID,
                                                   LAST_UPDATED_SEQUENCE_NUMBER, T.LONG, False)),
                    schema.schema_id, schema.identifier_field_ids)


def _with_lineage(rows: pa.Table, task: FileScanTask) -> pa.Table:
    """Fill the lineage columns as the spec says ("Row lineage assignment", Appendix E v3):
    a value the file holds is kept; a null `_row_id` is the file's first_row_id + its
    position, a null `_last_updated_sequence_number` the file's data sequence number; a
    file without first_row_id (written before an upgrade to v3) gives nulls."""
    first = task.data_file.first_row_id
    n = rows.num_rows
    i, j = rows.schema.get_field_index(ROW_ID), rows.schema.get_field_index(LAST_UPDATED_SEQUENCE_NUMBER)
    if first is None:
        return rows.set_column(i, rows.schema.field(i), pa.nulls(n, pa.int64())) \
                   .set_column(j, rows.schema.field(j), pa.nulls(n, pa.int64()))
    import pyarrow.compute as pc
    derived = pc.add(pa.array(range(n), pa.int64()), pa.scalar(first, pa.int64()))
    row_id = pc.coalesce(rows.column(i), derived)
    seq = pc.coalesce(rows.column(j), pa.scalar(task.data_sequence_number, pa.int64()))
    return rows.set_column(i, rows.schema.field(i), row_id).set_column(j, rows.schema.field(j), seq)


def read_task(io: ObjectStore, task: FileScanTask, schema: T.Schema,
              deletes: DeleteReader | None = None, name_mapping: dict | None = None) -> pa.Table:
    """The live rows of one data file (deletes applied, no filter). A `schema` holding the
    lineage columns (`lineage_schema`) gets them filled before deletes drop rows, since
    `_row_id` counts positions in the file. `name_mapping` (name_mapping.of(properties))
    resolves a file written without field ids."""
    rows = read_data_file(io.get(task.data_file.file_path), schema, task.data_file.file_path, data_file=task.data_file,
                          name_mapping=name_mapping)
    if schema.field_by_id(ROW_ID_FIELD_ID) is not None:
        rows = _with_lineage(rows, task)
    deletes = deletes or DeleteReader(io)
    return deletes.apply(rows, task.data_file, task.position_deletes, task.equality_deletes, schema,
                         task.deletion_vector)


def read_tasks(io: ObjectStore, tasks: list[FileScanTask], schema: T.Schema, row_filter=None,
               columns: list[str] | None = None, name_mapping: dict | None = None) -> pa.Table:
    expr = _as_expression(row_filter)
    arrow_filter = None if isinstance(expr, E.AlwaysTrue) else E.to_arrow(E.bind(expr, schema))
    if lineage_asked(columns, schema):
        schema = lineage_schema(schema)
    deletes = DeleteReader(io)
    parts = []
    for task in tasks:
        rows = read_task(io, task, schema, deletes, name_mapping)
        if arrow_filter is not None:
            rows = rows.filter(arrow_filter)
        parts.append(rows)
    out = pa.concat_tables(parts) if parts else T.schema_to_arrow(schema).empty_table()
    out = out.cast(T.schema_to_arrow(schema))
    return out.select(columns) if columns is not None else out


def scan(io: ObjectStore, metadata: TableMetadata, snapshot: Snapshot | None, row_filter=None,
         columns: list[str] | None = None, tree: TreeReader | None = None,
         schema: T.Schema | None = None) -> pa.Table:
    """The rows of `snapshot` matching `row_filter`, as one Arrow table of `schema` (default:
    the snapshot's schema; the table's current one for a read of the current state, so a
    column added since the last snapshot shows, as null)."""
    tree = tree or TreeReader(io)
    schema = schema or snapshot_schema(metadata, snapshot)
    check_lineage_columns(metadata, columns, schema)  # before planning: a refusal reads nothing
    return read_tasks(io, plan_files(tree, metadata, snapshot, row_filter, schema), schema, row_filter, columns,
                      NM.of(metadata.properties))


BATCH_ROWS_DEFAULT = 65_536


def scan_batches(io: ObjectStore, metadata: TableMetadata, snapshot: Snapshot | None, row_filter=None,
                 columns: list[str] | None = None, tree: TreeReader | None = None,
                 schema: T.Schema | None = None, batch_rows: int = BATCH_ROWS_DEFAULT) -> Iterator[pa.Table]:
    """The rows `scan` returns, as a stream of tables of at most `batch_rows` rows each, in
    file order: a data file is decoded a batch at a time (whole, when delete files apply
    to it: positions count from the file's start), so memory is bounded by one file's
    bytes and one batch rather than by the table. Plans first (the manifests), so a plan
    that cannot be made fails before any row is produced."""
    tree = tree or TreeReader(io)
    schema = schema or snapshot_schema(metadata, snapshot)
    lineage = bool(check_lineage_columns(metadata, columns, schema))  # before planning
    tasks = plan_files(tree, metadata, snapshot, row_filter, schema)
    expr = _as_expression(row_filter)
    arrow_filter = None if isinstance(expr, E.AlwaysTrue) else E.to_arrow(E.bind(expr, schema))
    if lineage:
        schema = lineage_schema(schema)
    arrow_schema = T.schema_to_arrow(schema)
    deletes = DeleteReader(io)
    mapping = NM.of(metadata.properties)
    for task in tasks:
        path = task.data_file.file_path
        if task.has_deletes or lineage:  # positions count from the file's start
            parts = [read_task(io, task, schema, deletes, mapping)]
        else:
            parts = iter_data_file(io.get(path), schema, path, data_file=task.data_file, batch_rows=batch_rows,
                                   name_mapping=mapping)
        for rows in parts:
            if arrow_filter is not None:
                rows = rows.filter(arrow_filter)
            rows = rows.cast(arrow_schema)
            if columns is not None:
                rows = rows.select(columns)
            for start in range(0, rows.num_rows, batch_rows):
                yield rows.slice(start, batch_rows)


def appended_between(metadata: TableMetadata, from_snapshot_id: int | None, to_snapshot_id: int
                     ) -> list[Snapshot]:
    """The snapshots after `from_snapshot_id` up to `to_snapshot_id` on its ancestry, oldest
    first; IncrementalGap if `from_snapshot_id` is not an ancestor."""
    line = list(metadata.ancestors_of(to_snapshot_id))
    ids = [s.snapshot_id for s in line]
    if from_snapshot_id is not None:
        if from_snapshot_id not in ids:
            raise IncrementalGap(f"snapshot {from_snapshot_id} is not an ancestor of {to_snapshot_id}")
        line = line[: ids.index(from_snapshot_id)]
    elif line and line[-1].parent_snapshot_id is not None:
        raise IncrementalGap(f"the ancestry of {to_snapshot_id} is cut by expiry")
    return list(reversed(line))


def incremental_append_scan(io: ObjectStore, metadata: TableMetadata, from_snapshot_id: int | None,
                            to_snapshot_id: int, tree: TreeReader | None = None) -> pa.Table:
    """Rows added by the append snapshots after `from_snapshot_id` (exclusive) up to
    `to_snapshot_id` (inclusive), in commit order."""
    tree = tree or TreeReader(io)
    to = metadata.snapshot_by_id(to_snapshot_id)
    require(to is not None, f"snapshot {to_snapshot_id} is not retained")
    schema = snapshot_schema(metadata, to)
    tasks = []
    for snap in appended_between(metadata, from_snapshot_id, to_snapshot_id):
        if snap.operation != "append":
            continue
        for e in tree.changes(snap).added_data:
            tasks.append(FileScanTask(e.data_file, 0, e.sequence_number))
    return read_tasks(io, tasks, schema, name_mapping=NM.of(metadata.properties))
