"""report.md: the conformance report as real Markdown (renders on GitHub, in an IDE, with
pandoc): the verdict, the run's identity and rerun command, the properties with their
one-line meanings, coverage, counts, the counterexample with its program as a Python
code block, the history as tables, the history checker's words, and the version graph
(versions.png) with the example it shows named. report.html (report_html.py) shows the
same sections; the text printed by `icefloe conform` is report.report_text."""
from __future__ import annotations

from icefloe.conformance.report import result as R
from icefloe.conformance.violation import PROPERTIES

VERDICT_MARK = {R.HOLDS: "holds", R.VIOLATED: "**VIOLATED**", R.UNKNOWN: "unknown"}


def cell(value) -> str:
    """A value in a Markdown table cell (pipes escaped, one line)."""
    text = "-" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def md_table(header, rows) -> list:
    return (["| " + " | ".join(cell(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
            + ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows])


def verdict_sentence(r: R.RunResult) -> str:
    if r.passed:
        return f"every property holds for {r.engine_name} ({r.profile} profile)"
    if r.adapter_error is not None:
        return f"adapter error in {r.engine_name}'s adapter, not a property violation: {r.adapter_error}"
    if r.failure is not None:
        return (f"{', '.join(r.violated)} violated by {r.engine_name}"
                + (f" (variant {r.variant})" if r.variant else ""))
    return f"no violation, but the run was vacuous: {'; '.join(r.vacuity)}"


def property_rows(r: R.RunResult) -> list:
    verdicts = r.verdicts()
    return [(p, R.MEANINGS.get(p, ""), verdicts[p], R._short(R._evidence(r, p, verdicts[p]))) for p in PROPERTIES]


def coverage_rows(r: R.RunResult) -> list:
    rows = []
    for family, c in sorted(r.coverage.items()):
        why = "; ".join(f"{n}: {reason}" for reason, n in c.get("why_unreachable", {}).items())
        rows.append((family, c.get("covered", 0), c.get("total", 0), c.get("unreachable", 0), why or "-"))
    return rows


def identity_rows(r: R.RunResult) -> list:
    return [("engine", r.engine_name + (f" (variant {r.variant})" if r.variant else "")), ("profile", r.profile),
            ("seed", r.seed), ("commit", r.commit), ("interleaving", r.interleaving),
            ("elapsed", f"{r.elapsed_s:.1f} s"), ("rerun", f"`{r.rerun_command()}`")]


def history_title(r: R.RunResult) -> str:
    return r.history_example or ("the counterexample" if r.failure is not None else "the largest judged run")


def markdown(r: R.RunResult) -> str:
    status = "PASS" if r.passed else "ADAPTER ERROR" if r.adapter_error is not None else "FAIL"
    out = [f"# icefloe conform: {status}", "", f"**Verdict:** {verdict_sentence(r)}.", ""]
    out += md_table(("run", ""), identity_rows(r)) + [""]
    out += ["## Properties", "", "Each property of spec/PROPERTIES.md, with what it means and the run's verdict.", ""]
    out += md_table(("property", "meaning", "verdict", "evidence"),
                    [(p, m, VERDICT_MARK[v], e) for p, m, v, e in property_rows(r)]) + [""]
    if r.coverage:
        out += ["## Coverage", "", "Transition classes of the model exercised on the engine, per family "
                "(directed programs reach every class the engine's capabilities allow).", ""]
        out += md_table(("family", "covered", "classes", "unreachable here", "why"), coverage_rows(r)) + [""]
    if r.adapter_error is not None:
        lines = R.adapter_error_lines(r.adapter_error)
        out += [lines[0], "", lines[1], "", "```text", *lines[2:], "```", ""]
    if r.failure is not None:
        f, v = r.failure, r.failure.violation
        out += ["## Counterexample", "", f"{v}", "",
                f"Shrunk program, {len(f.program)} steps on the {f.store} store (program.py replays it):", "",
                "```python", "PROGRAM = [", *R.program_lines(f.program), "]", "```", "", "### First divergence", ""]
        if v.label == ("History", 0):
            out += [f"None step by step: after step {v.step_index}, the history checker found: {v.message}", ""]
        else:
            out += [f"Step {v.step_index}: `{v.label!r}`", "", f"- model observed: `{v.model!r}`",
                    f"- engine observed: `{v.engine!r}`", f"- {v.message}", ""]
    out += ["## Counts", ""] + md_table(("count", "value"), R.count_rows(r)) + [""]
    out += ["## Steps per rule", ""] + md_table(("rule", "steps"),
                                                [(n, r.stats.rules.get(n, 0)) for n in r.expected_rules]) + [""]
    if r.history is not None:
        out += [f"## History of {history_title(r)}", "", "Metadata versions, oldest first (lineage: on the chain "
                "of the current pointer):", ""]
        out += md_table(R.VERSION_HEADER, R.version_rows(r.history)) + ["", "Operations and their outcomes:", ""]
        out += md_table(R.OPERATION_HEADER, R.operation_rows(r.history)) + [""]
        out += ["### Version graph", "", f"![version graph of {history_title(r)}](versions.png)", "",
                f"*The metadata versions of {history_title(r)}: blue boxes are the lineage of the current "
                "pointer, orange ones versions off it (attempts that did not become current); an arrow goes "
                "from a version to the one built on it. versions.dot has the same graph as DOT.*", ""]
    if r.history_verdict is not None:
        out += ["## History checker", "", "```text", R.checker_text(r), "```", ""]
    out += ["---", "", r.overall_line(), ""]
    return "\n".join(out)
