"""The history checker's cycle search (icefloe.model.checks.history), the Elle way: one
shortest cycle per class. G0/G1c in the dependency graph without rw edges; G-single as an
rw edge closed by a path without rw; G2 in what remains.

A campaign's graph has a node per committed operation and, under serializable, a `co`
chain through all of them, so most rw edges point forward in commit order and no path
leads back. Asking networkx for a shortest path back along every one of them costs a
walk along the chain each (hours for the deep campaign's ~1,500 operations and ~10^5 rw
edges on a loaded machine). So each search first asks the graph's strongly connected
components, which answer exactly when no path exists: `b` cannot reach `a` in the graph
without rw when `a`'s component comes before `b`'s in topological order of the
condensation, and an rw edge `a -> b` closes a cycle in the whole graph only when `a` and
`b` share a component. The shortest paths are then searched only where one exists, in the
same order as before, so the cycles found are the same.
"""
from __future__ import annotations

import networkx as nx


class _Reach:
    """Whether a path may exist from one node to another, from the condensation: False is
    certain, True means ask for the path."""

    def __init__(self, g: nx.DiGraph):
        c = nx.condensation(g)
        self._scc = c.graph["mapping"]
        self._order = {n: i for i, n in enumerate(nx.topological_sort(c))}

    def possible(self, src, dst) -> bool:
        a, b = self._scc[src], self._scc[dst]
        return a == b or self._order[a] < self._order[b]


def shortest_cycles(g: nx.MultiDiGraph, shortcut: bool = True) -> list:
    """The cycles of the module docstring, each a list of the graph's `edge` attributes;
    `shortcut=False` asks for every path without consulting the components first (the plain
    search the shortcut must agree with)."""
    plain = nx.DiGraph()
    plain.add_nodes_from(g.nodes)
    rw_edges = []
    for a, b, data in g.edges(data=True):
        if data["kind"] == "rw":
            rw_edges.append(data["edge"])
        elif not plain.has_edge(a, b):
            plain.add_edge(a, b, edge=data["edge"])
    found = []
    try:
        cyc = nx.find_cycle(plain)
        found.append([plain.edges[a, b]["edge"] for a, b in cyc])
    except nx.NetworkXNoCycle:
        pass
    reach = _Reach(plain) if rw_edges and shortcut else None
    for rw in rw_edges:
        if reach is not None and not reach.possible(rw.dst, rw.src):
            continue
        try:
            path = nx.shortest_path(plain, rw.dst, rw.src)
        except nx.NetworkXNoPath:
            continue
        found.append([rw] + [plain.edges[x, y]["edge"] for x, y in zip(path, path[1:])])
        break
    if not any(sum(1 for e in c if e.kind == "rw") == 1 for c in found):
        full = nx.DiGraph()
        for a, b, data in g.edges(data=True):
            if not full.has_edge(a, b) or data["kind"] == "rw":
                full.add_edge(a, b, edge=data["edge"])
        scc = {n: i for i, part in enumerate(nx.strongly_connected_components(full)) for n in part} if shortcut else {}
        for rw in rw_edges:
            if shortcut and scc[rw.src] != scc[rw.dst]:
                continue
            try:
                path = nx.shortest_path(full, rw.dst, rw.src)
            except nx.NetworkXNoPath:
                continue
            cycle = [rw] + [full.edges[x, y]["edge"] for x, y in zip(path, path[1:])]
            if sum(1 for e in cycle if e.kind == "rw") >= 2:
                found.append(cycle)
                break
    return found
