"""report.html: the conformance report as one self-contained page (no script, no external
file: the style is inline and the version graph is inline SVG), for people who would
rather look than read. A banner with the verdict, the run's identity, the properties with
their meanings, coverage as bars, the counterexample, the version graph of the named
example, the history tables and the history checker's words. Written by every run
(report.write.write_report)."""
from __future__ import annotations

from html import escape

from icefloe.conformance.report import result as R
from icefloe.conformance.report import graph as G
from icefloe.conformance.report import md as M

PASS_COLOR, FAIL_COLOR = "#1a7f37", "#cf222e"
VERDICT_CLASS = {R.HOLDS: "holds", R.VIOLATED: "violated", R.UNKNOWN: "unknown"}

STYLE = f"""
body {{ font-family: "DejaVu Sans", system-ui, sans-serif; margin: 0; color: #1f2328; background: #ffffff; }}
main {{ padding: 0 24px 24px 24px; max-width: 1200px; }}
.banner {{ height: 72px; display: flex; align-items: center; padding: 0 24px; color: #ffffff;
           font-size: 24px; font-weight: bold; }}
.banner.pass {{ background: {PASS_COLOR}; }}
.banner.fail {{ background: {FAIL_COLOR}; }}
h2 {{ font-size: 18px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; margin-top: 28px; }}
table {{ border-collapse: collapse; font-size: 13px; margin: 8px 0; }}
th, td {{ border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }}
th {{ background: #f6f8fa; }}
td.holds {{ color: {PASS_COLOR}; font-weight: bold; }}
td.violated {{ color: #ffffff; background: {FAIL_COLOR}; font-weight: bold; }}
td.unknown {{ color: #9a6700; }}
code, pre {{ font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }}
pre {{ background: #f6f8fa; padding: 10px; overflow-x: auto; border: 1px solid #d0d7de; }}
.bar {{ display: inline-block; width: 160px; height: 10px; background: #eaeef2; vertical-align: middle; }}
.bar span {{ display: block; height: 10px; background: #8250df; }}
.graph {{ overflow-x: auto; border: 1px solid #d0d7de; padding: 4px; }}
.caption {{ font-size: 13px; color: #59636e; }}
.overall {{ font-weight: bold; margin-top: 24px; }}
"""


def _table(header, rows, classes=None) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cells = []
        for j, x in enumerate(row):
            cls = (classes or {}).get((i, j))
            cells.append(f'<td{f" class={chr(34)}{cls}{chr(34)}" if cls else ""}>{escape("-" if x is None else str(x))}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _coverage(r: R.RunResult) -> str:
    rows = []
    for family, covered, total, unreachable, why in M.coverage_rows(r):
        share = 100 * covered / total if total else 0
        rows.append(f"<tr><td>{escape(family)}</td><td>{covered} / {total}</td>"
                    f'<td><span class="bar"><span style="width: {share:.0f}%"></span></span></td>'
                    f"<td>{unreachable}</td><td>{escape(why)}</td></tr>")
    return ("<table><thead><tr><th>family</th><th>covered</th><th></th><th>unreachable here</th><th>why</th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def render(r: R.RunResult) -> str:
    status = "pass" if r.passed else "fail"
    title = f"icefloe conform: {'PASS' if r.passed else 'ADAPTER ERROR' if r.adapter_error is not None else 'FAIL'}"
    parts = [f'<div class="banner {status}" id="verdict">{escape(title)}: {escape(M.verdict_sentence(r))}</div>',
             "<main>", _table(("run", ""), [(k, str(v).strip("`")) for k, v in M.identity_rows(r)])]
    rows = M.property_rows(r)
    classes = {(i, 2): VERDICT_CLASS[row[2]] for i, row in enumerate(rows)}
    parts += ['<h2 id="properties">Properties</h2>', _table(("property", "meaning", "verdict", "evidence"), rows,
                                                             classes)]
    if r.coverage:
        parts += ['<h2 id="coverage">Coverage</h2>', '<p class="caption">Transition classes of the model exercised '
                  "on the engine, per family.</p>", _coverage(r)]
    if r.adapter_error is not None:
        lines = R.adapter_error_lines(r.adapter_error)
        parts += ['<h2 id="adapter-error">Adapter error</h2>', f"<p>{escape(lines[1])}</p>",
                  f"<pre>{escape(chr(10).join(lines[2:]))}</pre>"]
    if r.failure is not None:
        f, v = r.failure, r.failure.violation
        program = "\n".join(["PROGRAM = [", *R.program_lines(f.program), "]"])
        parts += ['<h2 id="counterexample">Counterexample</h2>', f"<p>{escape(str(v))}</p>",
                  f"<p>Shrunk program, {len(f.program)} steps on the {escape(f.store)} store "
                  "(program.py replays it):</p>", f"<pre>{escape(program)}</pre>", "<h3>First divergence</h3>"]
        if v.label == ("History", 0):
            parts.append(f"<p>None step by step: after step {v.step_index}, the history checker found: "
                         f"{escape(v.message)}</p>")
        else:
            parts.append(_table(("step", "label", "model observed", "engine observed"),
                                [(v.step_index, repr(v.label), repr(v.model), repr(v.engine))]))
            parts.append(f"<p>{escape(v.message)}</p>")
    if r.history is not None:
        name = M.history_title(r)
        parts += [f'<h2 id="graph">Version graph of {escape(name)}</h2>', '<div class="graph">',
                  G.svg(r.history, f"version graph of {name}"), "</div>",
                  f'<p class="caption">The metadata versions of {escape(name)}: blue boxes are the lineage of the '
                  "current pointer, orange ones versions off it (attempts that did not become current); an arrow "
                  "goes from a version to the one built on it.</p>",
                  f'<h2 id="history">History of {escape(name)}</h2>',
                  _table(R.VERSION_HEADER, R.version_rows(r.history)), _table(R.OPERATION_HEADER,
                                                                             R.operation_rows(r.history))]
    if r.history_verdict is not None:
        parts += ['<h2 id="checker">History checker</h2>', f"<pre>{escape(R.checker_text(r))}</pre>"]
    parts += ['<h2 id="counts">Counts</h2>', _table(("count", "value"), R.count_rows(r)),
              _table(("rule", "steps"), [(n, r.stats.rules.get(n, 0)) for n in r.expected_rules]),
              f'<p class="overall" id="overall">{escape(r.overall_line())}</p>', "</main>"]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")
