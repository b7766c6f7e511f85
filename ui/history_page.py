"""The history page: past sessions, progress per topic over time, weak topics and a targeted session."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from ui import resume, state
from ui.client import ApiClient
from ui.start_page import start
from ui.tables import topic_table
from ui.widgets import score_text, shown_score


def render(api: ApiClient) -> None:
    st.header("History and progress")
    progress = api.get("/v1/me/progress")
    sessions = api.get_every_page("/v1/sessions", limit=200)  # the API sends 50 a page unless asked
    columns = st.columns(3)
    columns[0].metric("Sessions", progress["sessions"])
    columns[1].metric("Completed", progress["completed_sessions"])
    columns[2].metric("Answers scored", progress["answers"])
    _weak_topics(api, progress["weak_topics"])
    _progress_chart(progress["topics"])
    _sessions(api, sessions)


def _weak_topics(api: ApiClient, weak: list[str]) -> None:
    st.subheader("Weak topics")
    if not weak:
        st.markdown("_No weak topics yet: answer a few questions first, or keep it up._")
        return
    st.markdown(" ".join(f"`{t}`" for t in weak))
    if st.button("🎯 Practise my weak topics", type="primary"):
        start(api, {"topics": weak, "mode": "practice", "num_questions": 5, "difficulty": "adaptive"})


def _progress_chart(topics: list[dict[str, Any]]) -> None:
    st.subheader("Progress per topic")
    if not topics:
        st.markdown("_No scored answers yet._")
        return
    # One x position per session, in the order they were taken, labelled with when.
    first_seen: dict[str, str] = {}
    for point in sorted((p for t in topics for p in t["history"]), key=lambda p: p["at"]):
        first_seen.setdefault(point["session_id"], point["at"])
    labels = {sid: f"{n}. {at[5:16].replace('T', ' ')}" for n, (sid, at) in enumerate(first_seen.items(), 1)}
    rows = [
        {"session": labels[point["session_id"]], "topic": topic["topic"],
         "mean score": shown_score(point["mean_score"])}
        for topic in topics
        for point in topic["history"]
    ]
    chart = alt.Chart(pd.DataFrame(rows)).mark_line(point=True).encode(
        x=alt.X("session:O", sort=list(labels.values()), title="session", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("mean score:Q", scale=alt.Scale(domain=[0, 5]), title="mean score (0-5)"),
        color="topic:N",
        tooltip=["session", "topic", "mean score"],
    )
    st.altair_chart(chart, width="stretch")
    # Shown as the report shows a score (1.55 read 1.6 / 5 there and 1.55 here).
    topic_table([{"topic": t["topic"], "answers": t["answers"], "mean score": score_text(t["mean_score"]),
                  "latest score": score_text(t["latest_score"])} for t in topics])


def _sessions(api: ApiClient, sessions: list[dict[str, Any]]) -> None:
    st.subheader("Past sessions")
    if not sessions:
        st.markdown("_No sessions yet: start one on the Start page._")
        return
    for session in sessions:
        with st.container(border=True):
            left, middle, right = st.columns([3, 1, 1])
            left.markdown(
                f"**{session['created_at'][:16].replace('T', ' ')}** · {session['mode']} · "
                f"{session['answered']} of {session['num_questions']} questions done · {session['status']}"
            )
            # An interview-mode report exists once the session is completed; before, the button would only err.
            hidden = session["mode"] == "interview" and session["status"] != "completed"
            if not hidden and middle.button("Report", key=f"report-{session['id']}"):
                st.session_state["report_sid"] = session["id"]
                state.goto("Report")
            if session["status"] == "active" and right.button("Continue", key=f"continue-{session['id']}"):
                resume.continue_session(api, session["id"])

