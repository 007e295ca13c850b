"""The conformance report: a verdict per property, the counts that show the run was not
vacuous, and for a failure the counterexample (after Jepsen's Elle; HOUSE_STYLE.md
"Checkers and their reports").

A failing run prints and writes, in order: the verdict; seed, commit and a one-line
rerun command; the shrunk step program; the first step where model and engine disagree,
with both observations; the engine's history as a table; the history checker's anomaly
explanation; the version graph (versions.dot, versions.png); verdict.json. A passing run
writes the same files for the most varied history it judged, naming which example that
was. report.md is Markdown (report/md.py), report.html one self-contained page with the
graph as inline SVG (report/html.py, report/graph.py), both written by report/write.py; the run ends on one overall line,
`OK: ...` or `FAILED: ...` (RunResult.overall_line).
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from icefloe.conformance.suite.stats import Stats
from icefloe.conformance.violation import PROPERTIES
from icefloe.model.checks import history as H

HOLDS, VIOLATED, UNKNOWN = "holds", "violated", "unknown"
ADAPTER_ERROR = "adapter error"         # verdict.json's verdict when the adapter raised (violation.AdapterError)

# One line per property of spec/PROPERTIES.md (the report's legend; the spec has the detail).
MEANINGS = {
    "A0 ModelAgreement": "at every step the engine observes what the executable model observes "
                         "(outcomes, rows, snapshots)",
    "P1 LinearHistory": "the pointer's versions form one chain; each new snapshot descends from the head it "
                        "replaced (no fork)",
    "P2 NoLostCommit": "a commit acknowledged to its writer stays in the table's history for good",
    "P3 NoDuplicateCommit": "no snapshot, and no row, is applied twice (e.g. by a retry after a lost answer)",
    "P4 ReadersSeeCommitted": "a reader (one pointer read, no listing) sees only files of operations "
                              "that committed",
    "P5 ValidationSound": "every commit's validations held over every snapshot between its start and the "
                          "head it replaced",
    "P6 Isolation": "each commit's effect on the rows equals its operation applied to the head it replaced "
                    "(serializable or snapshot isolation)",
    "P7 TimeTravelImmutable": "a snapshot id means the same snapshot in every committed version",
    "P8 NoDanglingRefs": "the current metadata file and everything a retained snapshot reaches exist in storage",
    "P9 CleanupSafe": "nothing a retained snapshot reaches was ever deleted (expiry, orphan removal, "
                      "cleanup after a failure)",
    "P10 IncrementalComplete": "an incremental reader following main misses no snapshot main's head passed "
                               "through",
    "L1 LoneWriterCommits": "an operation that ran alone, with faults healed, ended committed (or a no-op)",
    "L2 OperationsTerminate": "every operation ended, and once faults healed none ended unknown or crashed",
    "L3 NoSpuriousConflict": "an operation on a partition ends in conflict only over a concurrent commit that "
                             "touched its partition (disjoint partitions both commit)",
    "P11 OneLiveDV": "format v3: at most one live deletion vector per data file",
    "P12 DeletedRowsStayDeleted": "format v3: a DV that replaces another holds all its positions; no deleted row "
                                  "comes back",
    "P13 RowIdsUnique": "format v3: a _row_id names one row over the table's whole history, and a row keeps its "
                        "id (retries, compaction, copy-on-write, updates)",
    "P14 NextRowIdExact": "format v3: next-row-id grows by exactly the rows a commit adds, each added file's "
                          "first-row-id range inside it",
}


@dataclass
class RunResult:
    engine: str                       # the --engine argument (module:factory or shortcut)
    engine_name: str
    variant: str | None
    profile: str
    seed: int
    stats: Stats
    interleaving: str
    expected_rules: tuple
    failure: object = None            # machine.Failure (shrunk) or None
    vacuity: list = field(default_factory=list)   # reasons the run proved too little
    history: H.History | None = None  # the failure's (replayed) or the largest judged
    history_verdict: H.Verdict | None = None
    elapsed_s: float = 0.0
    unchecked: tuple = ()             # properties the engine's capabilities leave unobserved
    commit: str = ""
    coverage: dict = field(default_factory=dict)   # family -> {"covered": n, "total": m, ...}
    history_example: str = ""         # which run the history and the version graph show
    adapter_error: object = None      # violation.AdapterError: the adapter broke its contract
    shard: tuple | None = None        # (K, N): --shard K/N ran every N-th directed program from the K-th
    coverage_classes: dict = field(default_factory=dict)   # a shard's classes, for `icefloe conform merge`
    capabilities: dict = field(default_factory=dict)       # what the engine declared (adapter.Capabilities)

    @property
    def violated(self) -> list:
        if self.failure is None:
            return []
        return sorted(getattr(self.failure.violation, "properties", {self.failure.violation.prop}))

    def verdicts(self) -> dict:
        out = {}
        for prop in PROPERTIES:
            if prop in self.violated:
                out[prop] = VIOLATED
            elif self.failure is not None or self.adapter_error is not None or prop in self.unchecked:
                out[prop] = UNKNOWN       # the run stopped at the failure / not observable here
            else:
                out[prop] = HOLDS
        return out

    @property
    def passed(self) -> bool:
        return self.failure is None and self.adapter_error is None and not self.vacuity

    @property
    def verdict_word(self) -> str:
        """verdict.json's verdict: pass, fail (a violation or a run that proved too little),
        or adapter error (the adapter raised where its contract says it returns)."""
        return "pass" if self.passed else ADAPTER_ERROR if self.adapter_error is not None else "fail"

    def rerun_command(self) -> str:
        parts = ["icefloe conform", f"--engine {self.engine}"]
        if self.variant:
            parts.append(f"--variant {self.variant}")
        parts += [f"--profile {self.profile}", f"--seed {self.seed}"]
        if self.shard is not None:
            parts.append(f"--shard {self.shard[0]}/{self.shard[1]}")
        return " ".join(parts)

    def to_json(self) -> dict:
        f = self.failure
        return {
            "engine": self.engine_name, "engine_spec": self.engine, "variant": self.variant,
            "profile": self.profile, "seed": self.seed, "commit": self.commit,
            "verdict": self.verdict_word,
            "properties": self.verdicts(), "violated": self.violated,
            "interleaving": self.interleaving, "capabilities": self.capabilities, "vacuity": self.vacuity,
            "counts": self.stats.to_json(), "expected_rules": list(self.expected_rules),
            "coverage": self.coverage,
            "elapsed_s": round(self.elapsed_s, 2),
            "rerun": self.rerun_command(),
            "counterexample": None if f is None else {
                "store": f.store, "found_by": f.found_by, "property": f.violation.prop, "message": f.violation.message,
                "step": f.violation.step_index, "program": [list(lab) for lab in f.program],
                "model_observed": repr(f.violation.model), "engine_observed": repr(f.violation.engine)},
            "history_verdict": None if self.history_verdict is None else self.history_verdict.to_json(),
            "history_example": self.history_example or None,
            "adapter_error": None if self.adapter_error is None else self.adapter_error.to_json(),
            **({"shard": f"{self.shard[0]}/{self.shard[1]}", "coverage_classes": self.coverage_classes}
               if self.shard is not None else {}),
        }

    def overall_line(self) -> str:
        """The run's last line: `OK: ...` or `FAILED: ...`."""
        s = self.stats
        ran = f"{s.examples} examples, {s.steps} steps, {s.commits} commits, {self.elapsed_s:.0f} s"
        if self.passed:
            held = sum(v == HOLDS for v in self.verdicts().values())
            return f"OK: {self.engine_name}: {held} of {len(PROPERTIES)} properties hold ({ran})"
        if self.adapter_error is not None:
            return (f"FAILED: {self.engine_name}: ADAPTER ERROR (not a property violation: the adapter raised "
                    f"{type(self.adapter_error.error).__name__} in {self.adapter_error.where}) ({ran}); "
                    f"rerun: {self.rerun_command()}")
        if self.failure is not None:
            return (f"FAILED: {self.engine_name}{f' (variant {self.variant})' if self.variant else ''} violates "
                    f"{', '.join(self.violated)} ({ran}); rerun: {self.rerun_command()}")
        return f"FAILED: {self.engine_name}: the run proved too little: {'; '.join(self.vacuity)} ({ran})"


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             timeout=10, cwd=Path(__file__).resolve().parent)
        if out.returncode == 0:
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    from importlib.metadata import PackageNotFoundError, version
    try:
        return f"icefloe {version('icefloe')}"
    except PackageNotFoundError:
        return "unknown"


# -- text ------------------------------------------------------------------------------------

def table(rows: list, header: tuple) -> list:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda r: "| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths)) + " |"  # noqa: E731
    return [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *[line(r) for r in rows]]


def summary_lines(r: RunResult) -> list:
    s = r.stats
    verdicts = r.verdicts()
    rows = [(p, v, _short(_evidence(r, p, v))) for p, v in verdicts.items()]
    out = table(rows, ("property", "verdict", "evidence"))
    counts = count_rows(r)
    out += [""] + table(counts, ("count", "value"))
    rules = [(name, s.rules.get(name, 0)) for name in r.expected_rules]
    out += [""] + table(rules, ("rule", "steps"))
    out.append(f"interleaving: {r.interleaving}")
    return out


def count_rows(r: RunResult) -> list:
    """(count, value) rows: what the run did, the evidence it was not vacuous."""
    s = r.stats
    counts = [("examples", s.examples), ("steps", s.steps), ("writers", s.writers),
              ("commits", s.commits), ("conflicts", s.conflicts), ("retries after conflicts", s.retries),
              ("unknown outcomes resolved committed", s.unknown_resolved_committed),
              ("unknown outcomes resolved not committed", s.unknown_resolved_not_committed),
              ("no-ops", s.noops), ("early aborts (the model aborts too)", s.early_aborts),
              ("retries given up early (a conflict with attempts left)", s.gave_up), ("reads", s.reads),
              ("backends", ", ".join(f"{k} {n}" for k, n in sorted(s.backends.items())) or "-")]
    return counts + [(f"faults: {k}", n) for k, n in sorted(s.faults.items())]


EVIDENCE_CHARS_MAX = 90


def _short(text: str) -> str:
    return text if len(text) <= EVIDENCE_CHARS_MAX else text[: EVIDENCE_CHARS_MAX - 3] + "..."


def _evidence(r: RunResult, prop: str, verdict: str) -> str:
    if verdict == VIOLATED:
        v = r.failure.violation
        return v.message if v.prop == prop else "named by the history checker"
    if verdict == UNKNOWN:
        if prop in r.unchecked:
            return "not observable with this engine's capabilities"
        if r.adapter_error is not None:
            return "not judged: the run stopped at an adapter error"
        return "not judged: the run stopped at the first violation"
    return f"{r.stats.steps} steps, {r.stats.examples} examples"


def program_lines(program) -> list:
    return [f"    {tuple(lab)!r}," for lab in program]


VERSION_HEADER = ("#", "metadata file", "lineage", "main", "snapshots")
OPERATION_HEADER = ("op", "kind", "outcome", "snapshot", "start", "added", "removed", "read")


def version_rows(h: H.History) -> list:
    line = set(H.lineage(h))
    return [(i, v.location.rsplit("/", 1)[-1][:24], "yes" if v.location in line else "no", v.main,
             len(v.snapshot_ids)) for i, v in enumerate(h.versions)]


def operation_rows(h: H.History) -> list:
    return [(o.op_id, o.kind, o.outcome, o.snapshot_id, o.start_snapshot_id, len(o.added_files),
             len(o.removed_files), "all" if o.read_partitions is H.ALL else len(o.read_files))
            for o in h.operations]


def history_rows(h: H.History) -> list:
    return table(version_rows(h), VERSION_HEADER) + [""] + table(operation_rows(h), OPERATION_HEADER)


def checker_text(r: RunResult) -> str:
    """The history checker's words, in agreement with the verdict: under a violation
    found step by step (the engine's observation differs from the model's), a history in
    which the checker finds no anomaly is said to be that, not "VALID" under a FAIL."""
    v = r.history_verdict
    if r.failure is not None and v.valid is True and r.failure.violation.label != ("History", 0):
        f = r.failure.violation
        lines = H.render(v).splitlines()
        return "\n".join([f"no anomaly in the history of the shrunk program: {f.prop} was found step by step (step "
                          f"{f.step_index}: the engine's observation differs from the model's), which the history "
                          f"graph alone does not show ({v.isolation}, lineage of {len(v.lineage)} versions)",
                          *lines[1:]])
    return H.render(v)


def adapter_error_lines(e) -> list:
    """An adapter error as the report shows it: where, the program it happened in, the traceback."""
    out = [f"## Adapter error", f"{e.where} raised {type(e.error).__name__}: {e.error}"]
    if e.program is not None:
        out += [f"in this program ({len(e.program)} steps, {e.store} store):", "PROGRAM = ["]
        out += program_lines(e.program) + ["]"]
    return out + ["traceback:", *e.traceback.rstrip().splitlines()]


def coverage_lines(r: RunResult) -> list:
    """Transition classes exercised, per family: `family: covered/total (unreachable n)`."""
    return [f"coverage {family}: {c.get('covered', 0)}/{c.get('total', 0)} classes"
            + (f" ({c['unreachable']} unreachable with this engine)" if c.get("unreachable") else "")
            for family, c in sorted(r.coverage.items())]


def report_text(r: RunResult) -> str:
    """What `icefloe conform` prints. On a pass: the verdict, the property table and the
    coverage (the counts, a judged example's history and the checker's words are in
    report.md / report.html); otherwise everything that explains the verdict."""
    out = []
    if r.passed:
        out.append(f"VERDICT: every property holds for {r.engine_name} ({r.profile} profile)")
    elif r.adapter_error is not None:
        out.append(f"VERDICT: ADAPTER ERROR in {r.engine_name}'s adapter (not a property violation): "
                   f"{r.adapter_error}")
    elif r.failure is not None:
        v = r.failure.violation
        out.append(f"VERDICT: {', '.join(r.violated)} VIOLATED by {r.engine_name}"
                   + (f" (variant {r.variant})" if r.variant else ""))
        out.append(f"  {v}")
    else:
        out.append(f"VERDICT: no violation, but the run was vacuous: {'; '.join(r.vacuity)}")
    out.append(f"seed {r.seed}, commit {r.commit}; rerun: {r.rerun_command()}")
    out.append("")
    if r.adapter_error is not None:
        out += adapter_error_lines(r.adapter_error) + [""]
    if r.failure is not None:
        f, v = r.failure, r.failure.violation
        out.append(f"## Shrunk program ({len(f.program)} steps, {f.store} store)")
        out += ["PROGRAM = ["] + program_lines(f.program) + ["]"]
        out.append("")
        if v.label == ("History", 0):
            out.append("## First divergence")
            out.append(f"none step by step: the history checker, after step {v.step_index}, found:")
            out.append(f"  {v.message}")
        else:
            out.append("## First divergence")
            out.append(f"step {v.step_index}: {v.label!r}")
            out.append(f"  model observed:  {v.model!r}")
            out.append(f"  engine observed: {v.engine!r}")
            out.append(f"  {v.message}")
        out.append("")
    out.append("## Summary")
    if r.passed:
        verdicts = r.verdicts()
        out += table([(p, v, _short(_evidence(r, p, v))) for p, v in verdicts.items()],
                     ("property", "verdict", "evidence"))
        if r.coverage:
            out += [""] + coverage_lines(r)
        return "\n".join(out)
    out += summary_lines(r)
    if r.history is not None:
        out += ["", f"## History of {r.history_example or 'the run'}", *history_rows(r.history)]
    if r.history_verdict is not None:
        out += ["", "## History checker", checker_text(r)]
    return "\n".join(out)
