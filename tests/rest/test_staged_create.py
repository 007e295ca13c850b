"""A staged create (`stage-create`, then the transaction's commit with `assert-create`) gives
the same table metadata as a direct create of the same table (issue 31 item 3; REST spec
CreateTableRequest.stage-create): goal, no placeholder of the staged path (sort order 0
beside order 1, a schema or spec id) is left in the table. Method: pyiceberg 0.12 creates
each variant of every create property both ways through `icefloe serve`; the two metadata
documents are compared with only what must differ (uuid, name, times, logs) removed."""
from __future__ import annotations

import pytest
import requests
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType, TimestampType

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "cat", StringType()),
                NestedField(3, "ts", TimestampType()), identifier_field_ids=[1])
SPEC = PartitionSpec(PartitionField(3, 1000, DayTransform(), "ts_day"),
                     PartitionField(1, 1001, BucketTransform(8), "id_bucket"))
ORDER = SortOrder(SortField(2, IdentityTransform(), SortDirection.DESC, NullOrder.NULLS_LAST),
                  SortField(1, IdentityTransform()))
VARIANTS = {
    "schema only": {},
    "partition spec": {"partition_spec": SPEC},
    "sort order": {"sort_order": ORDER},
    "properties": {"properties": {"write.format.default": "parquet", "owner": "me"}},
    "location": {"location": "LOCATION"},
    "everything": {"partition_spec": SPEC, "sort_order": ORDER, "properties": {"k": "v"}, "location": "LOCATION"},
}
DIFFERENT_BY_NATURE = ("table-uuid", "last-updated-ms", "metadata-log", "snapshot-log", "location")


def document(server, name: str) -> dict:
    metadata = requests.get(f"{server.url}/v1/namespaces/db/tables/{name}").json()["metadata"]
    return {k: v for k, v in metadata.items() if k not in DIFFERENT_BY_NATURE}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_staged_create_equals_direct_create(variant, server, rest_catalog, warehouse):
    """Goal: every create property lands the same way staged and direct, sort orders
    included ([1], not [0, 1]); method: pyiceberg create_table vs create_table_transaction."""
    rest_catalog.create_namespace("db")
    options = dict(VARIANTS[variant])
    located = {}
    for name, create in (("direct", rest_catalog.create_table), ("staged", None)):
        kw = dict(options)
        if kw.get("location") == "LOCATION":
            kw["location"] = f"file://{warehouse}/elsewhere/{name}"
            located[name] = kw["location"]
        if create is not None:
            create(f"db.{name}", schema=SCHEMA, **kw)
        else:
            with rest_catalog.create_table_transaction(f"db.{name}", schema=SCHEMA, **kw):
                pass
    direct, staged = document(server, "direct"), document(server, "staged")
    assert staged == direct
    assert [o["order-id"] for o in direct["sort-orders"]] == ([1] if "sort_order" in options else [0])
    assert [s["schema-id"] for s in direct["schemas"]] == [0]
    assert [s["spec-id"] for s in direct["partition-specs"]] == [0]
    for name, location in located.items():
        assert rest_catalog.load_table(f"db.{name}").metadata.location == location
