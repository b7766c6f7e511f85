"""Continuing a session left in progress. A new tab or a bookmark starts with no session of its own while the API
still has the user's: the pages said "No interview in progress", and starting anew used up more questions."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui import state
from ui.client import ApiClient, ApiError
from ui.widgets import literal


def latest_active(api: ApiClient) -> dict[str, Any] | None:
    """The user's newest session still going (as GET /v1/sessions lists it), or None; None too when the API cannot
    say, since the page then shows what it would without one (and the API's trouble shows elsewhere)."""
    try:
        sessions = api.get("/v1/sessions", status="active", limit=1)
    except ApiError:
        return None
    return sessions[0] if sessions else None


def continue_session(api: ApiClient, sid: str) -> None:
    """Open the session on the Interview page as the API has it (its transcript, its prompt, its draft)."""
    try:
        detail = api.get(f"/v1/sessions/{sid}")
    except ApiError as exc:
        st.error(literal(str(exc)))
        return
    state.resume_session(detail)
    state.goto("Interview")


def describe(session: dict[str, Any]) -> str:
    """A session as History lists it: when, mode, how far."""
    return (f"started {session['created_at'][:16].replace('T', ' ')} · {session['mode']} mode · "
            f"{session['answered']} of {session['num_questions']} questions done")


def offer_to_continue(api: ApiClient, session: dict[str, Any] | None, *, where: str) -> None:
    """Say that `session` (the latest still going) waits, with a button that continues it."""
    if session is None:
        return
    st.info(f"You have an interview in progress ({describe(session)}). Continue it, or see every session in History.")
    left, right, _ = st.columns([1.3, 1, 3])
    if left.button("▶ Continue my interview", type="primary", key=f"continue-latest-{where}"):
        continue_session(api, session["id"])
    if right.button("Go to History", key=f"history-{where}"):
        state.goto("History")
