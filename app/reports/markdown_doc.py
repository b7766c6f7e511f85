"""The Markdown report: plain text that reads well raw and renders safely in any Markdown viewer."""

from __future__ import annotations

import re

from app.reports import wording as w
from app.reports.control_chars import visible
from app.reports.model import QuestionEntry, Report

# Backslash-escaping these keeps candidate text literal: no injected HTML, entities (&copy;), links,
# emphasis, strikethrough or tables.
_SPECIAL = re.compile(r"([\\`*_\[\]<>#|!~&])")
# GitHub-style viewers also link bare addresses; an escaped ':' or '.' or '@' in them stops that.
_AUTOLINK = re.compile(r"(?i)(\b(?:https?|ftp)):(?=//)|(\bwww)\.|(?<=\w)@(?=\w)")


def md(text: str) -> str:
    """Candidate or bank text as one literal Markdown line."""
    # Control characters too: the file is read in terminals (control_chars.py).
    escaped = _SPECIAL.sub(r"\\\1", visible(" ".join(text.split())))
    return _AUTOLINK.sub(lambda m: f"{m[1]}\\:" if m[1] else f"{m[2]}\\." if m[2] else "\\@", escaped)


def render_markdown(report: Report) -> str:
    """The whole report; an empty session gets the title and one sentence."""
    lines = [f"# {w.TITLE}", "", f"## {w.OVERALL}", "", *(f"{md(line)}  " for line in w.overview_lines(report))]
    if report.empty:
        return "\n".join(lines) + "\n"
    for section in (_topics, _questions, _strengths, _misconceptions, _study_plan):
        lines += ["", *section(report)]
    return "\n".join(lines) + "\n"


def _topics(report: Report) -> list[str]:
    rows = [f"| {md(t.topic)} | {t.questions} | {w.score_text(t.score)} | {md(w.topic_gaps_text(t))} |"
            for t in report.topics]
    return [f"## {w.PER_TOPIC}", "", f"| Topic | Questions | Mean score | {w.TOPIC_GAPS} |",
            "| --- | ---: | ---: | --- |", *rows]


def _questions(report: Report) -> list[str]:
    lines = [f"## {w.QUESTIONS}"]
    for entry in report.questions:
        lines += ["", *_question(entry, report)]
    return lines


def _question(entry: QuestionEntry, report: Report) -> list[str]:
    facts = (f"Topic: {md(entry.topic)} · difficulty {entry.difficulty} · score {w.score_text(entry.score)}"
             + (f" · {md(by)}" if (by := w.scored_by_text(entry, report)) else ""))
    lines = [f"### Q{entry.number}. {md(entry.question)}", "", f"- {facts}"]
    lines += [f"- {md(flag)}" for flag in w.status_flags(entry)]
    lines += [f"- Hint given: {md(hint)}" for hint in entry.hints]
    if code := w.code_text(entry):
        lines.append(f"- {md(code)}")
    lines += [f"- Failed check {md(c.name)}: {md(c.message or '')}" for c in entry.failed_checks]
    lines += [f"- Penalty: {md(p)}" for p in entry.penalties]
    lines += [f"- Scoring: {md(n)}" for n in entry.scoring_notes]
    for title, points in w.point_lists(entry):
        if points:
            lines += ["", f"{title}:", ""]
            lines += [f"- {md(desc)}" + (f" \u2014 {w.QUOTE_LEAD[how]} {md(quote or '')}" if how == "run" else
                                         f" \u2014 {w.QUOTE_LEAD[how]} \u201c{md(quote)}\u201d" if quote else "")
                      for desc, quote, how in points]
    if entry.misconceptions:
        lines += ["", "Misconceptions:", ""]
        lines += [f"- {w.wrong_claim_lead(m)} \u201c{md(m.quote)}\u201d \u2014 {md(m.correction)}"
                  for m in entry.misconceptions]
    return lines + _transcript(entry)


def _transcript(entry: QuestionEntry) -> list[str]:
    """Each prompt and the candidate's reply as written, then the model answer once the session is over."""
    lines = ["", f"{w.TRANSCRIPT}:"]
    for n, exchange in enumerate(entry.transcript):
        lines += ["", f"**{w.asked_label(exchange)}:** {md(exchange.prompt)}"]
        if n == 0 and entry.contract:  # the prompt asks for code "to the contract below"
            lines += ["", f"**{w.CONTRACT}:**", "", *_fenced(w.fenceless(entry.contract), "text")]
        lines += ["", f"*{w.reply_label(exchange, on_screen=entry.on_screen)}*"]
        lines += [line for text, kind in ((exchange.answer, "text"), (exchange.code, "python")) if text
                  for line in ("", *_fenced(text, kind))]
    if entry.model_answer:
        lines += ["", f"**{w.MODEL_ANSWER}:**"]
        for kind, text in w.answer_blocks(entry.model_answer):  # prose as paragraphs, code in its own fence
            lines += [line for para in w.paragraphs(text) for line in ("", *map(_prose, para))] if kind == "prose" \
                else ["", *_fenced(text, kind)]
    return lines


def _prose(line: str) -> str:
    """A line of the bank's own prose: literal, but its inline code spans kept as code spans."""
    def literal(text: str) -> str:  # md() trims: the spaces around a code span are kept
        return (" " if text[:1].isspace() else "") + md(text) + (" " if text[-1:].isspace() else "")

    return "".join(f"`{text}`" if code else literal(text) for code, text in w.code_spans(line))


def _fenced(text: str, kind: str) -> list[str]:
    """Text kept exactly as written, in a code fence longer than any run of backticks inside it (an answer
    or a model answer may hold fences of its own), so nothing in it is read as Markdown."""
    text = visible(text)
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return [f"{fence}{kind}", *text.rstrip("\n").split("\n"), fence]


def _strengths(report: Report) -> list[str]:
    items = [f"- **Q{s.number}. {md(s.question)}** ({md(s.topic)}, {w.score_text(s.score)}): {md(w.strength_text(s))}"
             for s in report.strengths]
    return [f"## {w.STRENGTHS}", "", *(items or [w.NO_STRENGTHS])]


def _misconceptions(report: Report) -> list[str]:
    items = [f"- {md(w.misconception_text(m))}" for m in report.misconceptions]
    return [f"## {w.MISCONCEPTIONS}", "", *([w.MISCONCEPTIONS_LEAD, "", *items] if items else [w.NO_MISCONCEPTIONS])]


def _study_plan(report: Report) -> list[str]:
    lines = [f"## {w.STUDY_PLAN}"]
    for n, item in enumerate(report.study_plan, start=1):
        lines += ["", f"{n}. **Q{item.number}. {md(item.question)}** ({md(item.topic)}, {w.score_text(item.score)})"]
        entry = report.question(item.number)
        lines += [f"   - {md(said)}" for said in (w.study_reason_text(entry), w.work_on_text(entry)) if said]
        lines += [f"   - Study next: `{link.id}` \u2014 {md(link.question)}" for link in item.next]
    return lines if report.study_plan else [*lines, "", w.NO_STUDY]
