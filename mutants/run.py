"""The mutation gate: every curated mutant against `icefloe conform` (make mutants).

    python -m mutants.run                      # all mutants, conform --profile ci --seed 0
    python -m mutants.run NAME ...             # some of them
    python -m mutants.run --seeds 0,1,2        # a mutant counts as killed by conform only if
                                               # every seed kills it (one outside the model's
                                               # areas runs at the first seed only)
    python -m mutants.run --list | --check     # the catalog; check every snippet applies
    python -m mutants.run --docs               # also rewrite the kill table in docs/conformance.md

Each mutant runs in its own process (mutants/hook.py), so nothing in the tree changes.
Killed by conform: the run exits 1 naming a violated property (a VACUOUS run is not a
kill). A mutant conform lets through is run against the unit tests of its area, and the
table names the first test that fails. Exit 0 when every mutant in an area the model
covers is killed by conform at every seed; 1 otherwise; 2 on a usage error.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mutants.catalog import MUTANTS, ROOT, Mutant, SnippetError, by_name
from mutants.seeds import budget_for

REPORTS = ROOT / "reports" / "mutants"
DOCS = ROOT / "docs" / "conformance.md"
BEGIN, END = "<!-- mutants:begin -->", "<!-- mutants:end -->"
CONFORM_TIMEOUT_S = 1800
UNIT_TIMEOUT_S = 1800
_FAILED = re.compile(r"^FAILED (.+?)(?: - |$)", re.M)  # a parameter id may hold spaces


@dataclass
class SeedRun:
    seed: int
    exit_code: int
    violated: list = field(default_factory=list)
    vacuity: list = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""
    found_by: str = ""                 # "directed" (a program derived from the model) or "search"

    @property
    def killed(self) -> bool:
        return self.exit_code == 1 and bool(self.violated)


_HOW = {"directed": "directed program", "search": "random search"}


@dataclass
class Result:
    mutant: Mutant
    runs: list
    unit_killer: str | None = None     # first failing unit test, when the unit tests ran
    unit_ran: bool = False

    @property
    def killed_by_conform(self) -> bool:
        return bool(self.runs) and all(r.killed for r in self.runs)

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.runs)

    @property
    def properties(self) -> list:
        return sorted({p for r in self.runs for p in r.violated})

    @property
    def killed_by(self) -> str:
        if not self.runs:
            return "not run in this table's gate"
        if self.killed_by_conform:
            how = sorted({r.found_by for r in self.runs if r.found_by})
            return "conform" + (f" ({' and '.join(_HOW.get(h, h) for h in how)})" if how else "")
        if self.unit_killer:
            return f"unit test {self.unit_killer}"
        if any(r.killed for r in self.runs):
            return "conform at some seeds only"
        return "nothing" if self.unit_ran else "not conform"

    @property
    def gate_ok(self) -> bool:
        return self.killed_by_conform or not self.mutant.model_covers

    def to_json(self) -> dict:
        m = self.mutant
        return {"mutant": m.name, "area": m.area, "model_covers": m.model_covers, "blind": m.blind, "bug": m.bug,
                "like": m.like, "killed_by": self.killed_by, "properties": self.properties,
                "seconds": round(self.seconds, 1), "gate_ok": self.gate_ok,
                "runs": [vars(r) for r in self.runs], "unit_killer": self.unit_killer, "unit_ran": self.unit_ran}


def from_json(record: dict) -> Result:
    """A Result back from kills.json, with the mutant as the catalog has it now (its area and
    whether the model covers it; the runs and the unit test are as recorded)."""
    runs = [SeedRun(**r) for r in record["runs"]]
    r = Result(by_name(record["mutant"]), runs, record.get("unit_killer"))
    r.unit_ran = record.get("unit_ran", not r.killed_by_conform)   # the gate runs them for every survivor
    return r


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def run_conform(m: Mutant, seed: int, profile: str, timeout_s: float) -> SeedRun:
    report = REPORTS / m.name / f"seed-{seed}"
    cmd = [sys.executable, "-m", "mutants.hook", m.name, "conform", "--profile", profile, "--seed", str(seed),
           "--no-progress", "--report", str(report), "--time-budget", str(budget_for(timeout_s))]
    started = time.monotonic()
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return SeedRun(seed, -1, seconds=time.monotonic() - started, note=f"timed out after {timeout_s:.0f} s")
    seconds = time.monotonic() - started
    run = SeedRun(seed, done.returncode, seconds=seconds)
    verdict = report / "verdict.json"
    if verdict.exists() and verdict.stat().st_mtime >= time.time() - seconds - 1:
        data = json.loads(verdict.read_text())
        run.violated, run.vacuity = list(data.get("violated") or []), list(data.get("vacuity") or [])
        run.found_by = (data.get("counterexample") or {}).get("found_by") or ""
    if done.returncode not in (0, 1):
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        run.note = f"exit {done.returncode}: {tail[0][:200]}"
    elif not run.killed and any(v.startswith("cut short") for v in run.vacuity):
        run.note = next(v for v in run.vacuity if v.startswith("cut short"))
    return run


def run_unit_tests(m: Mutant, timeout_s: float) -> str | None:
    """The first unit test of the mutant's area that fails with it planted, or None."""
    env = _env()
    env["ICEFLOE_MUTANT"] = m.name
    cmd = [sys.executable, "-m", "pytest", "-p", "mutants.plugin", "-p", "no:cacheprovider", "-x", "-q",
           "-n", "0", "-o", "addopts=", *m.unit_tests]
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"(timed out after {timeout_s:.0f} s)"
    if done.returncode == 0:
        return None
    found = _FAILED.search(done.stdout)
    return found.group(1) if found else f"(pytest exit {done.returncode})"


def table(results: list, seeds: list) -> str:
    lines = [f"| mutant | area | model covers | killed by | property named | seconds (seeds {', '.join(map(str, seeds))}) |",
             "|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| `{r.mutant.name}`{' (blind)' if r.mutant.blind else ''} | {r.mutant.area} | "
                     f"{'yes' if r.mutant.model_covers else 'not yet'} | "
                     f"{r.killed_by} | {', '.join(r.properties) or '-'} | {r.seconds:.0f} |")
    return "\n".join(lines)


def write_docs(results: list, seeds: list, profile: str) -> None:
    text = DOCS.read_text()
    killed = sum(r.killed_by_conform for r in results)
    covered = [r for r in results if r.mutant.model_covers]
    blind = [r for r in results if r.mutant.blind]
    body = (f"{BEGIN}\n`make mutants` (`python -m mutants.run`), profile {profile}, seeds "
            f"{', '.join(map(str, seeds))}, load average {' '.join(open('/proc/loadavg').read().split()[:3])} at "
            f"the end: conform killed {killed} of {len(results)} mutants at every seed, "
            f"{sum(r.killed_by_conform for r in covered)} of the {len(covered)} in areas the model covers"
            + (f"; of the {len(blind)} blind mutants, {sum(r.killed_by_conform for r in blind)}" if blind else "")
            + ". A mutant counts as killed by conform only if every seed kills it. A kill by a directed "
            "program stands for every seed (the directed phase runs first and involves no seed, so each "
            "seed's run repeats it to the same failure); a kill by the random search is run at every seed. "
            "Seconds are summed over the seeds run, on a machine shared with other work. Where conform lets a "
            "mutant through, the unit tests of its area run and the first failing test is named.\n\n"
            f"{table(results, seeds)}\n{END}")
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + body + text[text.index(END) + len(END):]
    else:
        text = text.rstrip() + "\n\n## The mutation gate\n\n" + body + "\n"
    DOCS.write_text(text)


def check() -> int:
    """Every mutant's snippet occurs once and the mutated file compiles."""
    bad = 0
    for m in MUTANTS:
        try:
            compile(m.mutated_source(), m.file, "exec")
        except (SnippetError, SyntaxError, OSError) as e:
            bad += 1
            print(f"{m.name}: {e}", file=sys.stderr)
    print(f"{len(MUTANTS)} mutants, {bad} do not apply")
    return 1 if bad else 0


def main(argv=None) -> int:
    global REPORTS
    p = argparse.ArgumentParser(prog="python -m mutants.run", description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="mutants to run (default: all)")
    p.add_argument("--seeds", default="0", help="comma-separated conform seeds (default 0)")
    p.add_argument("--profile", default="ci")
    p.add_argument("--list", action="store_true")
    p.add_argument("--check", action="store_true", help="only check that every mutant applies")
    p.add_argument("--no-unit", action="store_true", help="do not run unit tests for survivors")
    p.add_argument("--docs", action="store_true", help="rewrite the kill table in docs/conformance.md")
    p.add_argument("--timeout", type=float, default=CONFORM_TIMEOUT_S, help="seconds per conform run")
    p.add_argument("--every-seed", action="store_true",
                   help="run every seed even after a directed kill (which stands for every seed)")
    p.add_argument("--jobs", type=int, default=1, help="mutants run at a time (each in its own processes)")
    p.add_argument("--reports", default=str(REPORTS), help=f"where the runs' reports go (default {REPORTS})")
    p.add_argument("--render", metavar="KILLS_JSON", help="only rewrite docs/conformance.md's table from a "
                   "recorded kills.json (with --seeds as run), the catalog's areas as they are now")
    args = p.parse_args(argv)
    REPORTS = Path(args.reports)
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:34} {m.area:20} {'model' if m.model_covers else 'unit '}  {m.bug}")
        return 0
    if args.check:
        return check()
    if args.render:
        results = [from_json(r) for r in json.loads(Path(args.render).read_text())]
        write_docs(results, [int(x) for x in args.seeds.split(",") if x.strip()], args.profile)
        return 0
    try:
        chosen = [by_name(n) for n in args.names] or list(MUTANTS)
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except (KeyError, ValueError) as e:
        print(f"mutants: {e}", file=sys.stderr)
        return 2
    if check():
        return 1
    REPORTS.mkdir(parents=True, exist_ok=True)
    done = [0]

    def one(m: Mutant) -> Result:
        runs = []
        for seed in seeds if m.model_covers else seeds[:1]:   # outside the model: informative only
            runs.append(run_conform(m, seed, args.profile, args.timeout))
            if not runs[-1].killed:
                break                    # not killed at every seed: no need for the rest
            if runs[-1].found_by == "directed" and not args.every_seed:
                break                    # the directed phase involves no seed: every seed runs it alike
        r = Result(m, runs)
        if not r.killed_by_conform and not args.no_unit:
            r.unit_killer, r.unit_ran = run_unit_tests(m, UNIT_TIMEOUT_S), True
        done[0] += 1
        notes = "; ".join(x.note for x in runs if x.note)
        print(f"[{done[0]}/{len(chosen)}] {m.name}: {r.killed_by} {', '.join(r.properties)} "
              f"({r.seconds:.0f} s){' - ' + notes if notes else ''}", flush=True)
        return r

    # Each mutant runs in processes of its own; --jobs runs that many mutants at a time.
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(one, chosen))
    print()
    print(table(results, seeds))
    (REPORTS / "kills.json").write_text(json.dumps([r.to_json() for r in results], indent=2) + "\n")
    if args.docs:
        write_docs(results, seeds, args.profile)
    missed = [r.mutant.name for r in results if not r.gate_ok]
    print(f"\nconform killed {sum(r.killed_by_conform for r in results)} of {len(results)}; "
          + (f"GATE FAILED: in areas the model covers, conform missed {', '.join(missed)}" if missed
             else "every mutant in an area the model covers was killed by conform"))
    return 1 if missed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:            # `--list | head`: the reader has gone
        sys.stderr.close()
        sys.exit(0)
