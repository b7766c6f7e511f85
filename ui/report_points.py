"""The report page's rubric points: each listed once, under its question, as covered, partly stated or missed.

As in the downloaded reports (app/reports): the per-topic table counts what is not yet covered and names the
questions that list it, and the study plan's "Work on" points back to the question rather than listing it again.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui.tables import topic_table
from ui.widgets import POINT_LISTS, literal, score_text

WEAK_BELOW = 3.5  # the files' bar (app/reports/build.py): a question under it is studied, whatever it covered
# As the files say it (app/reports/wording.py, which the front end may not import).
NOT_ANSWERED = "Not answered: the session ended here, so it is not scored and its points were not judged."
FOLLOW_UP_NOT_ANSWERED = ("Last follow-up not answered: the session ended here, so it is not scored and the score of "
                          "the earlier answer stands.")
ON_SCREEN = "Not answered yet: it is on screen in this session, which is still going."
FOLLOW_UP_ON_SCREEN = "Last follow-up not answered yet: it is on screen in this session, which is still going."


def show_topics(report: dict[str, Any]) -> None:
    st.subheader("Per topic")
    if not report.get("topics"):
        st.markdown("_Nothing scored yet._")
        return
    topic_table([{"topic": t["topic"], "questions": t["questions"], "mean score": score_text(t["score"]),
                  "not yet covered": _not_yet_covered(t)} for t in report["topics"]])


def _not_yet_covered(topic: dict[str, Any]) -> str:
    """The topic's points not yet covered, counted, and the questions that list them."""
    counts = ((topic.get("missed", 0), "missed"), (topic.get("partial", 0), "partly stated"))
    said = [f"{n} {what}" for n, what in counts if n]
    return f"{', '.join(said)} ({', '.join(f'Q{n}' for n in topic.get('gaps_in', []))})" if said else "none"


def show_questions(report: dict[str, Any]) -> None:
    """Each question folded away under its number, score and text."""
    st.subheader("Questions")
    for q in report.get("questions", []):
        with st.expander(f"Q{q['number']} · {score_text(q.get('score'))} · {literal(q['question'])}"):
            _question(q, scored_by=scored_by_text(q, report))


def scored_by_text(q: dict[str, Any], report: dict[str, Any]) -> str | None:
    """Which evaluator gave the question its score, as the files say it beside the score (app/reports/wording.py): only
    in a session an LLM judge scored or was asked to score, where a judged score and an offline one read alike."""
    return f"scored by {q['scored_by']}" if report.get("llm_judged") and q.get("scored_by") else None


def _question(q: dict[str, Any], *, scored_by: str | None) -> None:
    """How the question went: its code run, its points (each once), its wrong claims and scoring notes."""
    # The evaluator's words may hold a failure's reason from the model's server: shown as written, not as markup.
    st.caption(" · ".join([q["topic"], f"difficulty {q['difficulty']}", *([literal(scored_by)] if scored_by else []),
                           *_flags(q)]))
    if q.get("score") is None:  # no wrong answer, and no point of it judged
        st.caption(ON_SCREEN if q.get("on_screen") else NOT_ANSWERED)
    if q.get("follow_up_unanswered"):  # its question keeps the earlier answer's score
        st.caption(FOLLOW_UP_NOT_ANSWERED)
    elif q.get("on_screen") and q.get("score") is not None:
        st.caption(FOLLOW_UP_ON_SCREEN)
    if said := code_text(q):
        st.caption(said)
    for check in q.get("failed_checks", []):
        st.warning(f"Failed check {check['name']}: {literal(check.get('message') or '')}")
    for note in q.get("penalties", []):  # what the question's score was charged, as the files list it
        st.caption(f"Penalty: {literal(note)}")
    for key, (title, icon) in POINT_LISTS.items():
        if points := q.get(key):
            st.markdown(f"**{title}**\n\n" + "\n".join(f"- {icon} {literal(p['description'])}{_shown(p)}"
                                                       for p in points))
    for wrong in q.get("misconceptions", []):
        lead = "Your code has" if wrong.get("from_code") else "You said"
        st.error(f"{lead}: \u201c{literal(wrong['quote'])}\u201d  \n{literal(wrong['correction'])}")
    for note in q.get("scoring_notes", []):
        st.caption(literal(note))


def _flags(q: dict[str, Any]) -> list[str]:
    """How the question ended, as the files flag it: the page gave "0 hint(s) · 0 follow-up(s)" and no word of a skip
    or an "I don't know"."""
    gate = q.get("gate")
    return [*["skipped"] * bool(q.get("skipped")), *["answered \"I don't know\""] * bool(q.get("dont_know")),
            *[f"not scored on merit: {gate}"] * bool(gate and gate not in ("skip", "dont_know")),
            *[f"{q.get('follow_ups')} follow-up(s)"] * bool(q.get("follow_ups")),
            *[f"{q.get('hints_used')} hint(s) used"] * bool(q.get("hints_used"))]


def _shown(point: dict[str, Any]) -> str:
    """What shows a point stated: the hidden checks the code passed, or the candidate's words quoted."""
    if point.get("words"):  # missed by a failed check, though stated in words
        return f" \u2014 said in words, not yet shown by your code: \u201c{literal(point['words'])}\u201d"
    if not point.get("quote"):
        return ""
    if point.get("by_run"):
        return f" (your code {literal(point['quote'])})"
    lead = "your code has" if point.get("from_code") else "you said"
    return f" \u2014 {lead} \u201c{literal(point['quote'])}\u201d"


def _checks_not_run(q: dict[str, Any]) -> bool:
    """A code task answered without its hidden checks running (no code sent, or no runner on the server)."""
    return bool(q.get("contract")) and bool(q.get("answered")) and q.get("code_checks_total") is None


def _code_sent(q: dict[str, Any]) -> bool:
    return any(exchange.get("code") for exchange in q.get("transcript", []))


def code_text(q: dict[str, Any]) -> str | None:
    """A code task's run, or why none ran, and the times the candidate ran its checks, as the files say it."""
    checks = None
    if q.get("code_checks_total") is not None:
        checks = f"Code checks: {q['code_checks_passed']}/{q['code_checks_total']} passed ({q['code_status']})."
    elif _checks_not_run(q):
        checks = ("Code checks were unavailable, so your code did not run: the answer was read as text only."
                  if _code_sent(q) else
                  "No code was sent, so the hidden checks did not run: the answer was read as words only.")
    first = "; ".join(f"{c['name']} ({c['message']})" if c.get("message") else c["name"]
                      for c in q.get("first_run_failed") or [])  # code sent again: what its first run failed
    runs = q.get("code_runs") or 0
    ran = f"Hidden checks run {runs} time{'s' * (runs != 1)} with Run checks." if runs else None
    return " ".join(filter(None, [checks, first and f"First run failed: {first}.", ran])) or None


def study_reason(question: dict[str, Any]) -> str | None:
    """Why a study item's question that scored at the bar, or a code task never run, is studied rather than praised,
    or one under the bar with nothing listed to work on (a score under the bar with gaps says it by itself)."""
    score = score_text(question.get("score"))
    if _checks_not_run(question) and _code_sent(question):
        return f"Your code did not run (code checks were unavailable), so {score} is for how it reads: run it " \
               "against the hidden checks."
    if _checks_not_run(question):
        return f"No code was sent, so its hidden checks never ran and {score} is for your words alone: write the " \
               "code to the contract and run them."
    if (question.get("score") or 0.0) >= WEAK_BELOW and not question.get("covered"):
        return f"It scored {score}, but no point was stated in full."
    if question.get("score") is not None and question["score"] < WEAK_BELOW and not any(
            question.get(key) for key in ("failed_checks", "misconceptions", "missed", "partial")):
        if question.get("penalties"):
            return f"No point is missing now: its penalties brought the score to {score} " \
                   f"({'; '.join(question['penalties'])})."
        return f"No point is missing, yet it scored {score}: the score also weighs how closely the answer as a whole " \
               "states the model answer."
    return None


def work_on(question: dict[str, Any]) -> str | None:
    """What a study item's question left to work on, counted by kind: it is listed under the question."""
    failing = {c["name"] for c in question.get("failed_checks", [])}
    fixed = [c for c in question.get("first_run_failed") or [] if c["name"] not in failing]  # at a penalty
    kinds = [(len(question.get("failed_checks", [])), "failed check", "failed checks"),
             (len(fixed), "check your first run failed", "checks your first run failed"),
             *((len(question.get(key, [])), what, what + "s") for key, what in (
                 ("misconceptions", "misconception"), ("missed", "missed point"), ("partial", "partly stated point")))]
    named = [f"{n} {one if n == 1 else many}" for n, one, many in kinds if n]
    if not named:
        return None
    listed = f"{', '.join(named[:-1])} and {named[-1]}" if len(named) > 1 else named[0]
    return f"Work on: the {listed} listed under Q{question['number']} above."
