"""The snapshot DAG of a table as a graph (spec/PROTOCOL.md 1.2 "The table as a tree of
immutable files", 1.6 "Refs"; drawn by `icefloe history --graph`).

Nodes are the retained snapshots (id, operation, summary counts, the refs that point at
them, whether it is main's current snapshot); edges run parent -> child. A snapshot whose
parent was expired has no incoming edge and is marked `parent_expired`. Building the
graph is pure (metadata in, networkx DiGraph out) so tests check nodes and edges on the
object; DOT text and the PNG (matplotlib, Agg backend, no graphviz binary) are renderings.
"""
from __future__ import annotations

from pathlib import Path

import networkx as nx

from icefloe.impl.format.metadata import MAIN_BRANCH, TableMetadata

# Summary counts shown on a node, in this order, with their short labels.
SUMMARY_COUNTS = (("added-data-files", "+files"), ("deleted-data-files", "-files"),
                  ("added-records", "+rows"), ("deleted-records", "-rows"),
                  ("total-records", "rows"))
_LABEL_REFS_MAX = 4  # refs named on one node before "+N more"


def lineage_graph(metadata: TableMetadata) -> nx.DiGraph:
    """The retained snapshots and their parent links, with refs and main's head marked."""
    graph = nx.DiGraph()
    refs_at: dict[int, list[str]] = {}
    for name, ref in sorted(metadata.refs.items()):
        refs_at.setdefault(ref.snapshot_id, []).append(name if ref.type == "branch" else f"tag:{name}")
    main = metadata.refs.get(MAIN_BRANCH)
    current = main.snapshot_id if main is not None else metadata.current_snapshot_id
    retained = {s.snapshot_id for s in metadata.snapshots}
    for s in sorted(metadata.snapshots, key=lambda s: (s.sequence_number, s.timestamp_ms)):
        counts = {short: s.summary[key] for key, short in SUMMARY_COUNTS if key in s.summary}
        graph.add_node(s.snapshot_id, operation=s.summary.get("operation", "?"),
                       sequence_number=s.sequence_number, timestamp_ms=s.timestamp_ms,
                       counts=counts, refs=tuple(refs_at.get(s.snapshot_id, ())),
                       current=s.snapshot_id == current,
                       parent_expired=s.parent_snapshot_id is not None and s.parent_snapshot_id not in retained)
    for s in metadata.snapshots:
        if s.parent_snapshot_id in retained:
            graph.add_edge(s.parent_snapshot_id, s.snapshot_id)
    assert nx.is_directed_acyclic_graph(graph), "parent links must not form a cycle"
    assert all(graph.in_degree(n) <= 1 for n in graph), "a snapshot has at most one parent"
    return graph


def node_label(graph: nx.DiGraph, node: int) -> str:
    a = graph.nodes[node]
    lines = [f"{node}", f"{a['operation']} (seq {a['sequence_number']})"]
    shown = [f"{k} {v}" for k, v in a["counts"].items() if v not in ("0", 0)]
    for i in range(0, len(shown), 2):
        lines.append(" ".join(shown[i:i + 2]))
    refs = list(a["refs"])
    if refs:
        more = f" +{len(refs) - _LABEL_REFS_MAX} more" if len(refs) > _LABEL_REFS_MAX else ""
        lines.append("[" + ", ".join(refs[:_LABEL_REFS_MAX]) + more + "]")
    if a["current"]:
        lines.append("* current")
    if a["parent_expired"]:
        lines.append("(parent expired)")
    return "\n".join(lines)


def to_dot(graph: nx.DiGraph) -> str:
    """Graphviz DOT text (written by hand: no pydot/pygraphviz dependency)."""
    def quote(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    lines = ["digraph snapshots {", "  rankdir=LR;", "  node [shape=box, fontname=monospace];"]
    for node in graph.nodes:
        style = ", style=\"bold,filled\", fillcolor=lightyellow" if graph.nodes[node]["current"] else ""
        lines.append(f"  s{node} [label={quote(node_label(graph, node))}{style}];")
    for parent, child in graph.edges:
        lines.append(f"  s{parent} -> s{child};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _layout(graph: nx.DiGraph) -> dict[int, tuple[float, float]]:
    """x = depth from a root (commit order along a line), y = one lane per branch-off."""
    pos: dict[int, tuple[float, float]] = {}
    lane_next = 0
    roots = sorted((n for n in graph if graph.in_degree(n) == 0),
                   key=lambda n: graph.nodes[n]["sequence_number"])
    stack = [(root, 0, None) for root in reversed(roots)]
    while stack:  # bounded: each node is pushed once (in-degree <= 1)
        node, depth, lane = stack.pop()
        if lane is None:
            lane, lane_next = lane_next, lane_next + 1
        pos[node] = (float(depth), -float(lane))
        children = sorted(graph.successors(node), key=lambda n: graph.nodes[n]["sequence_number"])
        # the first child continues the lane; later children open new lanes
        for i, child in reversed(list(enumerate(children))):
            stack.append((child, depth + 1, lane if i == 0 else None))
    assert len(pos) == graph.number_of_nodes()
    return pos


def write_png(graph: nx.DiGraph, path: str | Path, title: str = "") -> None:
    """Draw the DAG with matplotlib's Agg backend (no display, no graphviz)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pos = _layout(graph)
    width = max(6.0, 3.2 * (1 + max((x for x, _ in pos.values()), default=0)))
    height = max(3.0, 1.8 * (1 + max((-y for _, y in pos.values()), default=0)))
    fig, ax = plt.subplots(figsize=(min(width, 200.0), min(height, 200.0)))
    try:
        nx.draw_networkx_edges(graph, pos, ax=ax, arrows=True, arrowsize=14, node_size=6000,
                               min_source_margin=40, min_target_margin=40)
        for n, (x, y) in pos.items():  # a label in a box is the node: sized to its text
            color = "#ffe680" if graph.nodes[n]["current"] else "#cfe2f3"
            ax.text(x, y, node_label(graph, n), ha="center", va="center", fontsize=7, family="monospace",
                    bbox={"boxstyle": "round,pad=0.4", "facecolor": color, "edgecolor": "black",
                          "linewidth": 2 if graph.nodes[n]["current"] else 1})
        if not graph.number_of_nodes():
            ax.text(0.5, 0.5, "(no snapshots)", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title or f"{graph.number_of_nodes()} snapshot(s)")
        ax.margins(0.15)
        ax.set_axis_off()
        fig.savefig(path, format="png", dpi=100, bbox_inches="tight")
    finally:
        plt.close(fig)


def write_graph(metadata: TableMetadata, path: str | Path, title: str = "") -> nx.DiGraph:
    """Write the DAG to `path`: DOT text for `.dot`, else a PNG. Returns the graph drawn."""
    graph = lineage_graph(metadata)
    if str(path).endswith(".dot"):
        Path(path).write_text(to_dot(graph))
    else:
        write_png(graph, path, title)
    return graph
