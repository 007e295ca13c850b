"""The report directory of a run (report.result's RunResult): verdict.json, report.md
(report.md), report.html (report.html), for a failure the replayable program.py, and the
version graph (versions.dot, versions.png: report.graph). Above result, md and html, so
none of them imports another in a circle.
"""
from __future__ import annotations

import json
from pathlib import Path

from icefloe.conformance.report import graph as report_graph
from icefloe.conformance.report import html as report_html
from icefloe.conformance.report import md as report_md
from icefloe.conformance.report.result import RunResult, program_lines
from icefloe.model.checks import history as H


def _engine_call(r: RunResult) -> str:
    if r.variant:
        return f"registry.load_variant({r.variant!r})"
    return f"registry.load_engine({r.engine!r})"


def write_report(r: RunResult, directory: str | Path) -> Path:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    (d / "verdict.json").write_text(json.dumps(r.to_json(), indent=2, default=str) + "\n")
    (d / "report.md").write_text(report_md.markdown(r))
    (d / "report.html").write_text(report_html.render(r))
    if r.failure is not None and r.failure.found_by == "v3":      # the v3 phase's program (conformance.v3)
        (d / "program.py").write_text(
            f'"""Replay: {r.failure.violation}"""\n'
            "from icefloe.conformance.engines import registry\n"
            "from icefloe.conformance.v3 import phase\n"
            "from icefloe.model.v3 import V3Bounds\n\n"
            "PROGRAM = [\n" + "\n".join(program_lines(r.failure.program)) + "\n]\n"
            f"BOUNDS = {r.failure.bounds!r}\n\n"
            "if __name__ == \"__main__\":\n"
            f"    phase.replay({_engine_call(r)}, PROGRAM, BOUNDS)\n")
    elif r.failure is not None:
        (d / "program.py").write_text(
            f'"""Replay: {r.failure.violation}"""\n'
            "from icefloe.conformance.engines import registry\n"
            "from icefloe.conformance.suite import runs\n"
            "from icefloe.model.iceberg import Bounds\n\n"
            "PROGRAM = [\n" + "\n".join(program_lines(r.failure.program)) + "\n]\n"
            f"BOUNDS = {r.failure.bounds!r}\n\n"
            "if __name__ == \"__main__\":\n"
            f"    engine = {_engine_call(r)}\n"
            f"    runs.replay(engine, PROGRAM, bounds=BOUNDS, store={r.failure.store!r}, ctx_seed={r.failure.ctx_seed!r})\n")
    if r.history is not None:
        (d / "versions.dot").write_text(H.version_dot(r.history) + "\n")
        report_graph.write_png(r.history, d / "versions.png", f"metadata versions of {report_md.history_title(r)}")
    return d
