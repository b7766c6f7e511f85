"""The PDF report, laid out by reportlab: real pages, the same headings and charts as the HTML.

reportlab's Paragraph reads a small markup language, so all text goes through `esc` first. Text is
set in DejaVu Sans (Debian's fonts-dejavu-core), embedded, where it is installed: answers quote
Greek letters, maths and arrows (σ(x), ∂L/∂w ≤ ε, λ‖w‖²), which the built-in Helvetica, the fallback,
prints as black boxes or not at all; what DejaVu lacks (Chinese, an emoji) is set in a fallback face
(app/reports/pdf_fonts.py).
"""

from __future__ import annotations

from io import BytesIO
from math import ceil
from xml.sax.saxutils import escape

from reportlab.graphics.shapes import Drawing, String
from reportlab.graphics.shapes import Line as PdfLine
from reportlab.graphics.shapes import Rect as PdfRect
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import cm
from reportlab.pdfbase.pdfmetrics import stringWidth
from reportlab.platypus import (
    Flowable,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
    XPreformatted,
)

from app.reports import wording as w
from app.reports.charts import WIDTH, BarChart, Line, Rect, Shape, layout, report_charts
from app.reports.model import QuestionEntry, Report
from app.reports.pdf_fonts import FACE, in_faces, unbroken, wrapped

_STYLES = getSampleStyleSheet()
H1, H2, H3, BODY = (ParagraphStyle(f"report-{key}", parent=_STYLES[key], fontName=FACE[role])
                    for key, role in (("Heading1", "Bold"), ("Heading2", "Bold"), ("Heading3", "BoldOblique"),
                                      ("BodyText", "")))
SMALL = ParagraphStyle("small", parent=BODY, fontSize=8.5, textColor=colors.HexColor("#555555"))
# A list's title stays on the page of its first item: "Missed" was left alone at the foot of a page. reportlab keeps
# a flowable with the next one only when that one is not a container, so list items are bulleted paragraphs, not
# a ListFlowable (one, which left the title alone all the same).
LIST_TITLE = ParagraphStyle("list-title", parent=BODY, keepWithNext=1)
# An item's wrapped lines start under its text, not under its bullet or number: reportlab sets a paragraph's bullet at
# bulletIndent and every line of its text at leftIndent. A study-plan item is numbered, its lines under it indented
# to its text (as the Markdown nests them): `_plan_styles`.
BULLET = ParagraphStyle("bullet", parent=BODY, leftIndent=12, bulletIndent=2)
NUMBERED = ParagraphStyle("numbered", parent=BODY, leftIndent=18, bulletIndent=0, bulletFontName=FACE[""])
MONO = ParagraphStyle("mono", parent=BODY, fontName=FACE.get("Mono", "Courier"), fontSize=8, leading=10,
                      leftIndent=8, backColor=colors.HexColor("#f6f6f6"))
MONO_LINE = 95  # characters of the 8-point mono face across A4 less its margins
# A printed transcript quotes at most this much of each answer or code: the API takes 20,000 characters of text
# and 50,000 of code an answer, and set in full, 9 such answers took 3.7 s to lay out and 2.5 MB.
QUOTED_CHARS, QUOTED_LINES = 4_000, 80
MARGIN = 2 * cm
# A model answer's inline code span up to half a line long stays on one line (its spaces are no-break spaces): moved
# whole to the next line, it leaves at most half a line empty. A longer one breaks at its spaces as the words around
# it do (not inside a short bracketed group): kept whole, a span longer than the line was cut wherever the line was
# full, "ProfilerActivit" / "y.CUDA]) as prof".
WHOLE_SPAN = (A4[0] - 2 * MARGIN) / 2
_ANCHOR = {"start": "start", "middle": "middle", "end": "end"}


def esc(text: object) -> str:
    return in_faces(escape(unbroken(" ".join(str(text).split()))), FACE[""])


def _as_written(text: str) -> XPreformatted:
    """An answer, its code or a model answer: lines kept and wrapped (never cut), its start only when long.
    A tab is 4 spaces, as in the editor (no face has a glyph for it: it printed as a box), and a Windows line
    end one line end."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").expandtabs(4)
    return XPreformatted(in_faces(escape(wrapped(_quoted(lines), MONO_LINE, MONO.fontName)), MONO.fontName), MONO)


def render_pdf(report: Report) -> bytes:
    """The report as PDF bytes; an empty session gets one short page."""
    buffer = BytesIO()
    doc = SimpleDocTemplate(buffer, pagesize=A4, title=f"{w.TITLE} {report.session_id}",
                            leftMargin=MARGIN, rightMargin=MARGIN, topMargin=MARGIN, bottomMargin=MARGIN)
    story: list[Flowable] = [Paragraph(w.TITLE, H1), *_overall(report)]
    if not report.empty:
        for section in (_topics, _questions, _strengths, _misconceptions, _study_plan):
            story += section(report)
    doc.build(story)
    return buffer.getvalue()


def chart_drawing(chart: BarChart, scale: float = 0.85) -> Drawing:
    """The shared chart layout drawn with reportlab shapes; PDF y grows upwards, so it is flipped."""
    drawing = Drawing(WIDTH * scale, chart.height * scale)
    for shape in layout(chart):
        drawing.add(_pdf_shape(shape, chart.height))
    drawing.scale(scale, scale)
    return drawing


def _pdf_shape(shape: Shape, height: float) -> PdfRect | PdfLine | String:
    if isinstance(shape, Rect):
        return PdfRect(shape.x, height - shape.y - shape.h, shape.w, shape.h,
                       fillColor=colors.HexColor(shape.fill), strokeColor=None)
    if isinstance(shape, Line):
        return PdfLine(shape.x1, height - shape.y1, shape.x2, height - shape.y2,
                       strokeColor=colors.HexColor(shape.stroke), strokeWidth=0.6)
    return String(shape.x, height - shape.y, shape.text, fontName=FACE["Bold" if shape.bold else ""],
                  fontSize=shape.size, textAnchor=_ANCHOR[shape.anchor])


def _bullets(items: list[str], style: ParagraphStyle = BULLET) -> list[Flowable]:
    """A bulleted list of already-escaped paragraphs; nothing when empty."""
    return [Paragraph(i, style, bulletText="\u2022") for i in items]


def _overall(report: Report) -> list[Flowable]:
    story: list[Flowable] = [Paragraph(w.OVERALL, H2)]
    story += [Paragraph(esc(line), BODY) for line in w.overview_lines(report)]
    for chart in report_charts(report):
        story += [Spacer(1, 6), chart_drawing(chart)]
    return story


def _topics(report: Report) -> list[Flowable]:
    rows: list[list[str | Flowable]] = [["Topic", "Questions", "Mean score", w.TOPIC_GAPS]]
    rows += [[t.topic, str(t.questions), w.score_text(t.score),
              Paragraph(esc(w.topic_gaps_text(t)), BODY)] for t in report.topics]
    table = Table(rows, hAlign="LEFT", colWidths=[None, None, None, 7 * cm])
    table.setStyle(TableStyle([
        ("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
        ("FONTNAME", (0, 0), (-1, -1), FACE[""]),
        ("FONTNAME", (0, 0), (-1, 0), FACE["Bold"]),
        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#eeeeee")),
    ]))
    return [Paragraph(w.PER_TOPIC, H2), table]


def _questions(report: Report) -> list[Flowable]:
    story: list[Flowable] = [Paragraph(w.QUESTIONS, H2)]
    for entry in report.questions:
        story += _question(entry, report)
    return story


def _question(entry: QuestionEntry, report: Report) -> list[Flowable]:
    facts = (f"{entry.topic} \u00b7 difficulty {entry.difficulty} \u00b7 score {w.score_text(entry.score)}"
             + (f" \u00b7 {by}" if (by := w.scored_by_text(entry, report)) else ""))
    story: list[Flowable] = [
        Paragraph(f"Q{entry.number}. {esc(entry.question)}", H3), Paragraph(esc(facts), BODY)
    ]
    story += [Paragraph(esc(flag), SMALL) for flag in w.detail_lines(entry)]
    for title, points in w.point_lists(entry):
        story += _titled(title, [esc(desc) + (f" \u2014 {w.QUOTE_LEAD[how]} {esc(quote)}" if how == "run" else
                                              f" \u2014 {w.QUOTE_LEAD[how]} <i>\u201c{esc(quote)}\u201d</i>"
                                              if quote else "")
                                 for desc, quote, how in points])
    story += _titled("Misconceptions", [f"{w.wrong_claim_lead(m)} <i>\u201c{esc(m.quote)}\u201d</i> \u2014 "
                                        f"{esc(m.correction)}" for m in entry.misconceptions])
    return story + _transcript(entry)


def _transcript(entry: QuestionEntry) -> list[Flowable]:
    """Each prompt and the candidate's reply as written (lines wrapped, never cut), then the model answer
    once the session is over."""
    story: list[Flowable] = [Paragraph(f"<b>{esc(w.TRANSCRIPT)}</b>", BODY)]
    for n, exchange in enumerate(entry.transcript):
        story.append(Paragraph(f"<b>{esc(w.asked_label(exchange))}:</b> {esc(exchange.prompt)}", SMALL))
        if n == 0 and entry.contract:  # the prompt asks for code "to the contract below"
            story += [Paragraph(f"<b>{esc(w.CONTRACT)}:</b>", SMALL), _as_written(w.reflowed(entry.contract))]
        story.append(Paragraph(f"<i>{esc(w.reply_label(exchange, on_screen=entry.on_screen))}</i>", SMALL))
        story += [_as_written(text) for text in (exchange.answer, exchange.code) if text]
    if entry.model_answer:
        story.append(Paragraph(f"<b>{esc(w.MODEL_ANSWER)}:</b>", SMALL))
        for kind, text in w.answer_blocks(entry.model_answer):  # prose in the body face, code in the mono block
            story += [Paragraph("<br/>".join(map(_prose, para)), BODY) for para in w.paragraphs(text)] \
                if kind == "prose" else [_as_written(text)]
    return story


def _prose(line: str) -> str:
    """A line of the bank's prose, its `weight_ih` spans set in the mono face as the HTML sets them in <code>
    (the PDF printed the backticks), a short one on one line (`WHOLE_SPAN`)."""
    def words(text: str) -> str:  # esc() trims: the spaces around a code span are kept
        return (" " if text[:1].isspace() else "") + esc(text) + (" " if text[-1:].isspace() else "")

    mono = MONO.fontName
    return "".join(f'<font face="{mono}">{in_faces(escape(_kept_whole(text)), mono)}</font>' if code
                   else words(text) for code, text in w.code_spans(line))


def _kept_whole(code: str) -> str:
    """An inline code span with no-break spaces where reportlab may not break its line: all its spaces when it is
    short, those of its short bracketed groups when it is not."""
    if stringWidth(code, MONO.fontName, BODY.fontSize) <= WHOLE_SPAN:
        return code.replace(" ", "\u00a0")
    return unbroken(code)


def _quoted(text: str) -> str:
    """The text, or its start with a line saying how much is left out and where it is in full."""
    kept = "\n".join(text[:QUOTED_CHARS].split("\n")[:QUOTED_LINES])
    if len(kept) == len(text):
        return text
    return f"{kept}\n[... {len(text) - len(kept):,} more characters: the Markdown and HTML reports have it all]"


def _titled(title: str, items: list[str]) -> list[Flowable]:
    return [Paragraph(f"<b>{esc(title)}</b>", LIST_TITLE), *_bullets(items)] if items else []


def _strengths(report: Report) -> list[Flowable]:
    items = [f"<b>Q{s.number}. {esc(s.question)}</b> ({esc(s.topic)}, {w.score_text(s.score)}): "
             f"{esc(w.strength_text(s))}" for s in report.strengths]
    return [Paragraph(w.STRENGTHS, H2), *(_bullets(items) or [Paragraph(w.NO_STRENGTHS, BODY)])]


def _misconceptions(report: Report) -> list[Flowable]:
    items = [esc(w.misconception_text(m)) for m in report.misconceptions]
    said = [Paragraph(esc(w.MISCONCEPTIONS_LEAD), BODY), *_bullets(items)] if items else [
        Paragraph(w.NO_MISCONCEPTIONS, BODY)]
    return [Paragraph(w.MISCONCEPTIONS, H2), *said]


def _study_plan(report: Report) -> list[Flowable]:
    story: list[Flowable] = [Paragraph(w.STUDY_PLAN, H2)]
    numbered, under_item, bullet_under_item = _plan_styles(len(report.study_plan))
    for n, item in enumerate(report.study_plan, start=1):
        story.append(Paragraph(f"<b>Q{item.number}. {esc(item.question)}</b> ({esc(item.topic)}, "
                               f"{w.score_text(item.score)})", numbered, bulletText=f"{n}."))
        entry = report.question(item.number)
        story += [Paragraph(esc(said), under_item) for said in (w.study_reason_text(entry), w.work_on_text(entry))
                  if said]
        story += _bullets([f"Study next: <font face='Courier'>{esc(link.id)}</font> \u2014 "
                           f"{esc(link.question)}" for link in item.next], bullet_under_item)
    return story if report.study_plan else [*story, Paragraph(w.NO_STUDY, BODY)]


def _plan_styles(items: int) -> tuple[ParagraphStyle, ParagraphStyle, ParagraphStyle]:
    """A numbered item's style, then those of its lines and links under it, all indented to the text of an item
    whose number is the list's widest: reportlab moves an item's first line right when its number and
    the gap after it (0.6 of the font size) are wider than the indent, so "10." started 4 points right of its
    wrapped lines."""
    number = max((stringWidth(f"{n}.", NUMBERED.bulletFontName, NUMBERED.bulletFontSize) for n in range(1, items + 1)),
                 default=0.0) + 0.6 * NUMBERED.bulletFontSize
    indent = max(NUMBERED.leftIndent, ceil(NUMBERED.bulletIndent + number))
    return (ParagraphStyle("numbered-item", parent=NUMBERED, leftIndent=indent),
            ParagraphStyle("under-item", parent=SMALL, leftIndent=indent),
            ParagraphStyle("bullet-under-item", parent=BULLET, leftIndent=indent + BULLET.leftIndent,
                           bulletIndent=indent + BULLET.bulletIndent))
