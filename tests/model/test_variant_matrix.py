"""The variant x property matrix of docs/variants.md: generated from the registry's `breaks`
tuples, checked against what the explorer finds, and covering P1..P10.

Regenerate the generated sections of docs/variants.md with
    .venv/bin/python tests/model/test_variant_matrix.py --write
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from icefloe.model import hudi, variants
from icefloe.model.explore import explore

DOC = Path(__file__).resolve().parents[2] / "docs" / "variants.md"
PROPS = ("P1 LinearHistory", "P2 NoLostCommit", "P3 NoDuplicateCommit", "P4 ReadersSeeCommitted",
         "P5 ValidationSound", "P6 Isolation", "P7 TimeTravelImmutable", "P8 NoDanglingRefs",
         "P9 CleanupSafe", "P10 IncrementalComplete")
SHORT = {p: p.split()[0] for p in PROPS}

# Rows of /work/shared/REGRESSIONS.md each variant reproduces (by its `#`).
REGRESSION_ROWS = {
    "correct": (),
    "no-revalidate": (8,),
    "cleanup-after-unknown": (3, 4),
    "rename-commit": (6, 10),
    "pointer-status-check": (1, 2),
    "no-lineage-check": (5,),
    "expire-deleted-entries": (9,),
    "orphans-no-threshold": (4,),
    "hive-listing": (6,),
    "hudi": (11, 12),
    "hudi-collision": (12,),
    "hudi-collision-rollback": (4, 12),
    "hudi-duplicate-keys": (11,),
    "hudi-out-of-order": (12,),
    "hudi-read-optimized": (),
    "hudi-skewed-clock": (12,),
}


def flawed():
    return [(n, v) for n, v in variants.VARIANTS.items() if v.breaks]


def found_by_explorer() -> dict:
    """name -> set of properties violated anywhere in the variant's reachable graph."""
    return {n: set(hudi.properties_broken(v.make())) for n, v in flawed()}


def render_matrix(found: dict) -> str:
    head = "| variant | " + " | ".join(SHORT[p] for p in PROPS) + " | REGRESSIONS.md rows |"
    rule = "|---" * (len(PROPS) + 2) + "|"
    lines = [head, rule]
    for name, v in variants.VARIANTS.items():
        na = getattr(sys.modules[type(v.make()).__module__], "NOT_APPLICABLE", {})
        cells = []
        for p in PROPS:
            cells.append("**X**" if p in v.breaks else "x" if p in found.get(name, ())
                         else "n/a" if p in na else "")
        rows = ", ".join(f"#{r}" for r in REGRESSION_ROWS.get(name, ())) or "-"
        lines.append(f"| `{name}` | " + " | ".join(cells) + f" | {rows} |")
    return "\n".join(lines)


def knob_results() -> list:
    out = []
    for kw in hudi.knob_grid():
        spec = hudi.make(**hudi.GRID_WORKLOAD, **kw)
        out.append((kw, {p for p in hudi.properties_broken(spec) if p in PROPS}))
    return out


def render_knob_table(results) -> str:
    head = ("| clock | cc | pk_check | put_if_absent | table_type | "
            + " | ".join(SHORT[p] for p in PROPS) + " |")
    lines = [head, "|---" * (5 + len(PROPS)) + "|"]
    for kw, broken in results:
        knobs = [kw["clock"], kw["cc"], "on" if kw["pk_check"] else "off",
                 "on" if kw["put_if_absent"] else "off", kw["table_type"]]
        lines.append("| " + " | ".join(knobs + ["X" if p in broken else "" for p in PROPS]) + " |")
    return "\n".join(lines)


def section(text: str, name: str) -> str:
    m = re.search(rf"<!-- BEGIN {name} -->\n(.*?)<!-- END {name} -->", text, re.S)
    assert m, f"docs/variants.md has no generated section {name!r}"
    return m.group(1).rstrip("\n")


def replace_section(text: str, name: str, body: str) -> str:
    return re.sub(rf"(<!-- BEGIN {name} -->\n).*?(<!-- END {name} -->)",
                  lambda m: m.group(1) + body + "\n" + m.group(2), text, flags=re.S)


@pytest.fixture(scope="module")
def found():
    return found_by_explorer()


def test_matrix_covers_every_property():
    """Goal: every one of P1..P10 is broken by some registered variant; method: union of `breaks`."""
    covered = {p for _, v in flawed() for p in v.breaks}
    assert set(PROPS) <= covered, sorted(set(PROPS) - covered)


def test_declared_breaks_are_found(found):
    """Goal: no variant claims a break the explorer cannot reach; method: whole-graph search per variant."""
    for name, v in flawed():
        assert set(v.breaks) <= found[name], (name, sorted(set(v.breaks) - found[name]))


def test_own_models_declare_exactly_what_breaks(found):
    """Goal: the Hive and Hudi entries list every property they break, no more; method: compare with the search."""
    for name, v in flawed():
        if name.startswith(("hive", "hudi")):
            assert set(v.breaks) == found[name], (name, sorted(found[name] ^ set(v.breaks)))


def test_each_variant_caught_by_a_declared_property():
    """Goal: the shortest counterexample of each flawed variant names a declared property; method: BFS."""
    for name, v in flawed():
        res = explore(v.make())
        assert res.verdict == "violated" and res.property in v.breaks, (name, res.property)


def test_doc_matrix_is_the_generated_one(found):
    """Goal: docs/variants.md shows the registry's matrix; method: regenerate and compare text."""
    assert section(DOC.read_text(), "matrix") == render_matrix(found)


def test_doc_maps_every_variant_to_regressions():
    """Goal: each registered variant has a REGRESSIONS.md mapping; method: compare registry with the map."""
    assert set(REGRESSION_ROWS) == set(variants.VARIANTS)
    assert all(1 <= r <= 12 for rows in REGRESSION_ROWS.values() for r in rows)


def test_doc_knob_table_is_the_generated_one():
    """Goal: the Hudi knob table in the doc is what the explorer finds; method: search the whole grid."""
    assert section(DOC.read_text(), "knobs") == render_knob_table(knob_results())


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: test_variant_matrix.py --write")
    text = DOC.read_text()
    text = replace_section(text, "matrix", render_matrix(found_by_explorer()))
    text = replace_section(text, "knobs", render_knob_table(knob_results()))
    DOC.write_text(text)
    print(f"wrote {DOC}")
