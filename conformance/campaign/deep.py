"""The deep fault campaign (issue 14 item 8; `make campaign-deep`): 16 writer processes x 100
operations on one table under the deep fault plan (icefloe.conformance.campaign.faults), once
with the S3 pointer catalog on moto and once with the PostgreSQL catalog (files on moto
through the same proxy), each judged by the history checker; then the figures of both parts
go to docs/campaigns.md, between its `campaign-deep` markers.

Resumable by part: each part's result is written to `reports/campaigns/deep-<catalog>.json`
when it ends, with its configuration; a later run with the same configuration reuses it
instead of running the part again (`--force` runs it anyway, `--part` runs one part). A
shared 2-core machine takes a long time over a part, so run it with `nice` (the make target
does).

A budget (`--fault-budget N` faults per part, `--time-budget S` seconds per part) tells the
writers to start no new operation once it is spent (icefloe.conformance.campaign.budget):
the run then has 16 writer processes with fewer than 100 operations each, sized to the
fault target by the proxy's own count, and the figures say so. Either way a progress line
is printed every minute.

Targets (the issue's): at least 100,000 injected faults over all kinds in the campaign, at
least 100 Unknown outcomes resolved each way (landed, not landed), and 0 lost, 0 duplicated,
0 dangling, 0 dirty. Exit 0 when every part is valid and the targets are met, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time
from collections import Counter
from pathlib import Path

from icefloe.conformance.campaign.run import run_campaign
from icefloe.conformance.campaign.budget import Budget
from icefloe.conformance.campaign.faults import DEEP
from icefloe.conformance.campaign.judge import COMMITTED, CONFLICT, UNKNOWN

PARTS = ("s3", "postgresql")
FAULTS_MIN = 100_000
UNKNOWN_EACH_WAY_MIN = 100
RESULT_TIMEOUT_S = 6 * 3600.0   # the writers of one part, on a loaded 2-core machine
BEGIN, END = "<!-- campaign-deep:begin -->", "<!-- campaign-deep:end -->"


def part_config(catalog: str, processes: int, commits: int, seed: int, budget: Budget | None = None) -> dict:
    config = {"catalog": catalog, "processes": processes, "commits": commits, "seed": seed, "plan": DEEP}
    if budget is not None and budget.bounded:
        config["budget"] = {"faults": budget.faults, "seconds": budget.seconds}
    return config


def run_part(catalog: str, processes: int, commits: int, seed: int, out: Path, force: bool,
             budget: Budget | None = None) -> dict:
    """One part's figures: from its report when one with this configuration exists (resume),
    else from a fresh run, written to the report as soon as it ends."""
    config = part_config(catalog, processes, commits, seed, budget)
    path = out / f"deep-{catalog}.json"
    if path.exists() and not force:
        saved = json.loads(path.read_text())
        if saved.get("config") == config:
            print(f"campaign-deep: {catalog}: reusing {path} (from {saved.get('finished', '?')}; --force reruns)")
            return saved
    print(f"campaign-deep: {catalog}: {processes} processes x {commits} operations, seed {seed} ...", flush=True)
    started = time.time()
    result = run_campaign(processes, commits, seed, faults=True, catalog=catalog, plan=DEEP,
                          result_timeout_s=RESULT_TIMEOUT_S, budget=budget or Budget(),
                          label=f"campaign-deep: {catalog}")
    print(result.summary(), flush=True)
    saved = {"config": config, "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
             "wall_s": time.time() - started, "cpus": os.cpu_count(), **result.to_json()}
    del saved["verdict"]["lineage"]  # thousands of locations; the judgement is in the counts
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(saved, indent=1, default=str))
    with open(out / f"deep-{catalog}.evidence.pickle", "wb") as f:  # to judge again without rerunning
        pickle.dump(result.evidence, f)
    return saved


def totals(parts: list) -> dict:
    faults = Counter()
    for p in parts:
        faults.update(p["faults"])
    resolved = Counter()
    tally = Counter()
    for p in parts:
        resolved.update(p["unknown_resolved"])
        tally.update(p["tally"])
    return {"faults": dict(faults), "faults_injected": sum(faults.values()), "unknown_resolved": dict(resolved),
            "tally": dict(tally), "valid": all(p["valid"] is True for p in parts),
            "read_errors": sum(p.get("read_errors", 0) for p in parts),
            "operations": sum(sum(p["outcomes"].values()) for p in parts)}


def targets_met(t: dict) -> dict:
    r = t["unknown_resolved"]
    return {f"faults >= {FAULTS_MIN:,}": t["faults_injected"] >= FAULTS_MIN,
            f"Unknown resolved landed >= {UNKNOWN_EACH_WAY_MIN}": r.get(COMMITTED, 0) >= UNKNOWN_EACH_WAY_MIN,
            f"Unknown resolved not landed >= {UNKNOWN_EACH_WAY_MIN}": r.get(CONFLICT, 0) >= UNKNOWN_EACH_WAY_MIN,
            "0 lost, 0 duplicated, 0 dangling, 0 dirty, valid": t["valid"] and not any(t["tally"].values())}


def render(parts: list) -> str:
    t = totals(parts)
    met = targets_met(t)
    p0 = parts[0]
    lines = [BEGIN, "",
             f"Last run: {', '.join(p['finished'] for p in parts)}; {_command(p0)} "
             f"({p0['processes']} processes x {p0['commits']} operations per part, seed {p0['seed']}, "
             f"deep plan, serializable; {p0.get('cpus', '?')} cores shared with other work, load averages below).",
             *[f"{p['catalog']} part stopped early: the writers started no new operation after "
               f"{p['stopped_at_s']:.0f} s ({p['stopped']}), so each ended {min(p['ops_per_writer'])} to "
               f"{max(p['ops_per_writer'])} operations, not {p['commits']}." for p in parts if p.get("stopped")],
             "",
             "| part | operations | committed | conflict | unknown (landed / not / open) | failed | retries "
             "| faults injected | S3 requests | writers' wall s | judge s | load (1 min) | judged |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in parts:
        o, r = p["outcomes"], p["unknown_resolved"]
        lines.append(
            f"| {p['catalog']} catalog | {sum(o.values())} | {o.get('committed', 0)} | {o.get('conflict', 0)} | "
            f"{o.get(UNKNOWN, 0)} ({r.get(COMMITTED, 0)} / {r.get(CONFLICT, 0)} / {r.get(UNKNOWN, 0)}) | "
            f"{o.get('failed', 0)} | {p['retries']} | {p['faults_injected']:,} | {p['requests']:,} | "
            f"{p['elapsed_s']:.0f} | {p['judge_s']:.0f} | {p['load_avg'][0] if p['load_avg'] else '?'} | "
            f"{'valid' if p['valid'] is True else 'INVALID' if p['valid'] is False else 'unknown'} |")
    r = t["unknown_resolved"]
    lines += ["",
              f"In all: {t['operations']:,} operations, **{t['faults_injected']:,} injected faults**, "
              f"**{r.get(COMMITTED, 0)} Unknown outcomes resolved landed and {r.get(CONFLICT, 0)} resolved "
              f"not landed** ({r.get(UNKNOWN, 0)} still open after healing). Judged: "
              + ", ".join(f"{v} {k}" for k, v in t["tally"].items()) + ". Reads the writers gave up on after "
              f"their retries (a read after an operation, or a rollback's file sets, recorded as unknown): "
              f"{t['read_errors']}.",
              "",
              "Faults by kind (both parts; `unresolved:*` and `sql:*` are the schedules that keep an outcome "
              "unknown, `blackout:503` and `sql:blackout` the read-backs they fail):",
              "",
              "| fault | injected |", "|---|---|"]
    for k, v in sorted(t["faults"].items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"| `{k}` | {v:,} |")
    lines += ["", "Targets: " + "; ".join(f"{k}: {'met' if ok else 'NOT met'}" for k, ok in met.items()) + ".",
              "", "Rerun one part: " + "; ".join(f"`{p['rerun']}`" for p in parts) + ".", "", END]
    return "\n".join(lines)


def _command(part: dict) -> str:
    """How the figures were made: the make target, or the module with the part's budget."""
    b = part.get("config", {}).get("budget") or {}
    args = ([f"--time-budget {b['seconds']:g}"] if b.get("seconds") else []) + \
        ([f"--fault-budget {b['faults']}"] if b.get("faults") else [])
    return f"`python -m icefloe.conformance.campaign.deep {' '.join(args)}`" if args else "`make campaign-deep`"


def write_docs(docs: Path, text: str) -> None:
    current = docs.read_text() if docs.exists() else "# Campaigns\n"
    if BEGIN in current and END in current:
        head, rest = current.split(BEGIN, 1)
        current = head + text + rest.split(END, 1)[1]
    else:
        current = current.rstrip("\n") + "\n\n## The deep campaign: figures\n\n" + text + "\n"
    docs.write_text(current)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=16)
    ap.add_argument("--commits", type=int, default=100, help="operations per process")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--part", choices=PARTS, action="append", help="run only this part (repeatable)")
    ap.add_argument("--force", action="store_true", help="rerun parts that have a report")
    ap.add_argument("--fault-budget", type=int, default=None,
                    help="per part: writers start no new operation once the proxy injected this many faults")
    ap.add_argument("--time-budget", type=float, default=None,
                    help="per part: writers start no new operation after this many seconds")
    ap.add_argument("--out", type=Path, default=Path("reports/campaigns"))
    ap.add_argument("--docs", type=Path, default=Path("docs/campaigns.md"))
    args = ap.parse_args(argv)
    try:
        args.budget = Budget(args.fault_budget, args.time_budget)
    except ValueError as e:
        ap.error(str(e))
    parts = [run_part(c, args.processes, args.commits, args.seed, args.out, args.force or bool(args.part), args.budget)
             if (not args.part or c in args.part) else _saved(c, args, args.out)
             for c in PARTS]
    parts = [p for p in parts if p is not None]
    if len(parts) < len(PARTS):
        print("campaign-deep: not every part has a report yet; docs not written")
        return 1
    text = render(parts)
    write_docs(args.docs, text)
    print(text)
    t = totals(parts)
    return 0 if all(targets_met(t).values()) else 1


def _saved(catalog: str, args, out: Path) -> dict | None:
    path = out / f"deep-{catalog}.json"
    if not path.exists():
        return None
    saved = json.loads(path.read_text())
    config = part_config(catalog, args.processes, args.commits, args.seed, args.budget)
    return saved if saved.get("config") == config else None


if __name__ == "__main__":
    sys.exit(main())
