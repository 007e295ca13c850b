"""The seed gate: a correct engine's verdict never depends on the seed (make conform-seeds).

    python -m mutants.seeds                        # icefloe and every variant, seeds 0..9
    python -m mutants.seeds --seeds 0,3 --only icefloe
    python -m mutants.seeds --docs                 # also rewrite the table in docs/conformance.md

For every seed, `icefloe conform --profile ci --seed N` must exit 0 on icefloe with every
family's coverage in verdict.json complete (covered == total), and every flawed variant
(`icefloe conform --list-variants`) must exit 1 naming a violated property (a VACUOUS exit
is not a kill). Each run is its own process. Exit 0 when every run meets that; 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mutants.catalog import ROOT

REPORTS = ROOT / "reports" / "seeds"
DOCS = ROOT / "docs" / "conformance.md"
BEGIN, END = "<!-- seeds:begin -->", "<!-- seeds:end -->"
ICEFLOE = "icefloe"
TIMEOUT_S = 1800
BUDGET_MARGIN_S = 180          # for the report, the shrinker's last replay and the history replay


@dataclass
class Run:
    subject: str                   # "icefloe" or a variant's name
    seed: int
    exit_code: int
    seconds: float
    violated: list = field(default_factory=list)
    vacuity: list = field(default_factory=list)
    coverage: dict = field(default_factory=dict)
    note: str = ""

    @property
    def complete(self) -> bool:
        return bool(self.coverage) and all(f["covered"] == f["total"] for f in self.coverage.values())

    @property
    def ok(self) -> bool:
        if self.subject == ICEFLOE:
            return self.exit_code == 0 and self.complete and not self.vacuity
        return self.exit_code == 1 and bool(self.violated)

    def cell(self) -> str:
        if self.subject == ICEFLOE:
            if self.ok:
                return f"pass, {sum(f['covered'] for f in self.coverage.values())} classes ({self.seconds:.0f} s)"
            return f"**FAIL** exit {self.exit_code}: {'; '.join(self.violated or self.vacuity)[:80] or self.note}"
        if self.ok:
            return f"{', '.join(p.split()[0] for p in self.violated)} ({self.seconds:.0f} s)"
        return f"**MISSED** exit {self.exit_code}{': ' + self.note if self.note else ''}"


def variants() -> list:
    done = subprocess.run([sys.executable, "-m", "icefloe.conformance.conform", "--list-variants"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


def budget_for(timeout_s: float) -> float:
    """conform's own time budget under our timeout: it ends first, with its verdict written
    (a run it cuts short says what it left unrun; one we kill says nothing)."""
    return max(60.0, timeout_s - BUDGET_MARGIN_S)


def run_one(subject: str, seed: int, profile: str, timeout_s: float) -> Run:
    report = REPORTS / subject / f"seed-{seed}"
    cmd = [sys.executable, "-m", "icefloe.conformance.conform", "--profile", profile, "--seed", str(seed),
           "--no-progress", "--report", str(report), "--time-budget", str(budget_for(timeout_s))]
    if subject != ICEFLOE:
        cmd += ["--variant", subject]
    started = time.monotonic()
    try:
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return Run(subject, seed, -1, time.monotonic() - started, note=f"timed out after {timeout_s:.0f} s")
    seconds = time.monotonic() - started
    run = Run(subject, seed, done.returncode, seconds)
    verdict = report / "verdict.json"
    if verdict.exists() and verdict.stat().st_mtime >= time.time() - seconds - 1:
        data = json.loads(verdict.read_text())
        run.violated, run.vacuity = list(data.get("violated") or []), list(data.get("vacuity") or [])
        run.coverage = dict(data.get("coverage") or {})
    if done.returncode not in (0, 1):
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        run.note = tail[0][:200]
    return run


def table(runs: list, subjects: list, seeds: list) -> str:
    cells = {(r.subject, r.seed): r for r in runs}
    lines = ["| seed | " + " | ".join(f"`{s}`" for s in subjects) + " |",
             "|---|" + "---|" * len(subjects)]
    for seed in seeds:
        lines.append(f"| {seed} | " + " | ".join(cells[(s, seed)].cell() if (s, seed) in cells else "-"
                                                 for s in subjects) + " |")
    return "\n".join(lines)


def write_docs(runs: list, subjects: list, seeds: list, profile: str, load: str) -> None:
    text = DOCS.read_text()
    bad = [r for r in runs if not r.ok]
    ice = [r for r in runs if r.subject == ICEFLOE]
    families = sorted({f for r in ice for f in r.coverage})
    coverage = ", ".join(f"{f} {ice[0].coverage[f]['total']}" for f in families if f in ice[0].coverage) if ice else ""
    body = (f"{BEGIN}\n`make conform-seeds` (`python -m mutants.seeds`), profile {profile}, seeds "
            f"{seeds[0]}..{seeds[-1]}, load average {load}: "
            + ("every run as required" if not bad else f"{len(bad)} of {len(runs)} runs NOT as required")
            + f". icefloe must exit 0 with every family covered (classes per family: {coverage}); "
            "each variant must exit 1 naming a property (the cell lists them, then the run's seconds, "
            "shrinking included).\n\n"
            f"{table(runs, subjects, seeds)}\n{END}")
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + body + text[text.index(END) + len(END):]
    else:
        text = text.rstrip() + "\n\n## Verdicts across seeds\n\n" + body + "\n"
    DOCS.write_text(text)


def render(paths: list, profile: str, load: str) -> int:
    """Rewrite the docs table from recorded runs (the later record of a subject and seed wins)."""
    cells = {}
    for path in paths:
        for record in json.loads(Path(path).read_text()):
            r = Run(**record)
            cells[(r.subject, r.seed)] = r
    runs = list(cells.values())
    order = [ICEFLOE] + variants()
    subjects = [s for s in order if any(r.subject == s for r in runs)]
    seeds = sorted({r.seed for r in runs})
    write_docs(runs, subjects, seeds, profile, load or " ".join(open("/proc/loadavg").read().split()[:3]))
    print(table(runs, subjects, seeds))
    return 0 if all(r.ok for r in runs) else 1


def _seeds(spec: str) -> list:
    if ".." in spec:
        lo, hi = spec.split("..")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in spec.split(",") if s.strip()]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m mutants.seeds", description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0..9", help="0..9 or 0,3,7 (default 0..9)")
    p.add_argument("--profile", default="ci")
    p.add_argument("--only", default="", help="comma-separated subjects (icefloe and/or variant names)")
    p.add_argument("--docs", action="store_true", help="rewrite the table in docs/conformance.md")
    p.add_argument("--timeout", type=float, default=TIMEOUT_S)
    p.add_argument("--render", nargs="+", metavar="SEEDS_JSON",
                   help="only rewrite docs/conformance.md's table from the seeds.json of earlier runs "
                        "(e.g. icefloe's and the variants' run as separate streams)")
    p.add_argument("--load", default="", help="with --render: the load average to report")
    args = p.parse_args(argv)
    if args.render:
        return render(args.render, args.profile, args.load)
    try:
        seeds = _seeds(args.seeds)
    except ValueError as e:
        print(f"seeds: {e}", file=sys.stderr)
        return 2
    subjects = [ICEFLOE] + variants()
    if args.only:
        wanted = args.only.split(",")
        unknown = set(wanted) - set(subjects)
        if unknown:
            print(f"seeds: unknown subjects {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        subjects = [s for s in subjects if s in wanted]
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    runs = []
    for subject in subjects:
        for seed in seeds:
            r = run_one(subject, seed, args.profile, args.timeout)
            runs.append(r)
            print(f"{subject} seed {seed}: {'ok' if r.ok else 'NOT AS REQUIRED'} - {r.cell()}", flush=True)
    print()
    print(table(runs, subjects, seeds))
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / "seeds.json").write_text(json.dumps([vars(r) for r in runs], indent=2) + "\n")
    if args.docs:
        write_docs(runs, subjects, seeds, args.profile, load)
    bad = [r for r in runs if not r.ok]
    print(f"\n{len(runs) - len(bad)} of {len(runs)} runs as required" +
          (": " + ", ".join(f"{r.subject}@{r.seed}" for r in bad) if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
