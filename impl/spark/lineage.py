"""Row lineage through the native read (Iceberg spec "Row Lineage", "Reserved Field IDs";
docs/spark.md "Reading row lineage"): `_row_id` (field id 2147483540) and
`_last_updated_sequence_number` (2147483539) as Spark columns, equal row for row to
icefloe's scan (impl/table/scan.py `_with_lineage`).

    from icefloe.impl.spark import read
    df = read(spark, "cat.db.t", opts, columns=["id", "_row_id", "_last_updated_sequence_number"])

Built from outside native_read.py, on its NativeScan:
- the scan's schema gets the two lineage fields with their reserved field ids, so Spark's
  field-id matching reads the values a data file holds (files written by copy-on-write,
  compaction or updates materialise them) and nulls where it holds none;
- `NativeScan._frame(positions=True)` gives every live row (its deletes applied: DVs,
  position and equality deletes) with its file's canonical location and its row index
  (`_metadata.row_index`, the row's position in the file, counted before deletes);
- a small broadcast table, canonical location -> (first_row_id, data sequence number), one
  row per planned file, is joined by location, and a null `_row_id` becomes first_row_id +
  row index, a null `_last_updated_sequence_number` the file's data sequence number;
- a file without first_row_id (written before an upgrade to v3 and not yet given ids by a
  v3 commit) reads both as null, as the scan does; a row whose file the join does not find
  (a path spelled otherwise than the plan's) fails the query rather than read null.

first_row_id is not in the native plan's columns (planning.PLAN_SCHEMA): it is read here
from the snapshot's data manifests on the driver (entries without column statistics,
first_row_id inherited as manifest_reader inherits it).

A table below v3 has no row lineage: asking for the columns is UnsupportedFormatVersion
naming them and the table's version, by impl/table's one check (scan.check_lineage_columns,
as Table.scan and `icefloe scan --columns`). An incremental read with them is refused
(SparkOptionError), as the CLI refuses it.

Lineage is told by the schema the read reads (`read_target`), never by a name alone: a
table's own column named `_row_id` or `_last_updated_sequence_number` (the spec reserves
the field ids, not the names; docs/format.md) is that column, on any version. On v3,
lineage asked beside such a column is SchemaMismatch naming it (scan.check_lineage_columns,
before planning; producer.check_lineage_names in with_lineage): the two could not be told
apart by name in Spark's frame.
"""
from __future__ import annotations

import dataclasses

import pyarrow as pa

from icefloe.impl.format import types as T
from icefloe.impl.format.manifest import ManifestContent
from icefloe.impl.format.manifest_reader import Projection
from icefloe.impl.format.metadata import Snapshot, TableMetadata
from icefloe.impl.io.locations import canonical_location, comparable_location
from icefloe.impl.table.files import LIVE, TreeReader
from icefloe.impl.table import producer as P
from icefloe.impl.table import scan as S
from icefloe.impl.table.scan import (
    LAST_UPDATED_SEQUENCE_NUMBER, LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID, LINEAGE_COLUMNS, ROW_ID, ROW_ID_FIELD_ID,
    lineage_schema,
)
from icefloe.impl.spark.native_read import FILE, POS, NativeScan
from icefloe.impl.spark.options import SparkOptionError

FIRST, SEQ, KNOWN = "__icefloe_first_row_id", "__icefloe_data_seq", "__icefloe_known"


@dataclasses.dataclass(frozen=True)
class ReadTarget:
    """What a native read of a table reads: the table's metadata (its format version
    decides whether lineage exists), the snapshot and that snapshot's schema, chosen as
    native_read.plan chooses them (time travel options and keywords; an incremental read's
    end snapshot)."""
    metadata: TableMetadata
    snapshot: Snapshot | None
    schema: T.Schema


TRAVEL_KEYWORDS = (("snapshot_id", "snapshot-id"), ("as_of_timestamp", "as-of-timestamp"), ("tag", "tag"),
                   ("branch", "branch"))


def read_target(path: str, options: dict | None = None, **kwargs) -> ReadTarget:
    """The ReadTarget of `read(spark, path, options, **kwargs)`, loaded on the driver before
    the read is routed: whether `_row_id` is lineage or a column of the table's depends on
    the schema read."""
    from icefloe.impl.spark.options import table_ref
    from icefloe.impl.spark.reader import select_snapshot
    opts = dict(options or {})
    for keyword, key in TRAVEL_KEYWORDS:  # as native_read.plan folds them in
        if kwargs.get(keyword) is not None:
            opts[key] = str(kwargs[keyword])
    _, metadata, snapshot = select_snapshot(table_ref(opts, path))
    if kwargs.get("start_snapshot_id") is not None or kwargs.get("end_snapshot_id") is not None:
        end = kwargs.get("end_snapshot_id")  # native_read._incremental reads the end's schema
        snapshot = metadata.current_snapshot() if end is None else metadata.snapshot_by_id(end)
    return ReadTarget(metadata, snapshot, S.snapshot_schema(metadata, snapshot))


def first_row_ids(io, snapshot, paths: list[str]) -> dict[str, int | None]:
    """comparable location -> first_row_id (None: not assigned) of the live data files of
    `snapshot` among `paths`."""
    wanted = {comparable_location(p) for p in paths}
    out: dict[str, int | None] = {}
    tree = TreeReader(io)
    for m in tree.manifests(snapshot):
        if m.content != ManifestContent.DATA or len(out) == len(wanted):
            continue
        for e in tree.entries(m, Projection.WITHOUT_COLUMN_STATS):
            key = comparable_location(e.data_file.file_path)
            if e.status in LIVE and key in wanted:
                out[key] = e.data_file.first_row_id
    missing = wanted - set(out)
    assert not missing, f"planned files not live in their snapshot: {sorted(missing)[:3]}"
    return out


def with_lineage(scan: NativeScan, snapshot, positions: bool = False):
    """Every live row of `scan` (deletes and its row filter applied), its schema's columns
    then `_row_id` and `_last_updated_sequence_number` as the spec derives them; with
    `positions`, then FILE (canonical location) and POS (row index in the file) too.
    `snapshot` is the snapshot `scan` planned (its manifests give first_row_id)."""
    from pyspark.sql import functions as F
    assert scan.apply_deletes, "row lineage of an incremental read is not derived here"
    assert snapshot is None or snapshot.snapshot_id == scan.snapshot_id, "the scan's own snapshot"
    base = scan.schema
    if base.field_by_id(ROW_ID_FIELD_ID) is None:
        base_fields = base.fields
        lscan = dataclasses.replace(scan, schema=lineage_schema(base))
    else:  # already carries them (by their reserved ids)
        base_fields = tuple(f for f in base.fields
                            if f.field_id not in (ROW_ID_FIELD_ID, LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID))
        lscan = scan
    # a column of the table's named like a lineage column could not be told from it below
    P.check_lineage_names(T.Schema(base_fields))
    paths = scan.plan.column("file_path").to_pylist()
    if not paths:  # _frame's empty frame has FILE and POS only
        from pyspark.sql import types as ST
        empty = lscan.read_schema()
        if positions:
            empty = ST.StructType(empty.fields + [ST.StructField(FILE, ST.StringType()),
                                                  ST.StructField(POS, ST.LongType())])
        return scan.spark.createDataFrame([], empty).select(
            *[F.col(f"`{f.name}`") for f in base_fields], F.col(ROW_ID), F.col(LAST_UPDATED_SEQUENCE_NUMBER),
            *([F.col(FILE), F.col(POS)] if positions else []))
    df = lscan._frame(positions=True)
    ids = first_row_ids(scan.io, snapshot, paths)
    files = pa.table({FILE: pa.array([canonical_location(p) for p in paths], pa.string()),
                      FIRST: pa.array([ids[comparable_location(p)] for p in paths], pa.int64()),
                      SEQ: scan.plan.column("data_sequence_number").cast(pa.int64()),
                      KNOWN: pa.array([True] * len(paths), pa.bool_())})
    known = scan.spark.createDataFrame(files)
    df = df.join(F.broadcast(known), FILE, "left")
    null = F.lit(None).cast("long")
    # a row whose file the join did not find would read null lineage: fail it instead
    unplanned = F.raise_error(F.concat(F.lit("icefloe: row lineage of a file the read did not plan: "),
                                       F.col(FILE))).cast("long")
    first = F.when(F.col(KNOWN).isNull(), unplanned).otherwise(F.col(FIRST))
    row_id = F.when(first.isNull(), null).otherwise(F.coalesce(F.col(ROW_ID), first + F.col(POS)))
    seq = F.when(first.isNull(), null).otherwise(F.coalesce(F.col(LAST_UPDATED_SEQUENCE_NUMBER), F.col(SEQ)))
    out = [F.col(f"`{f.name}`") for f in base_fields] + [row_id.alias(ROW_ID), seq.alias(LAST_UPDATED_SEQUENCE_NUMBER)]
    if positions:
        out += [F.col(FILE), F.col(POS)]
    return df.select(*out)


def read(spark, path: str, options: dict | None = None, *, columns: list[str], target: ReadTarget | None = None,
         **kwargs):
    """The native read of `columns`, row lineage columns among them (docs/spark.md).
    `target`: the read's `read_target`, when the caller has loaded it."""
    from icefloe.impl.spark.native_read import plan
    from icefloe.impl.spark.options import table_ref
    from icefloe.impl.spark.reader import select_snapshot
    opts = dict(options or {})
    target = target or read_target(path, opts, **kwargs)
    metadata = target.metadata
    # below v3 UnsupportedFormatVersion, as Table.scan and the CLI (incremental or not); on
    # v3 lineage beside a column of its name SchemaMismatch: before planning
    asked = S.check_lineage_columns(metadata, columns, target.schema)
    assert asked, "read() goes here only for the lineage columns"
    if kwargs.get("start_snapshot_id") is not None or kwargs.get("end_snapshot_id") is not None:
        raise SparkOptionError(f"{', '.join(asked)} in an incremental read is not supported: read the snapshot "
                               "(snapshot_id) and select the rows you need")
    scan = plan(spark, path, opts, **kwargs)
    snapshot = None if scan.snapshot_id is None else metadata.snapshot_by_id(scan.snapshot_id)
    if scan.snapshot_id is not None and snapshot is None:  # committed after we looked: look again
        _, metadata, _ = select_snapshot(table_ref(opts, path))
        snapshot = metadata.snapshot_by_id(scan.snapshot_id)
    names = {f.name for f in scan.schema.fields} | set(LINEAGE_COLUMNS)
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise SparkOptionError(f"columns: no top-level column {', '.join(map(repr, unknown))} (columns: "
                               f"{', '.join(f.name for f in scan.schema.fields)}, {', '.join(LINEAGE_COLUMNS)})")
    return with_lineage(scan, snapshot).select(*[f"`{c}`" for c in columns])


__all__ = ["read", "read_target", "ReadTarget", "with_lineage", "first_row_ids"]
