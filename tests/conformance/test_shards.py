"""`--shard K/N` splits one verdict's directed programs across jobs and `icefloe conform merge`
joins the shards into the verdict of the unsharded run: the same coverage, the same property
verdicts, the same exit code (issue 32 item 4)."""
from __future__ import annotations

import json

import pytest

from icefloe.conformance import conform
from icefloe.conformance.report import merge
from icefloe.conformance.suite.profiles import PROFILES, Profile

FAMILIES = ("orphans", "sequences")
SMALL = ("orphans",)


@pytest.fixture
def small_ci(monkeypatch):
    """ci's model, one directed family and a short random search on the memory store."""
    monkeypatch.setitem(PROFILES, "ci", Profile("ci", examples_memory=2, examples_s3=0, steps=8, families=SMALL))


@pytest.fixture
def sequences_ci(monkeypatch):
    """ci's model, the families where expire-deleted-entries is caught, no random search."""
    monkeypatch.setitem(PROFILES, "ci", Profile("ci", examples_memory=0, examples_s3=0, steps=8, families=FAMILIES))


def conform_run(tmp_path, name, *extra):
    report = tmp_path / name
    code = conform.main(["--profile", "ci", "--seed", "3", "--report", str(report), "--no-progress", *extra])
    return code, json.loads((report / "verdict.json").read_text())


def coverage_view(verdict):
    return {family: (c["covered"], c["total"], c.get("unreachable", 0), c.get("missed"))
            for family, c in verdict["coverage"].items()}


def test_shards_merge_to_the_unsharded_verdict(small_ci, tmp_path, capsys):
    """Goal: N shards of icefloe's ci run, merged, have the unsharded run's coverage, property
    verdicts, example count and exit code, and each shard ran a share only. Method: run it
    whole and as 3 shards (the orphans family and 2 random examples), then `icefloe conform merge`."""
    n = 3
    whole_code, whole = conform_run(tmp_path, "whole")
    shard_codes, shards = [], []
    for k in range(1, n + 1):
        code, v = conform_run(tmp_path, f"shard{k}", "--shard", f"{k}/{n}")
        shard_codes.append(code)
        shards.append(v)
        assert v["shard"] == f"{k}/{n}" and set(v["coverage_classes"]) == set(whole["coverage"])
    covered_by = [set(c for f in s["coverage_classes"].values() for c in f["covered"]) for s in shards]
    assert all(len(c) < sum(e["covered"] for e in whole["coverage"].values()) for c in covered_by)
    merged_code = conform.main(["merge", "--report", str(tmp_path / "merged"),
                                *[str(tmp_path / f"shard{k}") for k in range(1, n + 1)]])
    joined = json.loads((tmp_path / "merged" / "verdict.json").read_text())
    assert whole_code == conform.EXIT_OK and merged_code == whole_code, capsys.readouterr().out
    assert joined["verdict"] == whole["verdict"] == "pass"
    assert coverage_view(joined) == coverage_view(whole)
    assert joined["properties"] == whole["properties"]
    assert joined["capabilities"] == whole["capabilities"] and "append" in whole["capabilities"]["operations"]
    assert joined["counts"]["examples"] == whole["counts"]["examples"]
    assert joined["merged_from"] == [f"{k}/{n}" for k in range(1, n + 1)]


def test_a_violation_in_one_shard_fails_the_merged_verdict(sequences_ci, tmp_path, capsys):
    """Goal: a flawed variant's sharded run merges to exit 1 naming the property the unsharded
    run names. Method: the expire-deleted-entries variant (P8 in the sequences family), whole
    and as 2 shards."""
    whole_code, whole = conform_run(tmp_path, "whole", "--variant", "expire-deleted-entries")
    for k in (1, 2):
        conform_run(tmp_path, f"shard{k}", "--variant", "expire-deleted-entries", "--shard", f"{k}/2")
    merged_code = conform.main(["merge", "--report", str(tmp_path / "merged"), str(tmp_path / "shard1"),
                                str(tmp_path / "shard2")])
    joined = json.loads((tmp_path / "merged" / "verdict.json").read_text())
    assert whole_code == merged_code == conform.EXIT_VIOLATION
    assert whole["violated"] and set(joined["violated"]) == set(whole["violated"])
    assert joined["counterexample"] is not None


def test_merge_refuses_shards_of_different_runs(small_ci, tmp_path, capsys):
    """Goal: a missing shard, or shards of another seed, are a usage error (exit 2) naming what
    is wrong, never a verdict. Method: merge shard 1 of 2 alone, then with a shard of seed 4."""
    conform_run(tmp_path, "shard1", "--shard", "1/2")
    assert conform.main(["merge", "--report", str(tmp_path / "m1"), str(tmp_path / "shard1")]) == conform.EXIT_USAGE
    assert "1..N" in capsys.readouterr().err
    report = tmp_path / "other"
    conform.main(["--profile", "ci", "--seed", "4", "--report", str(report), "--no-progress", "--shard", "2/2"])
    assert conform.main(["merge", "--report", str(tmp_path / "m2"), str(tmp_path / "shard1"), str(report)]) == \
        conform.EXIT_USAGE
    assert "seed" in capsys.readouterr().err
    with pytest.raises(merge.MergeError):
        merge.load([str(tmp_path / "shard1"), str(tmp_path / "shard1")])
