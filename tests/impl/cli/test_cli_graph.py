"""`icefloe history --graph`: the snapshot DAG as a graph object, DOT text and a PNG."""
from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.cli import main as cli_main
from icefloe.impl.io.local import LocalStore
from icefloe.impl.table.lineage_graph import lineage_graph, to_dot
from icefloe.impl.table.table import Table

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def icefloe(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "icefloe.impl.cli", *args], cwd=tmp_path,
                          capture_output=True, text=True)


def _branched_table(tmp_path, monkeypatch) -> Table:
    """Three appends on main (through the CLI's main, in process), a tag on the first, a
    branch off the second with one commit of its own, then main rolled back to the
    second: a DAG with a fork."""
    monkeypatch.chdir(tmp_path)
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), tmp_path / "rows.parquet")
    assert cli_main(["create", "db.t", "--schema-from", "rows.parquet"]) == 0
    for _ in range(3):
        assert cli_main(["append", "db.t", "rows.parquet"]) == 0
    catalog = SqlCatalog(f"sqlite:///{tmp_path / 'icefloe.db'}")
    table = Table(catalog, "db.t", LocalStore())
    first, second, _third = (s.snapshot_id for s in table.history())
    table.create_tag("v1", first)
    table.create_branch("dev", second)
    table.append(pa.table({"id": pa.array([9], pa.int64())}), branch="dev")
    table.rollback_to(second)
    return table


def test_graph_has_every_snapshot_parent_link_ref_and_the_current_mark(tmp_path, monkeypatch):
    """Goal: the graph drawn is the table's snapshot DAG. Method: build a table with a tag,
    a branch commit and a rollback; check the DiGraph's nodes, edges, refs and marks
    against the metadata, then that the CLI writes a real PNG and matching DOT."""
    table = _branched_table(tmp_path, monkeypatch)
    m = table.metadata
    graph = lineage_graph(m)
    first, second, third = (s.snapshot_id for s in sorted(m.snapshots, key=lambda s: s.sequence_number)[:3])
    dev_head = m.refs["dev"].snapshot_id
    assert set(graph.nodes) == {s.snapshot_id for s in m.snapshots} and len(graph) == 4
    assert set(graph.edges) == {(first, second), (second, third), (second, dev_head)}
    assert [n for n in graph if graph.nodes[n]["current"]] == [second]
    assert graph.nodes[first]["refs"] == ("tag:v1",)
    assert graph.nodes[second]["refs"] == ("main",) and graph.nodes[dev_head]["refs"] == ("dev",)
    assert graph.nodes[third]["refs"] == () and graph.nodes[third]["operation"] == "append"
    assert graph.nodes[dev_head]["counts"]["+files"] == "1"

    res = icefloe(tmp_path, "history", "db.t", "--graph", "lineage.png")
    assert res.returncode == 0, res.stderr
    png = (tmp_path / "lineage.png").read_bytes()
    assert png[:8] == PNG_SIGNATURE and len(png) > 5_000
    assert "4 snapshot(s), 3 parent link(s)" in res.stdout

    (meta,) = sorted((tmp_path / "warehouse/db/t/metadata").glob("*.metadata.json"))[-1:]
    res = icefloe(tmp_path, "history", str(meta), "--json", "--graph", "lineage.dot")
    assert res.returncode == 0, res.stderr
    dot = (tmp_path / "lineage.dot").read_text()
    assert dot == to_dot(graph)
    assert dot.count(" -> ") == 3 and f"s{second} -> s{dev_head};" in dot
    assert "tag:v1" in dot and "* current" in dot


def test_graph_of_a_table_without_snapshots_and_a_bad_name(tmp_path, monkeypatch):
    """Goal: an empty table still draws; a graph name that is neither .png nor .dot is a
    usage error. Method: create only, draw a PNG, then ask for OUT.jpg."""
    monkeypatch.chdir(tmp_path)
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), tmp_path / "rows.parquet")
    assert cli_main(["create", "db.t", "--schema-from", "rows.parquet"]) == 0
    res = icefloe(tmp_path, "history", "db.t", "--graph", "empty.png")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "empty.png").read_bytes()[:8] == PNG_SIGNATURE
    res = icefloe(tmp_path, "history", "db.t", "--graph", "out.jpg")
    assert res.returncode == 2 and "Traceback" not in res.stderr and ".png or .dot" in res.stderr


def test_expired_parent_is_marked_and_has_no_edge():
    """Goal: a snapshot whose parent was expired is drawn without a dangling edge and says
    so. Method: three appends on memory stores, expire the first by id, build the graph."""
    from icefloe.impl.catalog.memory import MemoryCatalog
    from icefloe.impl.format.types import schema_from_arrow
    from icefloe.impl.io.memory import MemoryStore
    from icefloe.impl.table.table import create_table

    rows = pa.table({"id": pa.array([1], pa.int64())})
    table = create_table(MemoryCatalog(), "db.t", schema_from_arrow(rows.schema), location="memory://w/db/t",
                         io=MemoryStore())
    for _ in range(3):
        table.append(rows)
    first, second, third = (s.snapshot_id for s in table.history())
    table.expire_snapshots(snapshot_ids=[first])
    graph = lineage_graph(table.metadata)
    assert set(graph.nodes) == {second, third} and set(graph.edges) == {(second, third)}
    assert graph.nodes[second]["parent_expired"] and not graph.nodes[third]["parent_expired"]
    assert "(parent expired)" in to_dot(graph)
