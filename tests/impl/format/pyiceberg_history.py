"""A pyiceberg table with some history, shared by the tests that read pyiceberg's manifests
(tests/impl/format/test_manifest.py, tests/spark/test_spark_manifest_columns.py; a unique
module name: tests/ has no __init__.py)."""
from __future__ import annotations

from pathlib import Path


def pyiceberg_table_with_history(tmp_path: Path, format_version: int):
    """A pyiceberg SqlCatalog table (temp SQLite, identity(cat) partitions, id and cat
    optional) after two appends, a delete and an overwrite, as loaded afresh: at least four
    snapshots of pyiceberg's v1 or v2 manifest lists and manifests."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("ns")
    table = catalog.create_table(
        "ns.t", schema=Schema(NestedField(1, "id", LongType(), required=False),
                              NestedField(2, "cat", StringType(), required=False)),
        partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat")),
        properties={"format-version": str(format_version)})
    rows = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "cat": ["a", "b", None, "a"]})
    table.append(rows)
    table.append(rows)
    table.delete("id = 1")
    table.overwrite(rows.slice(0, 2), overwrite_filter="cat = 'b'")
    return catalog.load_table("ns.t")
