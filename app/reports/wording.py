"""Words every renderer shares, so the Markdown, HTML and PDF reports say the same things."""

from __future__ import annotations

from app.reports.model import Exchange, QuestionEntry, Report
from evaluators.feedback import listed

TITLE = "Interview report"
OVERALL = "Overall"
PER_TOPIC = "Per topic"
QUESTIONS = "Questions"
STRENGTHS = "Strengths"
GAPS = "Gaps"
MISCONCEPTIONS = "Misconceptions to unlearn"
STUDY_PLAN = "Study plan"
TRANSCRIPT = "Transcript"
MODEL_ANSWER = "Model answer"
SECTIONS = (OVERALL, PER_TOPIC, QUESTIONS, STRENGTHS, GAPS, MISCONCEPTIONS, STUDY_PLAN)

NOTHING_ANSWERED = "Nothing was answered in this session, so there is nothing to score yet."
NO_STRENGTHS = "No rubric point was fully covered with a quotable statement."
NO_GAPS = "No missed points: every rubric point was covered."
NO_MISCONCEPTIONS = "No misconceptions were detected."
NO_STUDY = "No weak questions: nothing to add to the plan."


def score_text(score: float | None) -> str:
    return "not scored" if score is None else f"{score:.1f} / 5"


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
    overall = f"Overall score: {score_text(report.overall_score)} over {report.questions_answered + given_up} of " \
              f"{len(report.questions)} question(s)"
    if not given_up:
        return [*lines, f"{overall} answered."]
    return [*lines, f"{overall}: {report.questions_answered} answered, {given_up} skipped or not known (scored 0)."]


def status_flags(entry: QuestionEntry) -> list[str]:
    """Short labels for how the question ended: skipped, gave up, gated, hints, follow-ups."""
    flags: list[str] = []
    if entry.score is None:
        flags.append("not answered")
    if entry.skipped:
        flags.append("skipped")
    if entry.dont_know:
        flags.append("answered \"I don't know\"")
    if entry.gate and entry.gate not in ("skip", "dont_know"):
        flags.append(f"not scored on merit: {entry.gate}")
    if entry.follow_ups:
        flags.append(f"{entry.follow_ups} follow-up(s)")
    if entry.hints_used:
        flags.append(f"{entry.hints_used} hint(s) used")
    return flags


def detail_lines(entry: QuestionEntry) -> list[str]:
    """Everything said under a question's heading before its points: how it ended, the hints given, its code run,
    penalties, scoring notes and failed checks."""
    return [*status_flags(entry), *(f"Hint given: {hint}" for hint in entry.hints),
            *filter(None, [code_text(entry)]), *entry.penalties, *(f"Scoring: {n}" for n in entry.scoring_notes),
            *(f"Failed check {c.name}: {c.message or ''}" for c in entry.failed_checks)]


def missed_text(description: str, verdict: str) -> str:
    return f"{description} (partly)" if verdict == "partial" else description


def focus_text(points: list[str]) -> str:
    """Missed-point descriptions as one run-on list, as the feedback lists them."""
    return listed(points)


def code_text(entry: QuestionEntry) -> str | None:
    checks = (None if entry.code_checks_total is None else
              f"Code checks: {entry.code_checks_passed}/{entry.code_checks_total} passed ({entry.code_status}).")
    runs = (f"Hidden checks run {entry.code_runs} time{'s' * (entry.code_runs != 1)} with Run checks."
            if entry.code_runs else None)
    return " ".join(filter(None, [checks, runs])) or None


def asked_label(exchange: Exchange) -> str:
    return "Follow-up" if exchange.kind == "follow_up" else "Asked"


def reply_label(exchange: Exchange) -> str:
    """How the candidate met the prompt; their words follow where they gave some."""
    if exchange.action == "skip":
        return "Skipped"
    if exchange.action == "dont_know":
        return "Answered \"I don't know\""
    if exchange.action is None:
        return "No reply: the session ended here"
    return "Your answer"
