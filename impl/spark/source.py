"""The `icefloe` Python data source (pyspark.sql.datasource; docs/spark.md).

    spark.dataSource.register(IcefloeDataSource)
    df.write.format("icefloe").mode("append").option("catalog-uri", ...).save("cat.db.t")
    spark.read.format("icefloe").option("snapshot-id", ...).load("cat.db.t")

`schema()` is the table schema (of the chosen snapshot) with Iceberg's required fields
as non-nullable Spark fields. A write to a table that does not exist creates it from the
DataFrame's schema (with `partition-by`, e.g. "category, bucket(16, id)") when
`create-table` is "true".
"""
from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from icefloe.impl.catalog.base import NoSuchTable, TableAlreadyExists
from icefloe.impl.format import types as T
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


def _load_or_create(ref, schema):
    from icefloe.impl.table.table import Table, create_table
    try:
        return open_table(ref)
    except NoSuchTable:
        if ref.get("create-table", "false").lower() != "true":
            raise
    iceberg_schema = T.schema_from_arrow(to_arrow_schema(schema, timezone="UTC"))
    spec_text = ref.get("partition-by")
    spec = parse_partition_spec(spec_text, iceberg_schema) if spec_text else None
    try:
        return create_table(catalog_of(ref), ref.identifier, iceberg_schema, spec, warehouse_location(ref),
                            io=io_of(ref))
    except TableAlreadyExists:  # another job created it first
        return Table(catalog_of(ref), ref.identifier, io_of(ref))
