"""Committing Parquet files that already exist (pyiceberg's `add_files`, Iceberg-Java's
AppendFiles with files another writer made; spec/PROTOCOL.md 7.3 "append"): each file is
read where it is and described (partition, metrics from its footer), nothing is copied
or rewritten, and the files become an append snapshot.

A file with Iceberg field ids must name the table's columns by them (the same id, the
same name); a file without them (pandas, DuckDB, a Parquet export) is resolved by name
through the table's name mapping (spec "Column Projection"; impl/format/name_mapping.py),
which the commit sets or extends from the current schema. A file is refused, naming it
and the reason, when it does not fit: a column the table lacks, a type the table's
column cannot read exactly (the spec's widenings apply), a required column missing or
holding nulls, nested columns without field ids, rows of more than one partition of
the default spec, or a file already in the table. Nothing is committed unless every
file fits.
"""
from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.impl.format import name_mapping as NM, types as T
from icefloe.impl.format.manifest import DataFile, ManifestContent
from icefloe.impl.format.metadata import MAIN_BRANCH, TableMetadata
from icefloe.impl.format.parquet import _field_id, footer_metrics, read_data_file
from icefloe.impl.format.partitioning import split_by_partition
from icefloe.impl.outcomes import InvalidArgument
from icefloe.impl.table import producer as P, updates as U
from icefloe.impl.table.append_schema import _why_not
from icefloe.impl.table.schema_evolution import AssertCurrentSchema


class FileDoesNotFit(InvalidArgument):
    """An existing file that cannot be added to the table as it is (named, with why)."""


def _check_columns(location: str, arrow: pa.Schema, schema: T.Schema) -> bool:
    """Whether the file needs the name mapping (it has no field ids); FileDoesNotFit if
    its columns do not fit the table's."""
    target = T.schema_to_arrow(schema)
    ids = [_field_id(f) for f in arrow]
    mapped = all(i is None for i in ids)
    if not mapped and any(i is None for i in ids):
        raise FileDoesNotFit(f"{location}: some columns carry field ids and some do not")
    for f, fid in zip(arrow, ids):
        field = schema.field_by_name(f.name) if mapped else schema.field_by_id(fid)
        if field is None or (not mapped and schema.column_name(fid) != f.name):
            where = "by name" if mapped else f"by field id {fid}"
            raise FileDoesNotFit(f"{location}: column {f.name!r} is not a column of the table {where} "
                                 f"(columns: {', '.join(x.name for x in schema.fields)})")
        if schema.column_name(field.field_id) != field.name:
            raise FileDoesNotFit(f"{location}: column {f.name!r} is not a top-level column of the table")
        if mapped and pa.types.is_nested(f.type):
            raise FileDoesNotFit(f"{location}: column {f.name!r} is nested and the file has no field ids "
                                 "(its children cannot be mapped by name)")
        why = _why_not(f.type, target.field(field.name).type, True)
        if why is not None:
            raise FileDoesNotFit(f"{location}: column {f.name!r}: {why}")
    present = set(arrow.names)
    missing = [f.name for f in schema.fields if f.required and f.name not in present and f.initial_default is None]
    if missing:
        raise FileDoesNotFit(f"{location}: required column(s) {', '.join(map(repr, missing))} missing")
    return mapped


def describe_file(data: bytes, location: str, metadata: TableMetadata) -> tuple[DataFile, bool]:
    """(the DataFile of an existing Parquet file for `metadata`'s current schema and
    default spec, whether it needs the name mapping); FileDoesNotFit if it does not fit."""
    schema, spec = metadata.schema(), metadata.spec()
    try:
        footer = pq.ParquetFile(io.BytesIO(data))
        arrow = footer.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as e:
        raise FileDoesNotFit(f"{location}: not a readable Parquet file ({type(e).__name__}: {e})") from None
    mapped = _check_columns(location, arrow, schema)
    mapping = {f.name: f.field_id for f in schema.fields} if mapped else None
    rows = read_data_file(data, schema, location, name_mapping=mapping)
    for f in schema.fields:
        if f.required and rows.column(f.name).null_count:
            raise FileDoesNotFit(f"{location}: required column {f.name!r} holds {rows.column(f.name).null_count} "
                                 "null(s)")
    partition: tuple = ()
    if spec.fields and rows.num_rows:
        groups = split_by_partition(rows, spec, schema)
        if len(groups) != 1:
            raise FileDoesNotFit(f"{location}: holds rows of {len(groups)} partitions of the table's spec "
                                 f"{spec.spec_id}; a data file belongs to one")
        partition = groups[0][0]
    metrics = footer_metrics(footer.metadata, schema)
    return DataFile(file_path=location, file_format="PARQUET", partition=partition,
                    file_size_in_bytes=len(data), **metrics), mapped


class AddFiles(P.FastAppend):
    """An append of files that exist already; sets or extends the name mapping when a
    file has no field ids. Fails (Conflict) if the schema changed since the files were
    checked against it."""

    def __init__(self, files: list[DataFile], needs_mapping: bool, metadata: TableMetadata,
                 ref: str = MAIN_BRANCH):
        super().__init__(None, ref)
        self.new_files, self.needs_mapping = list(files), needs_mapping
        self.checked = AssertCurrentSchema(metadata.current_schema_id, metadata.last_column_id)

    def plan(self, c):
        live = {e.data_file.file_path for _, e in c.tree.live_entries(c.starting_snapshot, ManifestContent.DATA)} \
            if c.starting_snapshot is not None else set()
        already = [f.file_path for f in self.new_files if f.file_path in live]
        if already:
            raise FileDoesNotFit(f"{already[0]}: already a data file of the table")
        return bool(self.new_files)

    def write_data(self, c):
        self.files = list(self.new_files)        # they exist: nothing is written

    def validations(self, c):
        return [self.checked]

    def updates(self, c, snapshot):
        out = super().updates(c, snapshot)
        if self.needs_mapping:
            text = NM.merged(c.base.properties.get(NM.NAME_MAPPING_PROPERTY), c.base.schema())
            out.append(U.set_properties({NM.NAME_MAPPING_PROPERTY: text}, (), c.env.wall_ms()))
        return out
