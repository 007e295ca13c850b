"""Goal: every TLC configuration in tla/expected.json gives its recorded result. Method:
run TLC on each and compare exit code, violated invariant, distinct states and depth."""
from __future__ import annotations

import re

import pytest

import tlc
from abstraction import bounds_from_cfg

from icefloe.model import checks, variants
from icefloe.model.explore import explore
from icefloe.model.spec import IcebergSpec

EXPECTED = tlc.load_expected()


CONFIGS = [pytest.param(cfg, id=cfg.removesuffix(".cfg"),
                        marks=[pytest.mark.deep] if exp.get("deep") else [])
           for cfg, exp in sorted(EXPECTED.items())]


@pytest.mark.parametrize("cfg", CONFIGS)
def test_config_gives_expected_result(cfg, tlc_result):
    """Goal: TLC ends as tla/expected.json says. Method: run it, parse its output."""
    exp = EXPECTED[cfg]
    res = tlc_result(cfg)
    tail = res.output[-3000:]
    assert res.exit_code == exp["exit"], f"{res.summary()}\n{tail}"
    if exp["exit"] == tlc.EXIT_VIOLATION:
        assert res.violated == exp["invariant"], f"{res.summary()}\n{tail}"
        assert f"Invariant {exp['invariant']} is violated" in res.output
    else:
        assert res.violated is None, res.summary()
        assert "Model checking completed. No error has been found." in res.output, tail
    if "states" in exp:
        assert res.distinct_states == exp["states"], res.summary()
    if "depth" in exp:
        assert res.depth == exp["depth"], res.summary()


ICEBERG_VARIANT_CFGS = sorted(c for c, e in EXPECTED.items() if "variant" in e)


def cfg_invariants(cfg: str) -> list:
    """The invariants a .cfg asks TLC to check, in order."""
    text = (tlc.TLA_DIR / cfg).read_text()
    block = re.search(r"^INVARIANTS?\b(.*?)(?:^[A-Z]+\b|\Z)", text, re.M | re.S).group(1)
    return [w for w in block.split() if not w.startswith("\\")]


@pytest.mark.parametrize("cfg", ICEBERG_VARIANT_CFGS)
def test_variant_config_matches_model_registry(cfg):
    """Goal: a flawed variant's configuration explores the instance model/variants.py
    registers for it and expects the property the Python explorer finds broken first.
    Method: read the .cfg's constants into Bounds, compare with the registry, explore."""
    exp = EXPECTED[cfg]
    v = variants.get(exp["variant"])
    bounds = bounds_from_cfg(tlc.TLA_DIR / cfg)
    assert bounds == v.make().bounds
    assert any(b.split()[-1] == exp["invariant"] for b in v.breaks), (exp["invariant"], v.breaks)
    # The explorer checks what TLC checks (a configuration may leave a property out).
    by_name = {p.split()[-1]: p for p in checks.SAFETY_CHECKS}
    only = tuple(by_name[i] for i in cfg_invariants(cfg) if i in by_name)
    assert len(only) >= 9, only
    res = explore(IcebergSpec(bounds, only=only))
    assert res.verdict == "violated" and res.property.split()[-1] == exp["invariant"], \
        (res.property, exp["invariant"])


def test_every_iceberg_variant_has_a_failing_config():
    """Goal: no flawed Iceberg variant lacks its TLC configuration. Method: compare the
    Python registry's Iceberg-shaped variants with tla/expected.json."""
    from icefloe.model.iceberg import ICEBERG_VARIANTS
    flawed = {n for n in ICEBERG_VARIANTS if variants.get(n).breaks}
    covered = {EXPECTED[c]["variant"] for c in ICEBERG_VARIANT_CFGS}
    assert flawed == covered


def test_dump_parser_reads_tlc_values():
    """Goal: the dump parser maps every TLA+ value shape to its canonical form.
    Method: parse TLC-printed text (records, functions, sequences, sets, strings)."""
    v = tlc.parse_value('( <<0, 1, 1>> :> [ b |-> {<<"d", 1, 2, 0>>}, a |-> TRUE ] @@\n'
                        '  <<1, 1, 0>> :> [a |-> FALSE, b |-> {}] )')
    assert v == tlc.Fn(frozenset({
        ((0, 1, 1), tlc.make_record({"a": tlc.TRUE, "b": frozenset({("d", 1, 2, 0)})})),
        ((1, 1, 0), tlc.make_record({"a": tlc.FALSE, "b": frozenset()}))}))
    # A function with domain 1..n is a sequence, however it is printed.
    assert tlc.parse_value("(1 :> \"x\" @@ 2 :> \"y\")") == tlc.parse_value('<<"x", "y">>') == ("x", "y")
    assert tlc.parse_value("<<>>") == () and tlc.parse_value("{}") == frozenset()
    assert tlc.parse_value("<< <<1>>, {2, 3} >>") == ((1,), frozenset({2, 3}))
    assert tlc.parse_value("TRUE") != 1 and tlc.parse_value("-3") == -3
    with pytest.raises(ValueError):
        tlc.parse_value("[a |-> 1")


def test_tlc_runs_do_not_share_java_tmpdir(tmp_path, monkeypatch):
    """Goal: a TLC run never reads the standard modules another run unpacked: SANY copies
    Naturals.tla (and the rest) into java.io.tmpdir and deletes them at exit, so runs on
    two xdist workers sharing /tmp failed 2 times in 18 ("Cannot find source file for
    module Naturals", exit 150). Method: make the inherited java.io.tmpdir unusable (a
    directory where Naturals.tla would go); run_tlc must still give the recorded result."""
    poisoned = tmp_path / "shared-tmp"
    (poisoned / "Naturals.tla").mkdir(parents=True)
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", f"-Djava.io.tmpdir={poisoned}")
    cfg = "MCIcebergCommit_stale_sequence_number_on_retry.cfg"
    res = tlc.run_tlc(cfg, EXPECTED[cfg]["module"], n_workers=1)
    assert (res.exit_code, res.violated) == (EXPECTED[cfg]["exit"], EXPECTED[cfg]["invariant"]), \
        f"{res.summary()}\n{res.output[-2000:]}"
