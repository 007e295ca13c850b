"""The house as drawn from its own imports (issue 28): no import cycle anywhere in the project,
conformance/ as rooms (packages by concern, at most 20 modules at its top, each package saying
what it is for and may import), the engine author's contract importing none of the harness."""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_ROOTS = {"impl": "icefloe.impl", "model": "icefloe.model", "conformance": "icefloe.conformance"}
TOP_MODULES_MAX = 20


def _module_of(path: Path, root: Path) -> str:
    top, *rest = path.relative_to(root).with_suffix("").parts
    parts = [PACKAGE_ROOTS[top], *rest]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path) -> dict:
    return {_module_of(p, root): p for top in PACKAGE_ROOTS for p in sorted((root / top).rglob("*.py"))}


def _imported(node, known: dict) -> list:
    """The project modules an import statement names, as text does: `from a.b import c` is
    a.b.c when c is a module, else a.b. Imports inside functions and under TYPE_CHECKING
    count too: a cycle deferred to run time is still a cycle in the house."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in known]
    if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
        return []
    out = []
    for a in node.names:
        sub = f"{node.module}.{a.name}"
        if sub in known:
            out.append(sub)
        elif node.module in known:
            out.append(node.module)
    return out


def import_graph(root: Path = ROOT) -> nx.DiGraph:
    known = _modules(root)
    g = nx.DiGraph()
    g.add_nodes_from(known)
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            for target in _imported(node, known):
                # a package's own __init__ importing its children, or a module its package, is
                # not an arrow between rooms
                if target != module and not target.startswith(module + ".") and not module.startswith(target + "."):
                    g.add_edge(module, target)
    return g


def test_no_import_cycle_anywhere():
    """Goal: dependencies point one way in every corner of impl, model and the suite (the 5
    cycles of issue 28 stay gone). Method: every import statement as an edge between the
    project's modules; networkx finds the cycles."""
    g = import_graph()
    assert g.number_of_edges() > 300            # the graph is real: the project has hundreds of arrows
    cycles = sorted(sorted(c) for c in nx.simple_cycles(g))
    assert not cycles, cycles


def test_the_graph_finds_a_planted_cycle(tmp_path):
    """Goal: the cycle test can fail. Method: two modules that import each other (one of them
    inside a function), laid out as a project, make one cycle."""
    for top in PACKAGE_ROOTS:
        (tmp_path / top).mkdir()
    (tmp_path / "conformance" / "a.py").write_text("from icefloe.conformance import b\n")
    (tmp_path / "conformance" / "b.py").write_text("def f():\n    import icefloe.conformance.a\n")
    cycles = list(nx.simple_cycles(import_graph(tmp_path)))
    assert sorted(map(sorted, cycles)) == [["icefloe.conformance.a", "icefloe.conformance.b"]]


def test_conformance_is_rooms():
    """Goal: conformance/ has at most 20 modules at its top; every package under it says in its
    __init__ docstring what it is for and what it may import. Method: list the folder; read
    each package's docstring."""
    top = sorted(p.name for p in (ROOT / "conformance").glob("*.py"))
    assert len(top) <= TOP_MODULES_MAX, top
    for package in sorted(p.parent for p in (ROOT / "conformance").rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
        assert len(doc) > 80, f"{package.relative_to(ROOT)}: its __init__ says nothing of what it is for"
        if package != ROOT / "conformance" and package.name not in ("engines", "testing"):
            assert "May import" in doc, f"{package.relative_to(ROOT)}: its __init__ does not say what it may import"


def test_each_room_imports_only_what_its_door_says():
    """Goal: the rooms' docstrings are true: a package that says it never imports another does
    not. Method: the "Never imports:" line of each package docstring against the import graph."""
    g = import_graph()
    broken = []
    for init in sorted((ROOT / "conformance").glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        if "Never imports:" not in doc:
            continue
        line = doc.split("Never imports:")[1].split(".\n")[0].split("\n\n")[0]
        never = [w.strip(" ,.").split(" ")[0] for w in line.replace("\n", " ").split(",")]
        room = f"icefloe.conformance.{init.parent.name}"
        for module, target in g.edges:
            if module == room or module.startswith(room + "."):
                for other in never:
                    if other and (target == f"icefloe.conformance.{other}"
                                  or target.startswith(f"icefloe.conformance.{other}.")):
                        broken.append(f"{module} -> {target}")
    assert not broken, broken


def test_the_adapter_is_the_contract_only():
    """Goal: adapter.py is what an engine author implements or calls, and imports nothing of the
    harness (testing/, the suite, engine loading). Method: its imports in the graph."""
    g = import_graph()
    harness = [t for t in g.successors("icefloe.conformance.adapter") if t.startswith("icefloe.conformance.")]
    assert harness == [], harness
