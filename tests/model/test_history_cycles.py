"""The cycle search's shortcut (model/checks/cycles.py): skipping the rw edges that the
strongly connected components say cannot close a cycle finds exactly the cycles the plain
search finds. Method: Hypothesis draws dependency multigraphs (with and without a `co`
chain, cyclic or not) and compares with the same search run with shortcut=False."""
from __future__ import annotations

import networkx as nx
from hypothesis import given, settings, strategies as st

from icefloe.model.checks.cycles import shortest_cycles
from icefloe.model.checks.history import Edge

KINDS = ("ww", "wr", "rw", "co")


@st.composite
def graphs(draw):
    n = draw(st.integers(2, 9))
    nodes = [f"t{i}" for i in range(n)]
    g = nx.MultiDiGraph()
    g.add_nodes_from(nodes)
    if draw(st.booleans()):   # serializable: commit order as a chain
        for a, b in zip(nodes, nodes[1:]):
            g.add_edge(a, b, kind="co", edge=Edge(a, b, "co", "order"))
    for _ in range(draw(st.integers(0, 3 * n))):
        a, b = draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))
        if a == b:
            continue
        kind = draw(st.sampled_from(KINDS))
        g.add_edge(a, b, kind=kind, edge=Edge(a, b, kind, f"{a}{kind}{b}"))
    return g


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_the_shortcut_finds_the_same_cycles_as_the_plain_search(g):
    """Goal and method: in the module docstring."""
    assert shortest_cycles(g) == shortest_cycles(g, shortcut=False)


def test_a_long_serial_history_with_forward_anti_dependencies_has_no_cycle():
    """Goal: the campaign's shape (a co chain, many rw edges forward in commit order, one
    back) finds the one G-single cycle. Method: 300 operations, every one reading at its
    start what each later one writes, plus one rw edge back along the chain."""
    n = 300
    nodes = [f"t{i}" for i in range(n)]
    g = nx.MultiDiGraph()
    for a, b in zip(nodes, nodes[1:]):
        g.add_edge(a, b, kind="co", edge=Edge(a, b, "co", "order"))
    for i in range(0, n, 10):
        for j in range(i + 1, n):
            g.add_edge(nodes[i], nodes[j], kind="rw", edge=Edge(nodes[i], nodes[j], "rw", "later"))
    assert shortest_cycles(g) == []
    g.add_edge("t200", "t150", kind="rw", edge=Edge("t200", "t150", "rw", "back"))
    (cycle,) = shortest_cycles(g)
    assert cycle[0].why == "back" and [e.kind for e in cycle[1:]] == ["co"] * 50
