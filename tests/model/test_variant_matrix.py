"""The variant x property matrix of docs/variants.md: generated from the registry's `breaks`
tuples, checked against what the explorer finds, and covering P1..P10.

Regenerate the generated sections of docs/variants.md with
    .venv/bin/python tests/model/test_variant_matrix.py --write
and compare the TLA+ and Python Hudi models' state counts over the whole knob grid with
    .venv/bin/python tests/model/test_variant_matrix.py --tla-grid
"""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from icefloe.model import checks, hudi, v3, variants
from icefloe.model.checks import v3 as v3_checks
from icefloe.model.explore import explore

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "variants.md"
TLA = ROOT / "tla"
OWN_TLA_MODULES = ("MCHive.tla", "MCHudi.tla")
TLC_TIMEOUT_S = 300
PROPS = tuple(checks.SAFETY_CHECKS)          # "P1 LinearHistory" .. "P10 IncrementalComplete"
# The format v3 properties (model/checks/v3.py): only the v3 model reads them.
V3_PROPS = tuple(p for p in v3_checks.SAFETY_CHECKS if p not in PROPS)     # P11 .. P14
MATRIX_PROPS = tuple(p for p in PROPS if p.startswith("P")) + V3_PROPS + tuple(p for p in PROPS if p[0] != "P")
SHORT = {p: p.split()[0] for p in MATRIX_PROPS}

# Rows of /work/shared/REGRESSIONS.md each variant reproduces (by its `#`).
REGRESSION_ROWS = {
    "correct": (),
    "no-revalidate": (8,),
    "cleanup-after-unknown": (3, 4),
    "rename-commit": (6, 10),
    "pointer-status-check": (1, 2),
    "no-lineage-check": (5,),
    "expire-deleted-entries": (9,),
    "orphans-no-threshold": (),          # maintenance, not a listed bug (see the invariants line)
    "row-delete-ignores-concurrent-deletes": (),   # Vanlightly's Iceberg model (docs/merge-on-read-anomaly.md)
    "rewrite-ignores-new-deletes": (8,),
    "rewrite-takes-new-sequence": (8,),
    "stale-sequence-number-on-retry": (),  # a mutant of our own retry (issue 11), no listed bug
    "expire-keeps-main-only": (9,),
    "validation-ignores-partitions": (),   # a liveness finding: disjoint partitions abort
    "branch-commit-on-main": (),
    "hive-listing": (6,),
    "hudi": (11, 12),
    "hudi-collision": (12,),
    "hudi-collision-rollback": (4, 12),
    "hudi-duplicate-keys": (11,),
    "hudi-out-of-order": (12,),
    "hudi-read-optimized": (),
    "hudi-skewed-clock": (12,),
    # Format v3 (model/v3.py): 2026 bugs not in REGRESSIONS.md (docs/variants.md names each).
    "v3-correct": (),
    "stale-first-row-id-on-retry": (),     # apache/iceberg-go #1021 (review)
    "replacement-dv-keeps-old": (),        # apache/iceberg-go #1868
    "dv-validation-over-window": (),       # apache/iceberg #17764
    "merge-over-overwrite-dv": (),         # apache/iceberg #17754
    "dv-seeded-from-start": (),            # apache/iceberg-go #1419 (review)
    "dv-ignores-position-deletes": (),     # the table spec's merge rule for upgraded tables
}


def flawed():
    return [(n, v) for n, v in variants.VARIANTS.items() if v.breaks]


def own():
    """The Hive and Hudi entries (the Iceberg-shaped ones have their own tests)."""
    return [(n, v) for n, v in flawed() if n.startswith(("hive", "hudi"))]


def found_by_explorer() -> dict:
    """name -> set of properties violated anywhere in the variant's reachable graph."""
    return {n: set(hudi.properties_broken(v.make())) for n, v in own()}


def render_matrix() -> str:
    head = "| variant | " + " | ".join(SHORT[p] for p in MATRIX_PROPS) + " | REGRESSIONS.md rows |"
    rule = "|---" * (len(MATRIX_PROPS) + 2) + "|"
    lines = [head, rule]
    for name, v in variants.VARIANTS.items():
        module = sys.modules[type(v.make()).__module__]
        na = getattr(module, "NOT_APPLICABLE", {})
        cells = []
        for p in MATRIX_PROPS:
            v3_only = p in V3_PROPS and module is not v3
            cells.append("X" if p in v.breaks else "n/a" if p in na or v3_only else "")
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
    """Goal: every one of P1..P14 and L3 is broken by some registered variant; method: union of `breaks`."""
    covered = {p for _, v in flawed() for p in v.breaks}
    assert set(MATRIX_PROPS) <= covered, sorted(set(MATRIX_PROPS) - covered)


def test_own_models_declare_exactly_what_breaks(found):
    """Goal: the Hive and Hudi entries list every property they break, no more; method: compare with the search."""
    assert len(found) >= 8
    for name, v in own():
        assert set(v.breaks) == found[name], (name, sorted(found[name] ^ set(v.breaks)))


def test_each_variant_caught_by_a_declared_property():
    """Goal: the shortest counterexample of each Hive/Hudi variant names a declared property; method: BFS."""
    for name, v in own():
        res = explore(v.make())
        assert res.verdict == "violated" and res.property in v.breaks, (name, res.property)


def test_cli_names_a_violated_property_for_each_own_variant(capsys):
    """Goal: `--variant NAME` exits 1 naming a property, with the explorer's own options; method: call main()."""
    from icefloe.model import explore as cli
    assert cli.main(["--list-variants"]) == 0
    assert {n for n, _ in own()} <= set(capsys.readouterr().out.split())
    for name, v in own():
        assert cli.main(["--variant", name]) == 1, name
        out = capsys.readouterr().out
        assert any(f"VIOLATION of {p}:" in out for p in v.breaks), name
    assert cli.main(["--variant", "hudi", "--writers", "3", "--ops", "2"]) == 1


def test_doc_matrix_is_the_generated_one():
    """Goal: docs/variants.md shows the registry's matrix; method: regenerate and compare text."""
    assert section(DOC.read_text(), "matrix") == render_matrix()


def test_doc_maps_every_variant_to_regressions():
    """Goal: each registered variant has a REGRESSIONS.md mapping; method: compare registry with the map."""
    assert set(REGRESSION_ROWS) == set(variants.VARIANTS)
    assert all(1 <= r <= 12 for rows in REGRESSION_ROWS.values() for r in rows)


def test_doc_knob_table_is_the_generated_one():
    """Goal: the Hudi knob table in the doc is what the explorer finds; method: search the whole grid."""
    assert section(DOC.read_text(), "knobs") == render_knob_table(knob_results())


def own_tlc_entries() -> dict:
    expected = json.loads((TLA / "expected.json").read_text())
    return {cfg: e for cfg, e in expected.items() if e["module"] in OWN_TLA_MODULES}


def tlc_runner():
    """tests/tla/tlc.py, the shared TLC runner (a test helper, not a package: load it by path)."""
    name = "icefloe_tests_tlc"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "tla" / "tlc.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)   # dataclasses look it up
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def variant_of(cfg: str) -> str | None:
    """MCHudi_out_of_order.cfg -> hudi-out-of-order (None: a property-specific or control config)."""
    prefix, stem = cfg.removesuffix(".cfg").split("_", 1)
    name = {"MCHive": "hive-", "MCHudi": "hudi-"}[prefix] + stem.replace("_", "-")
    name = "hudi" if name == "hudi-default" else name
    return name if name in variants.VARIANTS else None


def cfg_invariants(cfg: str) -> set:
    """The invariants a .cfg asks TLC to check (INVARIANT or INVARIANTS, one per line)."""
    text = (TLA / cfg).read_text()
    block = re.search(r"^INVARIANTS?\b(.*)", text, re.M | re.S).group(1)
    return {w for w in block.split() if not w.startswith("\\")}


def test_every_own_config_has_an_expected_result():
    """Goal: each MCHive*/MCHudi* config is recorded in tla/expected.json; method: compare file lists."""
    cfgs = {p.name for p in TLA.glob("MCHive*.cfg")} | {p.name for p in TLA.glob("MCHudi*.cfg")}
    assert cfgs and cfgs == set(own_tlc_entries())
    assert {variant_of(c) for c in cfgs} >= {n for n, _ in own()}


@pytest.mark.parametrize("cfg", sorted(c for c in own_tlc_entries() if variant_of(c)))
def test_tlc_config_agrees_with_the_python_model(cfg):
    """Goal: TLC and the Python explorer fail a variant alike (invariant, trace length); method: run both."""
    # tests/tla/test_tlc_configs.py runs every config; this adds the comparison with Python.
    # run_tlc gives every TLC run its own java.io.tmpdir (tests/tla/tlc.py).
    e = own_tlc_entries()[cfg]
    res = tlc_runner().run_tlc(cfg, e["module"], n_workers=1, timeout_s=TLC_TIMEOUT_S)
    assert (res.exit_code, res.violated) == (e["exit"], e.get("invariant")), res.summary()
    checked = cfg_invariants(cfg)
    py = explore(replace(variants.get(variant_of(cfg)).make(),
                         only=tuple(p for p in PROPS if p.split()[1] in checked)))
    assert py.property.split()[1] == e["invariant"], (cfg, py.property)
    steps = len(re.findall(r"^State \d+:", res.output, re.M)) - 1
    assert steps == len(py.trace) - 1, (cfg, steps, len(py.trace) - 1)


def test_tlc_controls_have_the_python_state_counts():
    """Goal: the passing controls explore as many states in TLA+ as in Python; method: compare with expected.json."""
    controls = {
        "MCHive_lone.cfg": variants.get("hive-listing").make(
            writers=1, ops=2, kinds=("append",), append_files=1, reads=0),
        "MCHive_appends.cfg": variants.get("hive-listing").make(
            writers=2, ops=2, kinds=("append",), append_files=1, reads=1),
        "MCHudi_safe.cfg": variants.get("hudi").make(
            kinds=("insert", "append", "update"), cc="pessimistic", pk_check=True, put_if_absent=True),
    }
    for cfg, spec in controls.items():
        res = explore(spec)
        assert res.verdict == "holds" and res.states == own_tlc_entries()[cfg]["states"], cfg


def reachable_states(spec) -> int:
    init = spec.initial()
    seen, frontier = {hash(x) for x in init}, list(init)
    while frontier:
        nxt = []
        for x in frontier:
            for _, t in spec.successors(x):
                if hash(t) not in seen:
                    seen.add(hash(t))
                    nxt.append(t)
        frontier = nxt
    return len(seen)


def compare_tla_grid() -> int:
    """A long check (about 4 minutes), not part of the suite: TLC and the Python model reach
    the same number of distinct states on every knob setting of the grid workload."""
    import shutil
    import tempfile
    mismatches = 0
    for kw in hudi.knob_grid():
        py = reachable_states(hudi.make(**hudi.GRID_WORKLOAD, **kw))
        with tempfile.TemporaryDirectory() as d:
            for m in ("HudiTimeline.tla", "MCHudi.tla"):
                shutil.copy(TLA / m, d)
            Path(d, "grid.cfg").write_text(
                "CONSTANTS\n    Writers <- MC_Writers2\n    Ops = 1\n    Kinds <- MC_AllKinds\n"
                f'    Clock = "{kw["clock"]}"\n    CC = "{kw["cc"]}"\n'
                f"    PkCheck = {str(kw['pk_check']).upper()}\n"
                f"    PutIfAbsent = {str(kw['put_if_absent']).upper()}\n"
                f'    TableType = "{kw["table_type"]}"\n    Compactions = {kw["compactions"]}\n'
                "INIT Init\nNEXT Next\n")
            jar = Path(tlc_runner().tla2tools_jar())
            out = subprocess.run(
                ["java", f"-Djava.io.tmpdir={d}", "-cp", str(jar), "tlc2.TLC", "-workers", "1",
                 "-metadir", f"{d}/meta", "-config", "grid.cfg", "MCHudi.tla"],
                cwd=d, capture_output=True, text=True, timeout=TLC_TIMEOUT_S).stdout
        m = re.search(r"^\d+ states generated, (\d+) distinct states found, 0 states left", out, re.M)
        tlc = int(m.group(1)) if m else None
        mismatches += tlc != py
        print(f"{'ok  ' if tlc == py else 'DIFF'} {kw} python {py} tlc {tlc}", flush=True)
    return mismatches


if __name__ == "__main__":
    if sys.argv[1:] == ["--tla-grid"]:
        sys.exit(1 if compare_tla_grid() else 0)
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: test_variant_matrix.py --write | --tla-grid")
    text = DOC.read_text()
    text = replace_section(text, "matrix", render_matrix())
    text = replace_section(text, "knobs", render_knob_table(knob_results()))
    DOC.write_text(text)
    print(f"wrote {DOC}")
