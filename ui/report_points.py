"""The report page's rubric points: each listed once, under its question, as covered, partly stated or missed.

As in the downloaded reports (app/reports): the per-topic table counts what is not yet covered and names the
questions that list it, and the study plan's "Work on" points back to the question rather than listing it again.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from ui.widgets import literal, score_text

POINT_LISTS = (("covered", "Covered", "✅"), ("partial", "Partly stated", "🟡"), ("missed", "Missed", "❌"))


def show_topics(report: dict[str, Any]) -> None:
    st.subheader("Per topic")
    if not report.get("topics"):
        st.markdown("_Nothing scored yet._")
        return
    st.dataframe(pd.DataFrame(
        [{"topic": t["topic"], "questions": t["questions"], "mean score": score_text(t["score"]),
          "not yet covered": _not_yet_covered(t)} for t in report["topics"]]
    ), hide_index=True)


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
            _question(q)


def _question(q: dict[str, Any]) -> None:
    """How the question went: its code run, its points (each once), its wrong claims and scoring notes."""
    st.caption(f"{q['topic']} · difficulty {q['difficulty']} · {q['hints_used']} hint(s) · "
               f"{q['follow_ups']} follow-up(s)")
    if q.get("code_checks_total") is not None:
        st.caption(f"Code checks: {q['code_checks_passed']}/{q['code_checks_total']} passed ({q['code_status']}).")
    elif q.get("contract") and q.get("answered"):
        st.caption("No code was sent, so the hidden checks did not run: the answer was read as words only.")
    for check in q.get("failed_checks", []):
        st.warning(f"Failed check {check['name']}: {literal(check.get('message') or '')}")
    for key, title, icon in POINT_LISTS:
        if points := q.get(key):
            st.markdown(f"**{title}**\n\n" + "\n".join(f"- {icon} {literal(p['description'])}{_shown(p)}"
                                                       for p in points))
    for wrong in q.get("misconceptions", []):
        st.error(f"You said: \u201c{literal(wrong['quote'])}\u201d  \n{literal(wrong['correction'])}")
    for note in q.get("scoring_notes", []):
        st.caption(literal(note))


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


def work_on(question: dict[str, Any]) -> str | None:
    """What a study item's question left to work on, counted by kind: it is listed under the question."""
    kinds = [(len(question.get(key, [])), what) for key, what in (
        ("failed_checks", "failed check"), ("misconceptions", "misconception"), ("missed", "missed point"),
        ("partial", "partly stated point"))]
    named = [f"{n} {what}" + "s" * (n > 1) for n, what in kinds if n]
    return f"Work on: {', '.join(named)}, listed under Q{question['number']} above." if named else None
