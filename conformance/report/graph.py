"""The version graph of a conformance report: one box per metadata version, an arrow from
each version to the one built on it; the lineage of the current pointer on the top row
(blue), versions off it (failed or superseded attempts) below (orange). Drawn twice from
one layout: as inline SVG for report.html and as versions.png (matplotlib, Agg) for
report.md. Boxes are sized to their labels (a monospace font's advance width), so a
label always fits its box."""
from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path

from icefloe.model.checks import history as H

LINEAGE_COLOR, OTHER_COLOR, EDGE_COLOR = "#4c72b0", "#dd8452", "#555555"
FONT_PX = 12
CHAR_PX = 7.3            # advance of DejaVu Sans Mono / monospace at 12 px (0.6 em), rounded up
PAD_X, PAD_Y, LINE_PX = 10, 8, 15
GAP_X, GAP_Y, MARGIN = 28, 46, 16


@dataclass(frozen=True)
class Box:
    location: str
    lines: tuple
    x: float
    y: float
    w: float
    h: float
    on_lineage: bool


def _label(index: int, v) -> tuple:
    main = "none" if v.main is None else f"..{str(v.main)[-6:]}"
    return (f"v{index}", f"main {main}", f"{len(v.snapshot_ids)} snapshot(s)")


def layout(h: H.History) -> tuple[list[Box], list[tuple[Box, Box]], float, float]:
    """Boxes (in version order), edges (parent box, child box), and the drawing's size. The
    lineage runs left to right on the top row; a version off it sits in the column after
    the version it was built on, in the first free row below."""
    line = H.lineage(h)
    column = {loc: i for i, loc in enumerate(line)}
    labels = [_label(i, v) for i, v in enumerate(h.versions)]
    w = max((len(t) for lines in labels for t in lines), default=4) * CHAR_PX + 2 * PAD_X
    box_h = 3 * LINE_PX + 2 * PAD_Y
    taken: set = set()
    place = {}
    for v in h.versions:
        if v.location in column:
            place[v.location] = (column[v.location], 0)
    next_free = len(line)
    for v in h.versions:
        if v.location in place:
            continue
        if v.previous in place:
            col = place[v.previous][0] + 1
        else:
            col, next_free = next_free, next_free + 1
        row = 1
        while (col, row) in taken:
            row += 1
        taken.add((col, row))
        place[v.location] = (col, row)
    boxes, by_loc = [], {}
    for i, v in enumerate(h.versions):
        col, row = place[v.location]
        b = Box(v.location, labels[i], MARGIN + col * (w + GAP_X), MARGIN + row * (box_h + GAP_Y), w, box_h, row == 0)
        boxes.append(b)
        by_loc[v.location] = b
    edges = [(by_loc[v.previous], by_loc[v.location]) for v in h.versions
             if v.previous is not None and v.previous in by_loc]
    columns = max((c for c, _ in place.values()), default=0) + 1
    rows = max((r for _, r in place.values()), default=0) + 1
    width = MARGIN * 2 + columns * (w + GAP_X) - GAP_X
    height = MARGIN * 2 + rows * box_h + (rows - 1) * GAP_Y
    return boxes, edges, width, height


def _anchor(a: Box, b: Box) -> tuple[float, float, float, float]:
    """From a's edge to b's edge: side to side on one row, else from a's bottom (or top)
    right corner region to b's top (or bottom) left region, so arrows do not cross boxes."""
    if a.y == b.y:
        return a.x + a.w, a.y + a.h / 2, b.x, b.y + b.h / 2
    if a.y < b.y:
        return a.x + a.w * 0.75, a.y + a.h, b.x + b.w * 0.25, b.y
    return a.x + a.w * 0.75, a.y, b.x + b.w * 0.25, b.y + b.h


def svg(h: H.History, title: str = "") -> str:
    """The graph as an inline <svg> element (no external references)."""
    boxes, edges, width, height = layout(h)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="version-graph" width="{width:.0f}" '
           f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
           f'aria-label="{escape(title or "version graph")}">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{EDGE_COLOR}"/></marker></defs>']
    for a, b in edges:
        x1, y1, x2, y2 = _anchor(a, b)
        dash = "" if a.on_lineage and b.on_lineage else ' stroke-dasharray="5,4"'
        out.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{EDGE_COLOR}" '
                   f'stroke-width="1.5"{dash} marker-end="url(#arrow)"/>')
    for b in boxes:
        fill = LINEAGE_COLOR if b.on_lineage else OTHER_COLOR
        out.append(f'<g class="version"><title>{escape(b.location)}</title>'
                   f'<rect x="{b.x:.1f}" y="{b.y:.1f}" width="{b.w:.1f}" height="{b.h:.1f}" rx="6" fill="{fill}"/>')
        for k, text in enumerate(b.lines):
            weight = ' font-weight="bold"' if k == 0 else ""
            out.append(f'<text x="{b.x + PAD_X:.1f}" y="{b.y + PAD_Y + (k + 1) * LINE_PX - 3:.1f}" '
                       f'font-family="DejaVu Sans Mono, monospace" font-size="{FONT_PX}" fill="#ffffff"{weight}>'
                       f'{escape(text)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


def write_png(h: H.History, path: Path, title: str = "") -> list:
    """The same drawing as a PNG (matplotlib's Agg backend, 1 px = 1 point at 72 dpi).
    Returns the labels whose rendered extent leaves their box (none, by construction)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    boxes, edges, width, height = layout(h)
    top = 28 if title else 0
    dpi = 72
    fig = plt.figure(figsize=(width / dpi, (height + top) / dpi), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height + top, 0)
    ax.axis("off")
    if title:
        ax.text(MARGIN, 18, title, fontsize=11, family="DejaVu Sans")
    for a, b in edges:
        x1, y1, x2, y2 = _anchor(a, b)
        style = "-" if a.on_lineage and b.on_lineage else "--"
        ax.add_patch(FancyArrowPatch((x1, y1 + top), (x2, y2 + top), arrowstyle="-|>", mutation_scale=12,
                                     color=EDGE_COLOR, linewidth=1.5, linestyle=style))
    placed = []
    for b in boxes:
        patch = ax.add_patch(FancyBboxPatch((b.x, b.y + top), b.w, b.h, boxstyle="round,pad=0,rounding_size=6",
                                            facecolor=LINEAGE_COLOR if b.on_lineage else OTHER_COLOR,
                                            edgecolor="none"))
        for k, text in enumerate(b.lines):
            artist = ax.text(b.x + PAD_X, b.y + top + PAD_Y + (k + 1) * LINE_PX - 3, text, fontsize=FONT_PX,
                             family="DejaVu Sans Mono", color="white", weight="bold" if k == 0 else "normal")
            placed.append((text, artist, patch))
    fig.savefig(path, dpi=dpi)
    renderer = fig.canvas.get_renderer()
    overflow = []
    for text, artist, patch in placed:
        t, p = artist.get_window_extent(renderer), patch.get_window_extent(renderer)
        if t.x0 < p.x0 or t.x1 > p.x1 or t.y0 < p.y0 or t.y1 > p.y1:
            overflow.append(text)
    plt.close(fig)
    return overflow
