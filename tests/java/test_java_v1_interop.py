"""Format v1 both ways with Iceberg-Java 1.10.2 (issue 29 items 1, 5): Java reads a v1
table icefloe created and wrote as v1; icefloe appends to and deletes from a v1 table Java
wrote, keeps it v1, and Java reads the result."""
from __future__ import annotations

import glob
import json
import re

import pyarrow as pa

from icefloe.impl.catalog.base import TableIdentifier
from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.io.local import LocalStore
from icefloe.impl.table.table import Table, create_table

ROWS = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])


def _rows(ids):
    return pa.table({"id": list(ids), "s": [f"v{i}" for i in ids]}, schema=ROWS)


def _newest(pattern: str) -> str:
    return max(glob.glob(pattern), key=lambda p: int(re.search(r"(\d+)[-.]", p.rsplit("/", 1)[1]).group(1)))


def test_java_reads_icefloes_v1_table(java_worker, tmp_path):
    """Goal: a partitioned v1 table written by icefloe (v1 metadata, lists and manifests) is
    read by Java with the same rows and files. Method: icefloe creates, appends twice and
    deletes copy-on-write; Java loads the metadata file and its files table."""
    io = LocalStore(fsync=False)
    schema = schema_from_arrow(ROWS)
    catalog = SqlCatalog(f"sqlite:///{tmp_path}/c.db")
    table = create_table(catalog, "db.t", schema, parse_partition_spec("s", schema), f"file://{tmp_path}/wh/db/t",
                         io=io, format_version=1)
    table.append(_rows([1, 2, 3]))
    table.append(_rows([4]))
    table.delete("id = 2")
    doc = json.loads(io.get(table.metadata_location))
    assert doc["format-version"] == 1 and "last-sequence-number" not in doc
    rows = java_worker.call("load", location=table.metadata_location, columns=["id"])
    assert sorted(r[0] for r in rows) == [1, 3, 4]
    files = java_worker.call("load", location=f"{table.metadata_location}#files", columns=["content", "file_path"])
    assert len(files) == 3 and {r[0] for r in files} == {0}


def test_icefloe_appends_to_javas_v1_table_as_v1(java_worker, java_warehouse, tmp_path):
    """Goal: icefloe writes to a v1 table Java created (once "unavailable", bug16) and the
    table stays v1; Java reads every row at icefloe's metadata file. Method: Java creates a
    v1 table and inserts; icefloe registers its newest metadata file, appends; Java loads."""
    java_worker.sql("CREATE NAMESPACE IF NOT EXISTS h.v1")
    java_worker.sql("CREATE TABLE h.v1.t (id bigint, s string) USING iceberg PARTITIONED BY (s) "
                    "TBLPROPERTIES ('format-version'='1')")
    java_worker.sql("INSERT INTO h.v1.t VALUES (1, 'a'), (2, 'b')")
    location = "file://" + _newest(f"{java_warehouse}/v1/t/metadata/v*.metadata.json")
    io = LocalStore(fsync=False)
    catalog = SqlCatalog(f"sqlite:///{tmp_path}/c.db")
    catalog.create_namespace(("db",))
    catalog.create(TableIdentifier.parse("db.t"), location)  # icefloe's catalog takes Java's table as it is
    table = Table(catalog, "db.t", io)
    assert table.metadata.format_version == 1
    table.append(_rows([3]))
    table.delete("id = 1")
    doc = json.loads(io.get(table.metadata_location))
    assert doc["format-version"] == 1 and all("sequence-number" not in s for s in doc["snapshots"])
    rows = java_worker.call("load", location=table.metadata_location, columns=["id", "s"])
    assert sorted(map(tuple, rows)) == [(2, "b"), (3, "v3")]
