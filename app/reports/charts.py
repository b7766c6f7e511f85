"""Score bar charts, laid out once as plain shapes and drawn by two back-ends: SVG (HTML) and the PDF.

Laying out by hand keeps charts deterministic and dependency-free (no plotting library, no fonts to
find, no temporary files); the PDF draws the very same shapes with reportlab's graphics.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from app.reports.model import Report

WIDTH, HEIGHT = 520, 230
LEFT, RIGHT, TOP, BOTTOM = 34, 10, 30, 42  # margins: axis labels left, title top, bar labels below
MAX_SCORE = 5.0
LABEL_CHARS = 16  # longer topic names are cut so neighbouring labels do not overlap
CHAR_W = 5.6  # the mean advance of a 9-point sans-serif character, in the box's units
VALUE_W = 20  # a bar narrower than "0.0" is drawn without its value (its height says it)


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float
    fill: str


@dataclass(frozen=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    stroke: str = "#bbbbbb"


@dataclass(frozen=True)
class Text:
    x: float
    y: float
    text: str
    anchor: str = "middle"  # SVG text-anchor: start, middle or end
    size: float = 10
    bold: bool = False


Shape = Rect | Line | Text


@dataclass(frozen=True)
class BarChart:
    title: str
    labels: list[str]
    values: list[float]  # scores, 0-5


def score_colour(score: float) -> str:
    """Red, amber or green, matching the study plan's idea of weak (below 3.5)."""
    if score < 2.5:
        return "#d9534f"
    return "#f0ad4e" if score < 3.5 else "#5cb85c"


def report_charts(report: Report) -> list[BarChart]:
    """The per-topic chart and the per-question chart; none when nothing was answered."""
    if report.empty:
        return []
    answered = [q for q in report.questions if q.score is not None]
    return [
        BarChart("Score per topic (0-5)", [t.topic for t in report.topics], [t.score for t in report.topics]),
        BarChart(
            "Score per question (0-5)", [f"Q{q.number}" for q in answered], [q.score or 0.0 for q in answered]
        ),
    ]


def layout(chart: BarChart) -> list[Shape]:
    """Shapes in a WIDTH x HEIGHT box, origin top-left, y growing downwards (as in SVG)."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    base = TOP + plot_h
    shapes: list[Shape] = [Text(WIDTH / 2, 16, chart.title, size=12, bold=True)]
    for tick in range(int(MAX_SCORE) + 1):
        y = base - plot_h * tick / MAX_SCORE
        shapes += [Line(LEFT, y, WIDTH - RIGHT, y), Text(LEFT - 6, y + 3, str(tick), anchor="end", size=9)]
    slot = plot_w / max(len(chart.values), 1)
    bar_w = min(slot * 0.7, 60)
    # Labels get their slot's width; where that is too narrow for a readable label, every other one
    # drops to a second row and each gets two slots' width.
    rows = 2 if slot / CHAR_W < 8 and len(chart.values) > 1 else 1
    chars = min(LABEL_CHARS, max(2, int(rows * slot / CHAR_W) - 1))
    for i, (label, value) in enumerate(zip(chart.labels, chart.values, strict=True)):
        centre = LEFT + slot * (i + 0.5)
        clamped = max(0.0, min(MAX_SCORE, value))
        h = max(plot_h * clamped / MAX_SCORE, 1.5)  # a zero still shows its colour as a sliver
        shapes.append(Rect(centre - bar_w / 2, base - h, bar_w, h, score_colour(value)))
        if slot >= VALUE_W:
            shapes.append(Text(centre, base - h - 4, f"{value:.1f}", size=9))
        shapes.append(Text(centre, base + 14 + 12 * (i % rows), _short(label, chars), size=9))
    shapes.append(Line(LEFT, base, WIDTH - RIGHT, base, stroke="#333333"))
    return shapes


def _short(label: str, chars: int = LABEL_CHARS) -> str:
    return label if len(label) <= chars else label[: chars - 1] + "\u2026"


def to_svg(chart: BarChart) -> str:
    """An inline <svg> element for an HTML page (no xmlns needed there); labels come from data, so are
    escaped."""
    parts = [
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img" aria-label="{escape(chart.title)}" font-family="sans-serif">'
    ]
    for shape in layout(chart):
        parts.append(_svg_shape(shape))
    parts.append("</svg>")
    return "".join(parts)


def _svg_shape(shape: Shape) -> str:
    if isinstance(shape, Rect):
        return (f'<rect x="{shape.x:.1f}" y="{shape.y:.1f}" width="{shape.w:.1f}" height="{shape.h:.1f}" '
                f'fill="{shape.fill}"/>')
    if isinstance(shape, Line):
        return (f'<line x1="{shape.x1:.1f}" y1="{shape.y1:.1f}" x2="{shape.x2:.1f}" y2="{shape.y2:.1f}" '
                f'stroke="{shape.stroke}" stroke-width="1"/>')
    weight = ' font-weight="bold"' if shape.bold else ""
    return (f'<text x="{shape.x:.1f}" y="{shape.y:.1f}" text-anchor="{shape.anchor}" '
            f'font-size="{shape.size}"{weight}>{escape(shape.text)}</text>')
