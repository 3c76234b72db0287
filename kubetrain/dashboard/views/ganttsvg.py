"""The Gantt chart as markup with few elements, so a 1,000-pod job's chart lays out and paints fast
(docs/performance.md). Pure.

- Rows come in chunks of `CHUNK_ROWS`, each its own small SVG in a `div.gantt-chunk`; a full chunk
  is `content-visibility: auto` (dashboard.css), so the browser lays out and paints only the
  chunks near the visible part of the scrolled chart.
- In a chunk, the bars of one state are ONE `<path>` (a closed subpath per bar), not one element
  per bar; the grid lines are one path.
- Each row is one `<text class="row">` element: the slot name, `data-slot`, `data-bars` (each
  bar's `x width state`, `;`-separated, in time order) and a `<title>` with one line per bar, in
  the same order — what a hover over the slot name shows without JavaScript. With JavaScript one
  delegated tooltip (dashboard.js) finds the bar under the pointer from the row and `data-bars`
  and shows that bar's line; no element per bar carries a tooltip.
- An exit code is drawn on its bar (`text.bar-label`) when the bar is wide enough; the label has
  its bar's classes (`pending`..`failed`, `open`), so dashboard.css gives it a colour that reads
  on that bar in either colour scheme.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from kubetrain.dashboard.views.timeline import AXIS_HEIGHT, BAR_HEIGHT, ROW_HEIGHT, Bar, Gantt, Row

CHUNK_ROWS = 50  # dashboard.css sizes a skipped chunk as CHUNK_ROWS * ROW_HEIGHT px
STATES = ("pending", "running", "succeeded", "failed")
LABEL_MIN_WIDTH = 46.0


def _num(value: float) -> str:
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _one_line(text: str) -> str:
    return " ".join(text.split())


def bars_attribute(bars: Sequence[Bar]) -> str:
    """`data-bars`: `x width state` of each bar, `;`-separated (read by dashboard.js)."""
    return ";".join(f"{_num(b.x)} {_num(b.width)} {b.state}" for b in bars)


def _chunk(chart: Gantt, rows: Sequence[Row], first: int, lazy: bool) -> str:
    height = len(rows) * ROW_HEIGHT
    top = AXIS_HEIGHT + first * ROW_HEIGHT  # the chart's y of this chunk's first row
    grid = "".join(f"M{_num(t.x)} 0V{height}" for t in chart.ticks)
    out = [
        f'<div class="gantt-chunk{" lazy" if lazy else ""}" data-first="{first}">'
        f'<svg width="{chart.width}" height="{height}" viewBox="0 0 {chart.width} {height}">'
        f'<path class="grid" d="{grid}"/>'
    ]
    paths: dict[str, list[str]] = {}
    labels: list[str] = []
    for row in rows:
        y = row.y - top
        slot = escape(row.label)
        lines = "\n".join(escape(_one_line(b.title)) for b in row.bars)
        out.append(
            f'<text class="row" x="4" y="{_num(y + 14)}" data-slot="{slot}"'
            f' data-bars="{bars_attribute(row.bars)}">{slot}<title>{lines}</title></text>'
        )
        for b in row.bars:
            by = b.y - top
            key = b.state + (" open" if b.open else "")
            paths.setdefault(key, []).append(
                f"M{_num(b.x)} {_num(by)}h{_num(b.width)}v{BAR_HEIGHT}h-{_num(b.width)}z"
            )
            if b.label and b.width > LABEL_MIN_WIDTH:
                at = f'x="{_num(b.x + 3)}" y="{_num(by + 11)}"'
                labels.append(f'<text class="bar-label {key}" {at}>{escape(b.label)}</text>')
    for state in STATES:
        for key in (state, state + " open"):
            if key in paths:
                out.append(f'<path class="bar {key}" d="{"".join(paths[key])}"/>')
    out.extend(labels)
    out.append("</svg></div>")
    return "".join(out)


def gantt_html(chart: Gantt) -> str:
    """The chart: a sticky time axis, then the rows in chunks (every text escaped)."""
    ticks = "".join(
        f'<text x="{_num(t.x)}" y="14">{escape(t.label)}</text><line x1="{_num(t.x)}"'
        f' x2="{_num(t.x)}" y1="17" y2="{AXIS_HEIGHT}"/>'
        for t in chart.ticks
    )
    out = [
        f'<div class="gantt" role="img" aria-label="{len(chart.rows)} replica slots,'
        f' {chart.bar_count} bars" data-row-height="{ROW_HEIGHT}">'
        f'<svg class="gantt-axis" width="{chart.width}" height="{AXIS_HEIGHT}"'
        f' viewBox="0 0 {chart.width} {AXIS_HEIGHT}">{ticks}</svg>'
    ]
    rows = chart.rows
    for first in range(0, len(rows), CHUNK_ROWS):
        part = rows[first : first + CHUNK_ROWS]
        out.append(_chunk(chart, part, first, lazy=len(part) == CHUNK_ROWS))
    out.append("</div>")
    return "".join(out)
