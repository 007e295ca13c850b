"""The `icefloe` Python data source (pyspark.sql.datasource; docs/spark.md).

    spark.dataSource.register(IcefloeDataSource)
    df.write.format("icefloe").mode("append").option("catalog-uri", ...).save("cat.db.t")
    spark.read.format("icefloe").option("snapshot-id", ...).load("cat.db.t")

`schema()` is the table schema (of the chosen snapshot) with Iceberg's required fields
as non-nullable Spark fields. A write to a table that does not exist creates it from the
DataFrame's schema (with `partition-by`, e.g. "category, bucket(16, id)") when
`create-table` is "true", of `format-version` 1, 2 or 3 (default 2, as icefloe's
create); any other value is UnsupportedFormatVersion naming it, and a `format-version`
that disagrees with an existing table's is refused too (a table is upgraded with `icefloe
upgrade`, never by a write's option).
"""
from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from icefloe.impl.catalog.base import NoSuchTable, TableAlreadyExists
from icefloe.impl.format import types as T
from icefloe.impl.format.metadata import UnsupportedFormatVersion, check_format_version
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.table import scan as S
from icefloe.impl.spark.options import SparkOptionError, open_table, table_ref, warehouse_location, catalog_of, io_of

NAME = "icefloe"


def spark_schema(schema: T.Schema):
    return from_arrow_schema(T.schema_to_arrow(schema), prefer_timestamp_ntz=True)


class IcefloeDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    @property
    def ref(self):
        return table_ref(self.options)

    def schema(self):
        from icefloe.impl.spark.reader import select_snapshot
        _, metadata, snapshot = select_snapshot(self.ref)
        return spark_schema(S.snapshot_schema(metadata, snapshot))

    def reader(self, schema):
        from icefloe.impl.spark.reader import IcefloeReader
        return IcefloeReader(self.ref, schema)

    def writer(self, schema, overwrite: bool):
        from icefloe.impl.spark.writer import IcefloeWriter
        ref = self.ref
        if ref.read_only:
            raise SparkOptionError(f"{ref.metadata_file} is a metadata file: name a catalog table to write")
        table = _load_or_create(ref, schema)
        branch = ref.get("branch", "main")
        head = table.metadata.ref_head(branch) if branch in table.metadata.refs else None
        return IcefloeWriter(ref, table.location, table.metadata.schema(), table.metadata.spec(), overwrite,
                             None if head is None else head.snapshot_id)


FORMAT_VERSION = "format-version"


def asked_format_version(ref) -> int | None:
    """The `format-version` option as a supported version, None if not given;
    UnsupportedFormatVersion naming any other value (never a silent default)."""
    text = ref.get(FORMAT_VERSION)
    return None if text is None else check_format_version(text)


def _same_version(table, asked: int | None):
    """`table`, if `asked` is None or its own format version; else UnsupportedFormatVersion."""
    if asked is not None and table.metadata.format_version != asked:
        raise UnsupportedFormatVersion(
            f"option format-version={asked} but table {table.identifier} is v{table.metadata.format_version}: "
            f"a write does not change a table's format version (upgrade it with `icefloe upgrade`)")
    return table


def _load_or_create(ref, schema):
    from icefloe.impl.table.table import Table, create_table
    asked = asked_format_version(ref)  # refused before anything is read or written
    try:
        return _same_version(open_table(ref), asked)
    except NoSuchTable:
        if ref.get("create-table", "false").lower() != "true":
            raise
    iceberg_schema = T.schema_from_arrow(to_arrow_schema(schema, timezone="UTC"))
    spec_text = ref.get("partition-by")
    spec = parse_partition_spec(spec_text, iceberg_schema) if spec_text else None
    try:
        return create_table(catalog_of(ref), ref.identifier, iceberg_schema, spec, warehouse_location(ref),
                            io=io_of(ref), format_version=asked)
    except TableAlreadyExists:  # another job created it first
        return _same_version(Table(catalog_of(ref), ref.identifier, io_of(ref)), asked)
