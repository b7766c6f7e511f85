"""Words every renderer shares, so the Markdown, HTML and PDF reports say the same things."""

from __future__ import annotations

import re

from app.reports.build import WEAK_BELOW
from app.reports.model import (
    CoveredPoint,
    Exchange,
    FailedCheck,
    MisconceptionNote,
    QuestionEntry,
    Report,
    Strength,
    TopicScore,
)

TITLE = "Interview report"
OVERALL = "Overall"
PER_TOPIC = "Per topic"
QUESTIONS = "Questions"
STRENGTHS = "Strengths"
MISCONCEPTIONS = "Misconceptions to unlearn"
STUDY_PLAN = "Study plan"
TRANSCRIPT = "Transcript"
MODEL_ANSWER = "Model answer"
CONTRACT = "Contract"
_FENCE_LINE = re.compile(r"^\s*```[\w+-]*\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)]|\|)\s")
_ITEM_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")  # a list item's marker: its text starts where this ends


def fenceless(answer: str) -> str:
    """A model answer or a contract as the reports print it, as written: its code keeps its lines and indentation,
    and the fence lines around it go (a preformatted block printed "```python" as text)."""
    return "\n".join(line for line in answer.splitlines() if not _FENCE_LINE.match(line))


def reflowed(answer: str) -> str:
    """A model answer or a contract without its fence lines, each prose paragraph on one line for the page to wrap:
    the bank breaks its prose near 95 characters, and a page wrapping those lines again left one-word lines
    between them. Code, list items and indented lines keep their lines, except a list item's own next lines,
    indented under its text (a contract's "- It must give finite,\n  accurate results"): they join the item."""
    lines: list[str] = []
    fenced, joinable, item_text_at = False, False, None  # item_text_at: where the open list item's text starts
    item_open = False  # the last line kept is a list item's
    for line in answer.splitlines():
        if _FENCE_LINE.match(line):
            fenced, joinable, item_text_at = not fenced, False, None
            continue
        marker = None if fenced else _ITEM_MARKER.match(line)
        indent = len(line) - len(line.lstrip())
        if not fenced and line.strip() and not marker and item_text_at is not None and indent >= item_text_at:
            lines[-1] += " " + line.strip()  # the open item's next line, under its text
            continue
        text = not fenced and bool(line.strip()) and not line[0].isspace()
        item = text and _LIST_ITEM.match(line) is not None
        # A line set flush after a list item goes on with it only mid-sentence ("... picking a provider (CPU," then
        # "CUDA, TensorRT)."): after a finished item it is the text's own next line, as a contract's closing "Do not
        # use nn.GRUCell, ..." is (joined, it was read as the last item's).
        goes_on = joinable and (not item_open or lines[-1].rstrip()[-1:].isalnum() or lines[-1].rstrip()[-1:] == ",")
        if text and not item and goes_on:  # a paragraph's next line, or a list item's
            lines[-1] += " " + line
        else:
            lines.append(line)
        joinable = text
        item_open = item or (item_open and text and not item and goes_on)
        item_text_at = marker.end() if marker else item_text_at if text and not item else None
    return "\n".join(lines)


def answer_blocks(answer: str) -> list[tuple[str, str]]:
    """A model answer as its prose and its code, in order: ("prose", its paragraphs reflowed, one a line) and
    (language, the fenced code as written; "text" for a fence that names none). A code task's model answer is prose
    then its solution in a python fence, and printed as one preformatted block the prose ran into the code."""
    blocks: list[tuple[str, str]] = []
    kind, lines = "prose", []
    for line in [*answer.splitlines(), "```"]:  # a closing fence the answer left out is closed here
        if not _FENCE_LINE.match(line):
            lines.append(line)
            continue
        text = reflowed("\n".join(lines)).strip("\n") if kind == "prose" else "\n".join(lines).strip("\n")
        if text.strip():
            blocks.append((kind, text))
        named = line.strip().strip("`").strip()
        kind, lines = ((named or "text") if kind == "prose" else "prose"), []
    return blocks


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def code_spans(line: str) -> list[tuple[bool, str]]:
    """A line of the bank's prose as (is inline code, text) pieces: its `weight_ih` spans are names to set as code,
    where written out literally a report showed the backticks (and Markdown its escapes: \\`weight\\_ih\\`)."""
    pieces: list[tuple[bool, str]] = []
    at = 0
    for span in _CODE_SPAN.finditer(line):
        pieces += [(False, line[at:span.start()]), (True, span[1])]
        at = span.end()
    return [p for p in [*pieces, (False, line[at:])] if p[1]]


def paragraphs(prose: str) -> list[list[str]]:
    """A prose block's paragraphs (split at blank lines), each as its lines: one for running text, one an item
    for a list."""
    return [lines for part in re.split(r"\n\s*\n", prose) if (lines := [ln for ln in part.splitlines() if ln.strip()])]


SECTIONS = (OVERALL, PER_TOPIC, QUESTIONS, STRENGTHS, MISCONCEPTIONS, STUDY_PLAN)

NOTHING_ANSWERED = "Nothing was answered in this session, so there is nothing to score yet."
NO_STRENGTHS = f"No question scored {WEAK_BELOW} / 5 or more with a rubric point stated in full (and, for a code " \
               "task, its code run)."
NO_MISCONCEPTIONS = "No misconceptions were detected."
# Each wrong claim's quote and correction are listed once, under its question; this section names the claims.
MISCONCEPTIONS_LEAD = "Wrong claims found in your answers; your words and the correction are under each question."
NO_STUDY = "No weak questions: nothing to add to the plan."


def score_text(score: float | None) -> str:
    return "not scored" if score is None else f"{score:.1f} / 5"


def scored_by_text(entry: QuestionEntry, report: Report) -> str | None:
    """Beside a question's score, which evaluator gave it (None when none did, or every score of the session came
    from the offline scorer: with no LLM judge in it, there is nothing to tell apart)."""
    return f"scored by {entry.scored_by}" if report.llm_judged and entry.scored_by else None


def overview_lines(report: Report) -> list[str]:
    """The facts under the Overall heading, as plain sentences: the session's notes among them (fewer
    questions than asked for, an LLM that failed and was replaced by offline scoring)."""
    lines = [
        f"Session {report.session_id} ({report.mode} mode, {report.status}).",
        f"Started {report.created_at:%Y-%m-%d %H:%M}, last activity {report.updated_at:%Y-%m-%d %H:%M}.",
        *(f"Note: {note}" for note in report.notes),
    ]
    if report.empty:
        return [*lines, NOTHING_ANSWERED]
    given_up = sum(q.skipped or q.dont_know for q in report.questions)
    unanswered = sum(q.score is None for q in report.questions)
    # Out of the questions planned: an interview ended early read "3 of 3" after 3 of its 4 questions.
    asked, planned = len(report.questions), int(report.config.get("num_questions") or 0)
    of, early = (f"{planned} planned", f" ({asked} asked)") if planned > asked else (f"{asked}", "")
    overall = f"Overall score: {score_text(report.overall_score)} over {report.questions_answered + given_up} of " \
              f"{of} question(s)"
    if not given_up and not unanswered:
        return [*lines, f"{overall} answered{early}."]
    said = [f"{report.questions_answered} answered", *[f"{given_up} skipped or not known (scored 0)"] * bool(given_up),
            *[f"{unanswered} shown but not answered (not scored)"] * bool(unanswered)]
    return [*lines, f"{overall}{early}: {', '.join(said)}."]


# A question shown when the session ended: it is no wrong answer, so none of its points is listed as missed.
NOT_ANSWERED = "Not answered: the session ended here, so it is not scored and its points were not judged."
# A follow-up on screen when the session ended: listed like a question not answered, and no more a wrong answer.
FOLLOW_UP_NOT_ANSWERED = "Last follow-up not answered: the session ended here, so it is not scored and the score " \
                         "of the earlier answer stands."
# The same read midway through a session (practice), where the prompt is on screen: the session did not end there.
ON_SCREEN = "Not answered yet: it is on screen in this session, which is still going."
FOLLOW_UP_ON_SCREEN = "Last follow-up not answered yet: it is on screen in this session, which is still going."


def status_flags(entry: QuestionEntry) -> list[str]:
    """Short labels for how the question ended: skipped, gave up, gated, hints, follow-ups."""
    flags: list[str] = []
    if entry.score is None:
        flags.append(ON_SCREEN if entry.on_screen else NOT_ANSWERED)
    if entry.skipped:
        flags.append("skipped")
    if entry.dont_know:
        flags.append("answered \"I don't know\"")
    if entry.gate and entry.gate not in ("skip", "dont_know"):
        flags.append(f"not scored on merit: {entry.gate}")
    if entry.follow_ups:
        flags.append(f"{entry.follow_ups} follow-up(s)")
    if entry.follow_up_unanswered:
        flags.append(FOLLOW_UP_NOT_ANSWERED)
    elif entry.on_screen and entry.score is not None:  # its question was answered: a follow-up is on screen
        flags.append(FOLLOW_UP_ON_SCREEN)
    if entry.hints_used:
        flags.append(f"{entry.hints_used} hint(s) used")
    return flags


def detail_lines(entry: QuestionEntry) -> list[str]:
    """Everything said under a question's heading before its points: how it ended, the hints given, its code run,
    penalties, scoring notes and failed checks."""
    return [*status_flags(entry), *(f"Hint given: {hint}" for hint in entry.hints),
            *filter(None, [code_text(entry)]), *entry.penalties, *(f"Scoring: {n}" for n in entry.scoring_notes),
            *(f"Failed check {c.name}: {c.message or ''}" for c in entry.failed_checks)]


COVERED, PARTLY, MISSED = "Covered", "Partly stated", "Missed"
# A code task's points not stated when its code score is full: they cost nothing (QuestionEntry.worth_saying).
WORTH_SAYING = "Not needed for the score, worth saying in an interview"


def point_lists(entry: QuestionEntry) -> list[tuple[str, list[tuple[str, str | None, str]]]]:
    """The question's rubric points under their headings, each point under one only, as (description, the
    candidate's sentence that earned it, how it is shown: `said` in their words, `code` a line of their code, or
    `run`, the code's run: then the "sentence" names the hidden checks it passed): covered, partly stated, missed
    (no sentence, or `words`: the one that states a point a failed check missed), and not stated yet not needed
    for a full code score.

    A partial point is shown as partly stated with its sentence, never as missed and never with its credit,
    even near 0: of the 23 partial verdicts with a credit under 0.1 on this team's answers graded point by
    point (the later sets; bench/bench_scorer.py prints these), the graders found 15 stated in full or in part,
    against 157 of the 500 points called missed; and a credit reads as a share of the point stated, which it
    is not (under 0.1, 7 of 23 were stated in full; at 0.5 or more, 71 of 119). The sentence lets the reader
    judge."""
    return [
        (COVERED, [(p.description, p.quote, _shown_by(p)) for p in entry.covered]),
        (PARTLY, [(p.description, p.quote, _shown_by(p)) for p in entry.partial]),
        (MISSED, [(p.description, p.words, "words") for p in entry.missed]),
        (WORTH_SAYING, [(p.description, None, "words") for p in entry.worth_saying]),
    ]


# What a point's quote is introduced by: the candidate's words, a line of their code, the checks their code passed.
QUOTE_LEAD = {"said": "you said", "code": "your code has", "run": "your code",
              "words": "said in words, not yet shown by your code:"}


def wrong_claim_lead(note: MisconceptionNote) -> str:
    """What a wrong claim's quote is introduced by: "You said", or "Your code has" for a line of the code."""
    return QUOTE_LEAD["code" if note.from_code else "said"].capitalize()


def _shown_by(point: CoveredPoint) -> str:
    return "run" if point.by_run else "code" if point.from_code else "said"


# Each gap is listed once, under its question (with the transcript and the model answer beside it): the
# per-topic table counts them and the study plan points back to them, rather than listing them twice more.
TOPIC_GAPS = "Not yet covered"


def _counted(counts: list[tuple[int, str, str]]) -> list[str]:
    """"2 missed points", "1 misconception": each count that is not 0, with its noun (one, many)."""
    return [f"{n} {one if n == 1 else many}" for n, one, many in counts if n]


def topic_gaps_text(topic: TopicScore) -> str:
    """The per-topic table's tally of points not yet covered, and the questions that list them."""
    said = [f"{topic.missed} missed"] * bool(topic.missed) + [f"{topic.partial} partly stated"] * bool(topic.partial)
    return f"{', '.join(said)} ({', '.join(f'Q{n}' for n in topic.gaps_in)})" if said else "none"


def work_on_text(entry: QuestionEntry) -> str | None:
    """What a study item's question left to work on, by kind, pointing to where it is listed under the question."""
    named = _counted([(len(entry.failed_checks), "failed check", "failed checks"),
                      (len(entry.first_run_fixed), "check your first run failed", "checks your first run failed"),
                      (len(entry.misconceptions), "misconception", "misconceptions"),
                      (len(entry.missed), "missed point", "missed points"),
                      (len(entry.partial), "partly stated point", "partly stated points")])
    if not named:
        return None
    return f"Work on: the {' and '.join([', '.join(named[:-1]), named[-1]] if len(named) > 1 else named)} " \
           f"listed under Q{entry.number} above."


def study_reason_text(entry: QuestionEntry) -> str | None:
    """Why a question that scored at the bar, or a code task never run, is in the study plan rather than a strength,
    or one under the bar with nothing listed to work on (a score under the bar with gaps says it by itself)."""
    if entry.checks_not_run and entry.code_sent:
        return f"Your code did not run (code checks were unavailable), so {score_text(entry.score)} is for how it " \
               "reads: run it against the hidden checks."
    if entry.checks_not_run:
        return f"No code was sent, so its hidden checks never ran and {score_text(entry.score)} is for your words " \
               "alone: write the code to the contract and run them."
    if entry.score is not None and entry.score >= WEAK_BELOW and not entry.covered:
        return f"It scored {score_text(entry.score)}, but no point was stated in full."
    if entry.score is not None and entry.score < WEAK_BELOW and entry.all_stated:  # nothing listed to work on: say why
        if entry.penalties:
            return f"No point is missing now: its penalties brought the score to {score_text(entry.score)} " \
                   f"({'; '.join(entry.penalties)})."
        return f"No point is missing, yet it scored {score_text(entry.score)}: the score also weighs how closely the " \
               "answer as a whole states the model answer."
    return None


def strength_text(strength: Strength) -> str:
    """What a strong question earned, in numbers: its points and the words that earned them are under it."""
    run = f" ({strength.by_run} shown by the hidden checks your code passed)" if strength.by_run else ""
    return f"{strength.covered} of {strength.points} points covered{run}."


def misconception_text(note: MisconceptionNote) -> str:
    return f"Q{note.number} ({note.topic}): {note.claim}"


# A code task answered in words alone: the score stands on the words (the session said so when it was given).
NO_CODE = "No code was sent, so the hidden checks did not run: the answer was read as words only."
# Code sent to a server without a code runner: it was read as text, never run.
NOT_RUN = "Code checks were unavailable, so your code did not run: the answer was read as text only."


def code_text(entry: QuestionEntry) -> str | None:
    checks = (NOT_RUN if entry.code_sent else NO_CODE) if entry.checks_not_run else None
    if entry.code_checks_total is not None:
        checks = f"Code checks: {entry.code_checks_passed}/{entry.code_checks_total} passed ({entry.code_status})."
    runs = (f"Hidden checks run {entry.code_runs} time{'s' * (entry.code_runs != 1)} with Run checks."
            if entry.code_runs else None)
    return " ".join(filter(None, [checks, first_run_text(entry.first_run_failed), runs])) or None


def first_run_text(failed: list[FailedCheck]) -> str | None:
    """What the first run of code sent again failed, in one line: the latest run's counts hide it."""
    said = "; ".join(f"{c.name} ({c.message})" if c.message else c.name for c in failed)
    return f"First run failed: {said}." if said else None


def asked_label(exchange: Exchange) -> str:
    return "Follow-up" if exchange.kind == "follow_up" else "Asked"


def reply_label(exchange: Exchange, *, on_screen: bool = False) -> str:
    """How the candidate met the prompt; their words follow where they gave some (`on_screen`: the question's last
    prompt is on screen in a session still going)."""
    if exchange.action == "skip":
        return "Skipped"
    if exchange.action == "dont_know":
        return "Answered \"I don't know\""
    if exchange.action is None:
        return "No reply yet: the session is still going" if on_screen else "No reply: the session ended here"
    return "Your answer"
