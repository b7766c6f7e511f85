"""Score bar charts, laid out once as plain shapes and drawn by two back-ends: SVG (HTML) and the PDF.

Laying out by hand keeps charts deterministic and dependency-free (no plotting library, no fonts to
find, no temporary files); the PDF draws the very same shapes with reportlab's graphics.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from app.reports.model import Report

WIDTH, HEIGHT = 520, 230
# The HTML report's charts on a phone: drawn 340 wide, they show at about their own size in a 390 px screen's
# column (358 px), where the 520-wide ones were shrunk to 69% and their 9-unit labels to ~6 px (review s55).
NARROW_WIDTH = 340
LEFT, RIGHT, TOP, BOTTOM = 34, 10, 30, 42  # margins: axis labels left, title top, bar labels below
MAX_SCORE = 5.0
LABEL_CHARS = 16  # longer labels under a column are cut so neighbouring labels do not overlap
CHAR_W = 5.6  # the mean advance of a 9-point sans-serif character, in the box's units
VALUE_W = 20  # a bar narrower than "0.0" is drawn without its value (its height says it)
ROW = 22  # a row of a chart drawn across: one bar and its label
ACROSS_BOTTOM = 24  # below its rows: the score axis' numbers


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
    # Bars across, each label whole on its own row before its bar: topic names ("performance-memory") are too
    # long to stand under a column once a few topics share the width.
    across: bool = False

    @property
    def height(self) -> float:
        return TOP + ROW * max(len(self.values), 1) + ACROSS_BOTTOM if self.across else HEIGHT


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
        BarChart("Score per topic (0-5)", [t.topic for t in report.topics], [t.score for t in report.topics],
                 across=True),
        BarChart(
            "Score per question (0-5)", [f"Q{q.number}" for q in answered], [q.score or 0.0 for q in answered]
        ),
    ]


def layout(chart: BarChart, width: float = WIDTH) -> list[Shape]:
    """Shapes in a `width` x chart.height box, origin top-left, y growing downwards (as in SVG)."""
    return _across(chart, width) if chart.across else _columns(chart, width)


def _across(chart: BarChart, width: float) -> list[Shape]:
    left = 12 + CHAR_W * max((len(label) for label in chart.labels), default=0)  # the longest label, whole
    plot_w = width - left - RIGHT - VALUE_W  # room after the longest bar for its value
    base = TOP + ROW * len(chart.values)
    shapes: list[Shape] = [Text(width / 2, 16, chart.title, size=12, bold=True)]
    for tick in range(int(MAX_SCORE) + 1):
        x = left + plot_w * tick / MAX_SCORE
        shapes += [Line(x, TOP, x, base), Text(x, base + 14, str(tick), size=9)]
    for i, (label, value) in enumerate(zip(chart.labels, chart.values, strict=True)):
        middle = TOP + ROW * (i + 0.5)
        w = max(plot_w * max(0.0, min(MAX_SCORE, value)) / MAX_SCORE, 1.5)  # a zero still shows its colour
        shapes += [Rect(left, middle - ROW * 0.35, w, ROW * 0.7, score_colour(value)),
                   Text(left - 6, middle + 3, label, anchor="end", size=9),
                   Text(left + w + 4, middle + 3, f"{value:.1f}", anchor="start", size=9)]
    shapes.append(Line(left, TOP, left, base, stroke="#333333"))
    return shapes


def _columns(chart: BarChart, width: float) -> list[Shape]:
    plot_w, plot_h = width - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    base = TOP + plot_h
    shapes: list[Shape] = [Text(width / 2, 16, chart.title, size=12, bold=True)]
    for tick in range(int(MAX_SCORE) + 1):
        y = base - plot_h * tick / MAX_SCORE
        shapes += [Line(LEFT, y, width - RIGHT, y), Text(LEFT - 6, y + 3, str(tick), anchor="end", size=9)]
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
    shapes.append(Line(LEFT, base, width - RIGHT, base, stroke="#333333"))
    return shapes


def _short(label: str, chars: int = LABEL_CHARS) -> str:
    return label if len(label) <= chars else label[: chars - 1] + "\u2026"


def to_svg(chart: BarChart, width: float = WIDTH, css_class: str = "") -> str:
    """An inline <svg> element for an HTML page (no xmlns needed there); labels come from data, so are
    escaped."""
    parts = [
        f'<svg viewBox="0 0 {width:g} {chart.height:g}" width="{width:g}" height="{chart.height:g}"'
        + (f' class="{css_class}"' if css_class else "")
        + f' role="img" aria-label="{escape(chart.title)}" font-family="sans-serif">'
    ]
    for shape in layout(chart, width):
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
