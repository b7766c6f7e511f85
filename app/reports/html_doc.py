"""The HTML report: one self-contained page (inline CSS, inline SVG charts, no external URL).

Every piece of candidate or bank text passes through `esc`; nothing is marked safe by hand, so an
answer containing markup shows as text and cannot run in the reader's browser.
"""

from __future__ import annotations

from html import escape

from app.reports import wording as w
from app.reports.charts import NARROW_WIDTH, WIDTH, report_charts, score_colour, to_svg
from app.reports.control_chars import visible
from app.reports.model import QuestionEntry, Report

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:52rem;margin:2rem auto;
padding:0 1rem;color:#222;line-height:1.45}
h1{border-bottom:2px solid #333}h2{margin-top:2rem;border-bottom:1px solid #ccc}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:left}
.table-box{overflow-x:auto}
.score{font-weight:bold;padding:0 .4rem;border-radius:.3rem;color:#fff;white-space:nowrap}
blockquote,q{font-style:italic;color:#444}.flag{color:#666;font-size:.9rem}
.charts svg{max-width:100%;height:auto;display:block;margin:1rem 0}.charts svg.narrow{display:none}
@media (max-width:34rem){.charts svg.wide{display:none}.charts svg.narrow{display:block}
table{font-size:.9rem}td,th{padding:.25rem .35rem}}
section.question{border-left:3px solid #ddd;padding-left:1rem;margin:1rem 0}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5rem;font-size:.9rem}
"""


def esc(text: object) -> str:
    """Text as HTML that shows it as written, its control characters as U+FFFD (control_chars.py): in a <pre> an
    answer's or an error's escape sequences and NULs otherwise reached the page raw."""
    return escape(visible(str(text)), quote=True)


def render_html(report: Report) -> str:
    """The whole page as a string; an empty session gets the title and one sentence."""
    body = [f"<h1>{esc(w.TITLE)}</h1>", _overall(report)]
    if not report.empty:
        body += [_topics(report), _questions(report), _strengths(report), _misconceptions(report),
                 _study_plan(report)]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(w.TITLE)} {esc(report.session_id)}</title><style>{CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def _badge(score: float | None) -> str:
    colour = "#999" if score is None else score_colour(score)
    return f'<span class="score" style="background:{colour}">{esc(w.score_text(score))}</span>'


def _overall(report: Report) -> str:
    paragraphs = "".join(f"<p>{esc(line)}</p>" for line in w.overview_lines(report))
    # Each chart twice: the narrow drawing replaces the wide one on a phone (CSS above), where the wide one shrunk
    # to fit the column set its labels ~6 px high (review s55).
    charts = "".join(to_svg(chart, WIDTH, "wide") + to_svg(chart, NARROW_WIDTH, "narrow")
                     for chart in report_charts(report))
    return f"<h2>{esc(w.OVERALL)}</h2>{paragraphs}<div class=\"charts\">{charts}</div>"


def _topics(report: Report) -> str:
    rows = "".join(f"<tr><td>{esc(t.topic)}</td><td>{t.questions}</td><td>{_badge(t.score)}</td>"
                   f"<td>{esc(w.topic_gaps_text(t))}</td></tr>" for t in report.topics)
    # In a box of its own that scrolls sideways: on a phone the table was wider than the page (420 px of 390, review
    # s55) and its last column was cut off, not reachable.
    return (f"<h2>{esc(w.PER_TOPIC)}</h2><div class=\"table-box\"><table><tr><th>Topic</th><th>Questions</th>"
            f"<th>Mean score</th><th>{esc(w.TOPIC_GAPS)}</th></tr>{rows}</table></div>")


def _questions(report: Report) -> str:
    return f"<h2>{esc(w.QUESTIONS)}</h2>" + "".join(_question(e, report) for e in report.questions)


def _question(entry: QuestionEntry, report: Report) -> str:
    parts = [f"<h3>Q{entry.number}. {esc(entry.question)}</h3>",
             f"<p>{esc(entry.topic)} \u00b7 difficulty {entry.difficulty} \u00b7 {_badge(entry.score)}"
             + (f" \u00b7 {esc(by)}" if (by := w.scored_by_text(entry, report)) else "") + "</p>"]
    parts += [f'<p class="flag">{esc(flag)}</p>' for flag in w.detail_lines(entry)]
    parts += [_list(title, [esc(desc) + (f" \u2014 {w.QUOTE_LEAD[how]} {esc(quote)}" if how == "run" else
                                         f" \u2014 {w.QUOTE_LEAD[how]} <q>{esc(quote)}</q>" if quote else "")
                            for desc, quote, how in points]) for title, points in w.point_lists(entry)]
    parts.append(_list("Misconceptions", [f"{w.wrong_claim_lead(m)} <q>{esc(m.quote)}</q> \u2014 {esc(m.correction)}"
                                          for m in entry.misconceptions]))
    parts.append(_transcript(entry))
    return f'<section class="question">{"".join(parts)}</section>'


def _transcript(entry: QuestionEntry) -> str:
    """Folded away: each prompt and the candidate's reply as written, then the model answer once the session
    is over."""
    parts = []
    for n, exchange in enumerate(entry.transcript):
        parts.append(f"<p><strong>{esc(w.asked_label(exchange))}:</strong> {esc(exchange.prompt)}</p>")
        if n == 0 and entry.contract:  # the prompt asks for code "to the contract below"
            parts.append(f"<p><strong>{esc(w.CONTRACT)}:</strong></p>"
                         f"<pre>{esc(w.reflowed(entry.contract))}</pre>")
        parts.append(f"<p><em>{esc(w.reply_label(exchange, on_screen=entry.on_screen))}</em></p>")
        parts += [f"<pre>{esc(text)}</pre>" for text in (exchange.answer, exchange.code) if text]
    if entry.model_answer:
        parts.append(f"<p><strong>{esc(w.MODEL_ANSWER)}:</strong></p>")
        for kind, text in w.answer_blocks(entry.model_answer):  # prose as paragraphs, code preformatted
            parts += [f"<p>{'<br>'.join(map(_prose, para))}</p>" for para in w.paragraphs(text)] if kind == "prose" \
                else [f"<pre><code>{esc(text)}</code></pre>"]
    return f"<details><summary>{esc(w.TRANSCRIPT)}</summary>{''.join(parts)}</details>"


def _prose(line: str) -> str:
    """A line of the bank's own prose, escaped, its inline code spans set as code."""
    return "".join(f"<code>{esc(text)}</code>" if code else esc(text) for code, text in w.code_spans(line))


def _list(title: str, items: list[str]) -> str:
    """A titled list of already-escaped items; nothing at all when there are none."""
    if not items:
        return ""
    return f"<p><strong>{esc(title)}</strong></p><ul>{''.join(f'<li>{i}</li>' for i in items)}</ul>"


def _section(title: str, items: list[str], empty: str, lead: str = "") -> str:
    """A headed list of already-escaped items after a lead sentence, or the sentence that says there are none."""
    body = (f"{f'<p>{esc(lead)}</p>' if lead else ''}<ul>{''.join(f'<li>{i}</li>' for i in items)}</ul>" if items
            else f"<p>{esc(empty)}</p>")
    return f"<h2>{esc(title)}</h2>{body}"


def _strengths(report: Report) -> str:
    items = [f"<strong>Q{s.number}. {esc(s.question)}</strong> ({esc(s.topic)}, {esc(w.score_text(s.score))}): "
             f"{esc(w.strength_text(s))}" for s in report.strengths]
    return _section(w.STRENGTHS, items, w.NO_STRENGTHS)


def _misconceptions(report: Report) -> str:
    return _section(w.MISCONCEPTIONS, [esc(w.misconception_text(m)) for m in report.misconceptions],
                    w.NO_MISCONCEPTIONS, lead=w.MISCONCEPTIONS_LEAD)


def _study_plan(report: Report) -> str:
    items = []
    for item in report.study_plan:
        entry = report.question(item.number)
        focus = "".join(f"<p>{esc(said)}</p>" for said in (w.study_reason_text(entry), w.work_on_text(entry)) if said)
        links = "".join(f"<li><code>{esc(link.id)}</code> \u2014 {esc(link.question)}</li>"
                        for link in item.next)
        items.append(f"<li><strong>Q{item.number}. {esc(item.question)}</strong> ({esc(item.topic)}, "
                     f"{esc(w.score_text(item.score))}){focus}<ul>{links}</ul></li>")
    body = f"<ol>{''.join(items)}</ol>" if items else f"<p>{esc(w.NO_STUDY)}</p>"
    return f"<h2>{esc(w.STUDY_PLAN)}</h2>{body}"
