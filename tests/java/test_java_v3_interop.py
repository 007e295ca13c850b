"""Format v3 both ways with Iceberg-Java 1.10.2 (issue 29 item 5): Java reads icefloe's v3
tables with deletion vectors applied and lists icefloe's DVs and first_row_ids in its
`entries` metadata table as its own; icefloe reads a v3 table written by Spark SQL with
merge-on-read DELETE (Java's Puffin DVs) and derives each row's _row_id as first_row_id +
position, which Java's metadata (entries' first_row_id, the rows' _file and _pos) confirms.
On Spark 3.5 `_row_id` itself is not selectable, so lineage is compared through metadata."""
from __future__ import annotations

import glob
import re

import pyarrow as pa

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format.puffin import read_dv, read_footer
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.io.local import LocalStore
from icefloe.impl.io.locations import comparable_location
from icefloe.impl.table import scan as S
from icefloe.impl.table.commit import read_metadata
from icefloe.impl.table.files import TreeReader
from icefloe.impl.table.table import create_table

ROWS = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])


def _rows(ids):
    return pa.table({"id": list(ids), "s": [f"v{i}" for i in ids]}, schema=ROWS)


def _newest(pattern: str) -> str:
    return max(glob.glob(pattern), key=lambda p: int(re.search(r"(\d+)[-.]", p.rsplit("/", 1)[1]).group(1)))


def test_java_reads_icefloe_v3_dvs_and_row_lineage_as_its_own(java_worker, tmp_path):
    """Goal: Java reads icefloe's v3 table with its DVs applied, and `entries` shows the DVs
    (puffin, referenced_data_file, content_offset/size) and the data files' first_row_id
    as icefloe assigned them. Method: icefloe writes two appends and two merge-on-read
    deletes (the second replacing a DV); Java loads the metadata file and its entries."""
    io = LocalStore(fsync=False)
    table = create_table(SqlCatalog(f"sqlite:///{tmp_path}/c.db"), "db.t", schema_from_arrow(ROWS), None,
                         f"file://{tmp_path}/wh/db/t", io=io, format_version=3)
    table.append(_rows(range(0, 6)))
    table.append(_rows(range(6, 10)))
    table.delete("id in (1, 7)", mode="merge-on-read")
    table.delete("id = 2", mode="merge-on-read")
    expected = sorted(table.scan().column("id").to_pylist())
    assert expected == [0, 3, 4, 5, 6, 8, 9]
    location = table.metadata_location
    assert sorted(r[0] for r in java_worker.call("load", location=location, columns=["id"])) == expected

    entries = java_worker.call("load", location=f"{location}#entries", columns=[
        "status", "data_file.content", "data_file.file_path", "data_file.file_format", "data_file.record_count",
        "data_file.first_row_id", "data_file.referenced_data_file", "data_file.content_offset",
        "data_file.content_size_in_bytes"])
    live = [e for e in entries if e[0] in (0, 1)]
    java_data = {comparable_location(e[2]): e[5] for e in live if e[1] == 0}
    ours = {comparable_location(t.data_file.file_path): t for t in table.plan_files()}
    assert java_data == {p: t.data_file.first_row_id for p, t in ours.items()}
    assert sorted(java_data.values()) == [0, 6]
    java_dvs = sorted((comparable_location(e[6]), e[4], e[7], e[8], e[3].lower()) for e in live if e[1] == 1)
    our_dvs = sorted((p, t.deletion_vector.record_count, t.deletion_vector.content_offset,
                      t.deletion_vector.content_size_in_bytes, "puffin") for p, t in ours.items())
    assert java_dvs == our_dvs and sorted(d[1] for d in java_dvs) == [1, 2]  # one live DV per file
    snapshot = java_worker.call("load", location=f"{location}#snapshots", columns=["snapshot_id"])
    assert len(snapshot) == 4


def test_icefloe_reads_javas_v3_merge_on_read_deletes_and_derives_row_ids(java_worker, java_warehouse):
    """Goal: icefloe reads a v3 table Spark SQL wrote with merge-on-read DELETE (Puffin DVs),
    the same rows as Java, each DV blob as pyroaring reads it; its _row_id for every row is
    Java's first_row_id of the row's file + the row's _pos. Method: Java creates, inserts
    twice and deletes twice (the second delete merges into the first file's DV); icefloe
    reads the newest metadata file."""
    java_worker.sql("CREATE NAMESPACE IF NOT EXISTS h.v3")
    java_worker.sql("CREATE TABLE h.v3.t (id bigint, s string) USING iceberg TBLPROPERTIES "
                    "('format-version'='3', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')")
    java_worker.sql("INSERT INTO h.v3.t SELECT id, concat('v', id) FROM range(0, 8)")
    java_worker.sql("INSERT INTO h.v3.t SELECT id, concat('v', id) FROM range(8, 12)")
    java_worker.sql("DELETE FROM h.v3.t WHERE id IN (1, 9)")
    java_worker.sql("DELETE FROM h.v3.t WHERE id = 3")
    java_rows = java_worker.sql("SELECT id, _file, _pos FROM h.v3.t")
    entries = java_worker.sql("SELECT data_file.file_path, data_file.first_row_id FROM h.v3.t.entries "
                              "WHERE status < 2 AND data_file.content = 0")
    first_row_id = {comparable_location(p): f for p, f in entries}

    location = _newest(f"{java_warehouse}/v3/t/metadata/v*.metadata.json")
    io = LocalStore(fsync=False)
    metadata = read_metadata(io, f"file://{location}")
    assert metadata.format_version == 3 and metadata.next_row_id >= 12
    tree = TreeReader(io)
    tasks = S.plan_files(tree, metadata, metadata.current_snapshot())
    dvs = [t.deletion_vector for t in tasks if t.deletion_vector is not None]
    assert dvs and all(d.file_format.lower() == "puffin" for d in dvs)
    for dv in dvs:  # Java's blobs, read by offset and described by the footer alike
        data = io.get(dv.file_path)
        blobs = {b.offset: b for b in read_footer(data)[0]}
        assert blobs[dv.content_offset].length == dv.content_size_in_bytes
        assert len(read_dv(data, dv.content_offset, dv.content_size_in_bytes)) == dv.record_count
    ours = S.scan(io, metadata, metadata.current_snapshot(), columns=["id", "_row_id"], tree=tree)
    assert sorted(ours.column("id").to_pylist()) == sorted(r[0] for r in java_rows) == \
        [0, 2, 4, 5, 6, 7, 8, 10, 11]
    expected = {r[0]: first_row_id[comparable_location(r[1])] + r[2] for r in java_rows}
    assert dict(zip(ours.column("id").to_pylist(), ours.column("_row_id").to_pylist())) == expected


def test_java_writes_v3_and_v1_tables_through_icefloe_serve(java_worker, tmp_path):
    """Goal: Iceberg-Java's REST client creates v3 and v1 tables through `icefloe serve` as
    asked, directly and as a staged create (CTAS) (format-version not kept as a property),
    and its v3 inserts and merge-on-read
    DELETE (DVs, row lineage) commit through the server: icefloe reads the same rows and
    next-row-id advanced by the rows Java added. Method: Spark SQL on a REST catalog,
    icefloe's SqlCatalog on the server's database."""
    from icefloe.conformance.testing import java_env
    from icefloe.conformance.testing.rest_server import RestServer
    from icefloe.impl.io.router import StoreRouter
    from icefloe.impl.table.table import Table
    uri = f"sqlite:///{tmp_path}/catalog.db"
    with RestServer(uri, str(tmp_path / "warehouse")) as server:
        java_env.add_catalog(java_worker, "r3", "rest", uri=server.url, properties={"cache-enabled": "false"})
        java_worker.sql("CREATE NAMESPACE IF NOT EXISTS r3.db")
        java_worker.sql("CREATE TABLE r3.db.t3 (id bigint, s string) USING iceberg TBLPROPERTIES "
                        "('format-version'='3', 'write.delete.mode'='merge-on-read')")
        java_worker.sql("CREATE TABLE r3.db.t1 (id bigint, s string) USING iceberg TBLPROPERTIES ('format-version'='1')")
        java_worker.sql("INSERT INTO r3.db.t3 SELECT id, concat('v', id) FROM range(0, 6)")
        java_worker.sql("INSERT INTO r3.db.t3 SELECT id, concat('v', id) FROM range(6, 9)")
        java_worker.sql("DELETE FROM r3.db.t3 WHERE id IN (2, 7)")
        java_worker.sql("INSERT INTO r3.db.t1 VALUES (1, 'a'), (2, 'b')")
        # a staged create (CTAS): the version comes as the transaction's upgrade-format-version
        java_worker.sql("CREATE TABLE r3.db.c3 USING iceberg TBLPROPERTIES ('format-version'='3') "
                        "AS SELECT id, concat('v', id) AS s FROM range(0, 4)")
        java_rows = sorted(r[0] for r in java_worker.sql("SELECT id FROM r3.db.t3"))
        t3, t1 = (Table(SqlCatalog(uri), name, StoreRouter()) for name in ("db.t3", "db.t1"))
        assert (t3.metadata.format_version, t1.metadata.format_version) == (3, 1)
        assert "format-version" not in t3.metadata.properties and "format-version" not in t1.metadata.properties
        assert sorted(t3.scan().column("id").to_pylist()) == java_rows == [0, 1, 3, 4, 5, 6, 8]
        assert t3.metadata.next_row_id == 9 and [s.first_row_id for s in t3.history()][:2] == [0, 6]
        assert any(t.deletion_vector is not None for t in t3.plan_files())
        assert sorted(t1.scan().column("id").to_pylist()) == [1, 2]
        c3 = Table(SqlCatalog(uri), "db.c3", StoreRouter())
        assert c3.metadata.format_version == 3 and "format-version" not in c3.metadata.properties
        assert c3.metadata.next_row_id == 4 and sorted(c3.scan().column("id").to_pylist()) == [0, 1, 2, 3]
