"""`icefloe conform merge [--report DIR] SHARD_DIR...`: the verdict of a run split with
`--shard K/N` across CI jobs, joined from the shards' verdict.json files (issue 32 item 4).

Every shard ran the same plan (engine, profile, seed: the directed programs involve no seed)
and a disjoint share of its programs, the random search in shard N only, so the joined run
is the unsharded one: the classes covered are the union of the shards' (a class is missed
only if no shard covered it and no engine's choice left its program), the counts are the
sums, and a property is violated if a shard violated it (the first such shard's
counterexample is the verdict's), unknown if a shard left it unjudged, else it holds. The
exit code follows the unsharded rule: 0 when every property holds and no reachable class
was missed, 1 otherwise, 2 when the shards do not make one run (a shard missing or twice,
different engines, profiles, seeds or shard counts).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HOLDS, VIOLATED, UNKNOWN = "holds", "violated", "unknown"
PASS, FAIL, ADAPTER_ERROR = "pass", "fail", "adapter error"
EXIT_OK, EXIT_VIOLATION, EXIT_USAGE = 0, 1, 2
MISSED_LISTED_MAX = 10
SAME = ("engine_spec", "variant", "profile", "seed")


class MergeError(Exception):
    """The given reports are not the N shards of one run."""


def load(dirs) -> list:
    shards = []
    for d in dirs:
        path = Path(d) / "verdict.json"
        try:
            v = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise MergeError(f"{path}: not a readable verdict.json ({e})") from e
        if not v.get("shard"):
            raise MergeError(f"{path}: not a shard's verdict (run with --shard K/N)")
        k, n = (int(x) for x in v["shard"].split("/"))
        shards.append((k, n, v))
    if not shards:
        raise MergeError("no shard reports given")
    n = shards[0][1]
    ks = sorted(k for k, _, _ in shards)
    if any(m != n for _, m, _ in shards) or ks != list(range(1, n + 1)):
        raise MergeError(f"the shards must be 1..N of one N, each once; got {', '.join(v['shard'] for *_, v in shards)}")
    first = shards[0][2]
    for _, _, v in shards:
        for key in SAME:
            if v.get(key) != first.get(key):
                raise MergeError(f"the shards are not one run: {key} {v.get(key)!r} != {first.get(key)!r}")
    return [v for _, _, v in sorted(shards, key=lambda s: s[0])]


def _sum(values):
    if all(isinstance(x, dict) for x in values):
        out: dict = {}
        for d in values:
            for key, x in d.items():
                out[key] = out.get(key, 0) + x
        return dict(sorted(out.items()))
    return sum(values)


def merge(shards: list) -> dict:
    """The joined verdict.json of one run's shards (load() checked they are)."""
    first = shards[0]
    counts = {key: _sum([s["counts"][key] for s in shards]) for key in first["counts"]}
    counts["writers"] = max(s["counts"]["writers"] for s in shards)
    coverage, missed = {}, []
    for family, entry in first["coverage"].items():
        classes = [s["coverage_classes"].get(family, {}) for s in shards]
        reachable = set(classes[0].get("reachable", ()))
        covered = set().union(*(set(c.get("covered", ())) for c in classes))
        left = set().union(*(set(c.get("left", ())) for c in classes))
        joined = {k: x for k, x in entry.items() if k not in ("covered", "missed")}
        joined["covered"] = len(covered)
        lost = sorted(reachable - covered - left)
        if lost:
            joined["missed"] = lost[:MISSED_LISTED_MAX]
            missed += [f"class {c} of {family} not exercised" for c in lost]
        coverage[family] = joined
    violating = next((s for s in shards if s["violated"]), None)
    erring = next((s for s in shards if s.get("adapter_error")), None)
    properties = {}
    for prop in first["properties"]:
        states = [s["properties"][prop] for s in shards]
        properties[prop] = VIOLATED if VIOLATED in states else UNKNOWN if UNKNOWN in states else HOLDS
    vacuity = [why for s in shards for why in s.get("vacuity", [])]
    if violating is None and erring is None:
        vacuity += missed[:MISSED_LISTED_MAX]
    verdict = FAIL if violating is not None else ADAPTER_ERROR if erring is not None else FAIL if vacuity else PASS
    source = violating or erring or first
    return {
        **{key: first.get(key) for key in ("engine", "engine_spec", "variant", "profile", "seed", "commit",
                                           "interleaving", "capabilities", "expected_rules")},
        "verdict": verdict, "properties": properties, "violated": sorted(violating["violated"]) if violating else [],
        "vacuity": vacuity, "counts": counts, "coverage": coverage,
        "elapsed_s": round(sum(s["elapsed_s"] for s in shards), 2),
        "elapsed_s_longest_shard": max(s["elapsed_s"] for s in shards),
        "rerun": first["rerun"].rsplit(" --shard", 1)[0],
        "counterexample": source.get("counterexample") if violating else None,
        "history_verdict": source.get("history_verdict") if violating else None,
        "adapter_error": erring.get("adapter_error") if erring else None,
        "merged_from": [s["shard"] for s in shards],
        "commits_of_shards": sorted({s.get("commit") for s in shards}),
    }


def line(v: dict) -> str:
    c = v["counts"]
    ran = (f"{c['examples']} examples, {c['steps']} steps, {c['commits']} commits, "
           f"{len(v['merged_from'])} shards")
    if v["verdict"] == PASS:
        held = sum(x == HOLDS for x in v["properties"].values())
        return f"OK: {v['engine']}: {held} of {len(v['properties'])} properties hold ({ran})"
    if v["verdict"] == ADAPTER_ERROR:
        return f"FAILED: {v['engine']}: ADAPTER ERROR ({v['adapter_error']['where']}) ({ran}); rerun: {v['rerun']}"
    if v["violated"]:
        return f"FAILED: {v['engine']} violates {', '.join(v['violated'])} ({ran}); rerun: {v['rerun']}"
    return f"FAILED: {v['engine']}: the run proved too little: {'; '.join(v['vacuity'][:MISSED_LISTED_MAX])} ({ran})"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="icefloe conform merge",
                                description="Join the report directories of one run's --shard K/N runs.")
    p.add_argument("--report", default="reports/conform", help="where the joined verdict.json goes")
    p.add_argument("shards", nargs="+", help="the shards' report directories")
    args = p.parse_args(argv)
    try:
        joined = merge(load(args.shards))
    except MergeError as e:
        print(f"icefloe conform merge: {e}", file=sys.stderr)
        return EXIT_USAGE
    out = Path(args.report)
    out.mkdir(parents=True, exist_ok=True)
    (out / "verdict.json").write_text(json.dumps(joined, indent=2) + "\n", encoding="utf-8")
    print(f"report: {out}/ (verdict.json, joined from {len(joined['merged_from'])} shards)")
    print(line(joined))
    return EXIT_OK if joined["verdict"] == PASS else EXIT_VIOLATION


if __name__ == "__main__":
    sys.exit(main())
