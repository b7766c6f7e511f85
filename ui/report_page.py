"""The report page: scores overall and per topic, each question's points, strengths, a study plan, downloads."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from ui import resume, state
from ui.client import ApiClient, ApiError
from ui.report_points import show_questions, show_topics, study_reason, work_on
from ui.widgets import literal, score_text

SCORE_SCALE = alt.Scale(domain=[0, 5])
# Side by side, the two charts are as tall: a bar chart is otherwise as tall as its bars (20 px a topic), and one or two
# topics left a blank beside the per-question chart's 300 px.
CHART_HEIGHT = 260
# Streamlit's chart theme cuts an axis label at 100 px: "performance-memory" read "performance-me…". The topic axis
# takes its names whole (0: no limit; the longest of the bank's, 18 characters, is about 120 px) and never drops one
# that would touch its neighbour. Drawn as SVG, not on a canvas, the names are text a screen reader (and a test) finds.
TOPIC_AXIS = alt.Axis(labelLimit=0, labelOverlap=False)
AS_SVG = {"embedOptions": {"renderer": "svg"}}
DOWNLOADS = (
    ("markdown", "Markdown", "md", "text/markdown"),
    ("html", "HTML", "html", "text/html"),
    ("pdf", "PDF", "pdf", "application/pdf"),
)


def render(api: ApiClient) -> None:
    st.header("Report")
    # A tab with no session of its own (a new tab, a bookmark) shows the user's session in progress, if any.
    chosen = st.session_state.get("report_sid") or st.session_state.get("sid")
    sid = chosen or _latest_active_id(api)
    if not sid:
        st.info("No report yet: finish an interview, or open a past one from History.")
        if st.button("Go to History"):
            state.goto("History")
        return
    try:
        report = api.get(f"/v1/sessions/{sid}/report", format="json")
    except ApiError as exc:
        if exc.status != 409:
            raise
        # The one refusal of this request: an interview-mode session keeps its scores until it is completed, as it
        # should, so this is news, not a failure.
        st.info("This interview-mode session is still in progress: its report, with every score and the feedback, "
                "is ready once the session is completed.")
        _back_to_the_interview(api, sid, found=not chosen)
        return
    _summary(report)
    if report.get("status") == "active":
        st.info("This session is still going: the report covers what you have answered so far, and grows as you "
                "go on.")
        _back_to_the_interview(api, sid, found=not chosen)
    if not any(q.get("score") is not None for q in report.get("questions", [])):
        # As the files say it: a question shown and not answered has no points to list, and an empty plan is
        # no reason for "well done".
        st.info("Nothing was answered in this session, so there is nothing to score yet.")
        _downloads(api, sid, version=str(report.get("updated_at")))
        return
    _charts(report)
    show_topics(report)
    show_questions(report)
    _strengths(report)
    _misconceptions(report)
    _study_plan(report)
    _downloads(api, sid, version=str(report.get("updated_at")))


def _back_to_the_interview(api: ApiClient, sid: str, *, found: bool) -> None:
    """A button to the session's interview: this tab's own, or the one in progress `found` for a tab without one (a
    past session opened from History has its Continue there)."""
    if sid == st.session_state.get("sid") and st.button("Back to the interview"):
        state.goto("Interview")
    if found and st.button("Continue the interview"):
        resume.continue_session(api, sid)


def _latest_active_id(api: ApiClient) -> str | None:
    latest = resume.latest_active(api)
    return None if latest is None else str(latest["id"])


def _summary(report: dict[str, Any]) -> None:
    config = report.get("config", {})
    st.caption(
        f"Session {report['session_id'][:8]} · {report['mode']} mode · {report['status']} · "
        f"started {report['created_at'][:16].replace('T', ' ')}"
    )
    columns = st.columns(3)
    columns[0].metric("Overall score", score_text(report.get("overall_score")))
    columns[1].metric("Questions answered", f"{report['questions_answered']} of {config.get('num_questions', '?')}")
    columns[2].metric("Topics", len(report.get("topics", [])))
    for note in report.get("notes", []):
        st.caption(literal(note))


def _charts(report: dict[str, Any]) -> None:
    left, right = st.columns(2)
    topics = report.get("topics", [])
    with left:
        st.subheader("Score per topic")
        if topics:
            frame = pd.DataFrame({"topic": [t["topic"] for t in topics], "score": [t["score"] for t in topics]})
            chart = alt.Chart(frame).mark_bar().encode(
                x=alt.X("score:Q", scale=SCORE_SCALE, title="mean score (0-5)"),
                y=alt.Y("topic:N", sort="-x", title=None, axis=TOPIC_AXIS),
                tooltip=["topic", "score"],
            ).properties(height=CHART_HEIGHT, usermeta=AS_SVG)
            st.altair_chart(chart, width="stretch")
    questions = [q for q in report.get("questions", []) if q.get("score") is not None]
    with right:
        st.subheader("Score per question")
        if questions:
            frame = pd.DataFrame(
                {"question": [q["number"] for q in questions], "score": [q["score"] for q in questions],
                 "topic": [q["topic"] for q in questions]}
            )
            chart = alt.Chart(frame).mark_line(point=True).encode(
                x=alt.X("question:O", title="question"),
                y=alt.Y("score:Q", scale=SCORE_SCALE, title="score (0-5)"),
                tooltip=["question", "topic", "score"],
            ).properties(height=CHART_HEIGHT, usermeta=AS_SVG)
            st.altair_chart(chart, width="stretch")


def _strengths(report: dict[str, Any]) -> None:
    """The questions answered well; their points, with the words that earned them, are under each question."""
    st.subheader("Strengths")
    lines = [f"- **Q{s['number']}. {literal(s['question'])}** ({s['topic']}, {score_text(s['score'])}): "
             f"{s['covered']} of {s['points']} points covered{_by_run(s)}." for s in report.get("strengths", [])]
    st.markdown("\n".join(lines) or "_No question scored 3.5 / 5 or more with a rubric point stated in full (and, "
                                     "for a code task, its code run)._")


def _by_run(strength: dict[str, Any]) -> str:
    """Of a strong code task's covered points, those its run showed, as the files count them."""
    shown = strength.get("by_run") or 0
    return f" ({shown} shown by the hidden checks your code passed)" if shown else ""


def _misconceptions(report: dict[str, Any]) -> None:
    """The wrong claims, named: the candidate's words and each correction are under the question."""
    st.subheader("Misconceptions to unlearn")
    lines = [f"- Q{m['number']} ({m['topic']}): {literal(m['claim'])}" for m in report.get("misconceptions", [])]
    st.markdown("Wrong claims found in your answers; your words and the correction are under each question.\n\n"
                + "\n".join(lines) if lines else "_None detected._")


def _study_plan(report: dict[str, Any]) -> None:
    st.subheader("Study plan")
    plan = report.get("study_plan", [])
    questions = {q["number"]: q for q in report.get("questions", [])}
    if not plan:
        st.markdown("_No weak questions: nothing to add to the plan._")
    for item in plan:
        question = questions.get(item["number"], {"number": item["number"]})
        with st.container(border=True):
            st.markdown(f"**Q{item['number']}. {literal(item['question'])}**  \n"
                        f"{item['topic']} · scored {score_text(item.get('score'))}")
            for said in filter(None, [study_reason(question), work_on(question)]):
                st.markdown(literal(said))
            if item.get("next"):
                st.markdown("Practise next (related bank questions):\n"
                            + "\n".join(f"- `{n['id']}`: {literal(n['question'])}" for n in item["next"]))


def _downloads(api: ApiClient, sid: str, *, version: str) -> None:
    """The files of this version of the report (its session's last activity): a session answered further
    since they were fetched gets new ones."""
    st.subheader("Download")
    cache: dict[tuple[str, str, str], bytes] = st.session_state.setdefault("report_files", {})
    columns = st.columns(len(DOWNLOADS))
    for column, (fmt, label, ext, mime) in zip(columns, DOWNLOADS, strict=True):
        if (sid, fmt, version) not in cache:
            cache[(sid, fmt, version)] = api.get_bytes(f"/v1/sessions/{sid}/report", format=fmt)
        column.download_button(
            f"⬇ {label}", data=cache[(sid, fmt, version)], file_name=f"interview-report-{sid[:8]}.{ext}", mime=mime,
            key=f"download-{fmt}", width="stretch",
        )
