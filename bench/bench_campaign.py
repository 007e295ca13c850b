"""Concurrency campaigns: writer processes racing on one table on moto S3 through the fault
proxy (icefloe.conformance.campaign.run), with the seeded fault plan and without it."""
from __future__ import annotations

from icefloe.conformance.campaign.run import run_campaign

TITLE = "Concurrency campaigns: commits/s, retries and faults, 4 processes x 25 operations"
SEED = 1


def _row(label: str, r) -> str:
    faults = sum(r.faults.values())
    unknown = r.outcomes.get("unknown", 0)
    state = {True: "valid", False: "INVALID", None: "unknown"}[r.valid]
    return (f"| {label} | {r.processes} x {r.commits} | {r.committed} | {r.elapsed_s:.1f} | "
            f"{r.commits_per_s:.2f} | {r.retries} | {r.outcomes.get('conflict', 0)} | {unknown} | "
            f"{faults} | {r.requests} | {state} |")


def run(quick: bool) -> str:
    processes, commits = (2, 5) if quick else (4, 25)
    runs = [("S3 catalog, faults off", run_campaign(processes, commits, SEED, faults=False)),
            ("S3 catalog, faults on", run_campaign(processes, commits, SEED, faults=True)),
            ("SQLite catalog, faults on", run_campaign(processes, commits, SEED, faults=True,
                                                       catalog="sqlite"))]
    by = dict(runs)
    off, on = by["S3 catalog, faults off"], by["S3 catalog, faults on"]
    lines = [
        "Each campaign spawns the writer processes, starts them together and times them from",
        "that start to the last writer's end; the operation mix is 55% appends, 20% overwrites",
        "by partition filter, 15% compactions and 10% rollbacks, with the commit retry",
        f"properties `{'`, `'.join('commit.retry.' + k for k in ('num-retries=30', 'min-wait-ms=2', 'max-wait-ms=100'))}`.",
        "Every campaign below was judged afterwards by the history checker and the row replay",
        f"(last column). Seed {SEED}; the interleaving is the machine's, so figures vary run to run.",
        "There is no peer in this table: the interleaving differs per run, and pyiceberg has",
        "no compaction; contention against pyiceberg is the `contention` benchmark.",
        "",
        "| campaign | processes x ops | commits | seconds | commits/s | retries | conflicts | unknown | faults injected | S3 requests | judged |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *(_row(label, r) for label, r in runs),
        "",
        f"Faults on / faults off, commits/s: {on.commits_per_s / off.commits_per_s:.2f}"
        if off.commits_per_s else "Faults off committed nothing; no ratio.",
        "",
        "Faults injected (S3 catalog, faults on), by kind: "
        + (", ".join(f"`{k}` {v}" for k, v in sorted(on.faults.items())) or "none") + ".",
        "Outcomes (S3 catalog, faults on): "
        + ", ".join(f"{k} {v}" for k, v in sorted(on.outcomes.items())) + "; unknown resolved after healing: "
        + (", ".join(f"{k} {v}" for k, v in sorted(on.unknown_resolved.items())) or "none") + ".",
    ]
    return "\n".join(lines)
