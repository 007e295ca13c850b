"""The conformance report people look at: report.md as real Markdown, report.html rendered
by headless Chromium (Debian's package) showing the verdict and the version graph, labels
that fit their boxes, and the run's overall line."""
from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest
from matplotlib import image

from icefloe.conformance.engines import registry
from icefloe.conformance.report import result as R
from icefloe.conformance.report.write import write_report
from icefloe.conformance.report import graph as G
from icefloe.conformance.report import md as report_md
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.suite.profiles import PROFILES, bounds_for
from icefloe.conformance.suite.runs import Failure, replay
from icefloe.conformance.suite.stats import Stats
from icefloe.conformance.suite.run import replay_history
from icefloe.conformance.testing import browser
from icefloe.conformance.violation import PROPERTIES, Violation
from icefloe.model.checks import history as H

# Two deletes race from one snapshot: the reference engine's second one fails validation
# (its attempt is a version off the lineage); the no-revalidate variant commits it (P5).
RACE = [("Begin", 1, "delete"), ("Begin", 2, "delete"), ("WriteManifests", 1), ("WriteManifestList", 1),
        ("WriteManifests", 2), ("WriteManifestList", 2), ("WriteMetadata", 1), ("Swap", 1),
        ("WriteMetadata", 2), ("Swap", 2), ("Retry", 2)]


def _result(**kw) -> R.RunResult:
    stats = Stats(examples=1, steps=len(RACE), commits=1)
    return R.RunResult(engine="icefloe", engine_name=kw.pop("engine_name", "icefloe"), variant=kw.pop("variant", None),
                       profile="ci", seed=0, stats=stats, interleaving="phase by phase", expected_rules=("Begin",),
                       commit="test", elapsed_s=1.0,
                       coverage={"rivals": {"covered": 3, "total": 4, "unreachable": 1,
                                            "why_unreachable": {"operation expire not supported": 1}}}, **kw)


@pytest.fixture(scope="module")
def passing() -> R.RunResult:
    """The reference engine's history of RACE, plus one metadata version off the lineage
    (an attempt whose swap lost, as an engine that keeps its failed attempts records it:
    icefloe deletes its own), so the graph has both kinds of box."""
    lock = replay(registry.load_engine("icefloe"), RACE)
    try:
        h = lock.last_history
        base = h.versions[2]
        attempt = H.VersionRecord(base.location.replace("/00002-", "/00003-attempt-"), base.location, 42, (1, 2, 3))
        h = dataclasses.replace(h, table=dataclasses.replace(h.table, versions=h.versions + (attempt,),
                                                             current=h.current))
        return _result(history=h, history_verdict=lock.last_history_verdict,
                       history_example="the race of two deletes (11 steps, memory store)")
    finally:
        lock.close()


@pytest.fixture(scope="module")
def failing() -> R.RunResult:
    engine = registry.load_variant("no-revalidate")
    with pytest.raises(Violation) as found:
        replay(engine, RACE)
    failure = Failure("memory", list(found.value.program), found.value, 0, bounds=bounds_for(engine, PROFILES["ci"]))
    backends = Backends()
    try:
        history, verdict = replay_history(engine, failure, backends)
    finally:
        backends.close()
    return _result(engine_name="flawed:no-revalidate", variant="no-revalidate", failure=failure, history=history,
                   history_verdict=verdict, history_example=f"the shrunk counterexample ({len(RACE)} steps)")


def _tables(md: str) -> list[list[str]]:
    """The Markdown tables of a document, as lists of rows (rows as text)."""
    out, current = [], []
    for line in md.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            out.append(current)
            current = []
    return out + ([current] if current else [])


def _cells(row: str) -> int:
    return len(re.split(r"(?<!\\)\|", row)) - 2


def test_report_md_is_markdown_with_meanings_program_and_named_example(passing, failing, tmp_path):
    """Goal: report.md renders as Markdown. Method: for a passing and a failing run, every
    table has a delimiter row and as many cells per row as its header; every property is
    a row with its one-line meaning; the program is a python code block; the history
    section and the graph name the example; nothing wraps the document in a fence; the
    last line is the overall line."""
    for r in (passing, failing):
        md = report_md.markdown(r)
        assert md.startswith("# icefloe conform: ") and not md.startswith("```")
        tables = _tables(md)
        assert len(tables) >= 5
        for t in tables:
            assert re.fullmatch(r"\|(---\|)+", t[1]), t[:2]
            assert all(_cells(row) == _cells(t[0]) for row in t), t
        for prop in PROPERTIES:
            assert any(row.startswith(f"| {prop} | {R.MEANINGS[prop]} |") for t in tables for row in t), prop
        assert f"## History of {r.history_example}" in md
        assert f"![version graph of {r.history_example}](versions.png)" in md
        assert md.rstrip().splitlines()[-1] == r.overall_line()
    md = report_md.markdown(failing)
    assert "```python\nPROGRAM = [\n    ('Begin', 1, 'delete')," in md and "**VIOLATED**" in md
    assert failing.overall_line().startswith("FAILED: flawed:no-revalidate (variant no-revalidate) violates P5")
    assert passing.overall_line().startswith(f"OK: icefloe: {len(PROPERTIES)} of {len(PROPERTIES)} properties hold")
    write_report(failing, tmp_path)
    assert json.loads((tmp_path / "verdict.json").read_text())["history_example"] == failing.history_example
    for name in ("report.md", "report.html", "program.py", "versions.dot", "versions.png"):
        assert (tmp_path / name).stat().st_size > 0, name


def _pixels(png, hex_color: str, tolerance: float = 0.02) -> np.ndarray:
    rgb = np.array([int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return np.all(np.abs(png[:, :, :3] - rgb) <= tolerance, axis=2)


@pytest.mark.parametrize("which", ["passing", "failing"])
def test_report_html_shows_verdict_and_graph_in_chromium(which, request, tmp_path):
    """Goal: report.html, opened in a browser, shows the verdict and the version graph.
    Method: write the report of a passing and of a failing run, screenshot it in headless
    Chromium: the banner rows are the verdict's colour (green / red), the graph's boxes
    are there (lineage blue; the passing run's failed attempt orange); the DOM Chromium
    built holds the verdict text, the SVG and the overall line; the page loads nothing
    from elsewhere."""
    r = request.getfixturevalue(which)
    write_report(r, tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["'](?!#)""", html), "report.html must be self-contained"
    shot = image.imread(browser.screenshot(tmp_path / "report.html", tmp_path / "shot.png"))
    assert shot.shape[1] == 1280
    banner = shot[5:40, :, :]
    colour = "#1a7f37" if which == "passing" else "#cf222e"
    assert _pixels(banner, colour).mean() > 0.5, f"the banner is not {colour}"
    assert _pixels(shot, G.LINEAGE_COLOR).sum() > 5 * 2000, "no lineage boxes in the screenshot"
    if which == "passing":
        assert _pixels(shot, G.OTHER_COLOR).sum() > 2000, "the failed attempt's box is missing"
    dom = browser.dump_dom(tmp_path / "report.html")
    assert ("icefloe conform: PASS" if which == "passing" else "icefloe conform: FAIL") in dom
    assert "<svg" in dom and 'class="version"' in dom and r.overall_line().split(" (")[0] in dom


def test_graph_labels_fit_their_boxes_in_chromium_and_in_the_png(passing, tmp_path):
    """Goal: no label overflows its box (versions.png had labels overflowing circles).
    Method: the SVG in a page whose script measures each text's bounding box against its
    rect (Chromium lays the text out with its real font) and writes the count of
    overflows into the DOM; the PNG's text extents measured by matplotlib's renderer."""
    page = tmp_path / "fit.html"
    page.write_text("<!DOCTYPE html><html><body>" + G.svg(passing.history) + """
<pre id="out"></pre><script>
let bad = 0, n = 0;
for (const g of document.querySelectorAll('g.version')) {
  const r = g.querySelector('rect').getBBox();
  for (const t of g.querySelectorAll('text')) {
    const b = t.getBBox(); n++;
    if (b.x < r.x || b.y < r.y || b.x + b.width > r.x + r.width || b.y + b.height > r.y + r.height) bad++;
  }
}
document.getElementById('out').textContent = 'labels ' + n + ' overflowing ' + bad;
</script></body></html>""")
    found = re.search(r"labels (\d+) overflowing (\d+)", browser.dump_dom(page))
    assert found and int(found[1]) == 3 * len(passing.history.versions) and found[2] == "0", found
    assert G.write_png(passing.history, tmp_path / "v.png", "title") == []
