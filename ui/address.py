"""The page's address (query string): what a reload (F5), or Back then Forward, finds again.

A reload starts a new browser session with empty state, so what the tab shows is kept in the address:
?session=ID the session in progress (set when it begins), ?page=history|report|interview the page, and
?report=ID a past session whose report is open (from History). ?editor=plain keeps the sidebar's "Plain code box"
when the user chose it over the editor: someone who needs it (a screen reader, much pasting) should not have to find
it again after each reload.
"""

from __future__ import annotations

import os
import re

import streamlit as st

from ui import state
from ui.client import ApiClient, ApiError, api_url
from ui.editor import ace_available

SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # an id, not a path ("../me/progress") or a mangled link
PAGE_NAMES = {page.lower(): page for page in state.PAGES}
PLAIN_EDITOR = "plain_editor"  # the sidebar checkbox's key


def restore() -> None:
    """On the first run of a browser session, open what the address names; a part that names nothing this
    key can open (gone, someone else's, mangled) is dropped and the rest opens as usual."""
    if st.session_state.get("_address_read"):
        return
    st.session_state["_address_read"] = True
    if st.query_params.get("editor") == "plain" and ace_available():
        st.session_state[PLAIN_EDITOR] = True  # before the checkbox is drawn: its default is the editor
    resumed = _resume_session(st.query_params.get("session"))
    report = st.query_params.get("report")
    if report and SESSION_ID.fullmatch(report):
        st.session_state["report_sid"] = report
    elif report is not None:
        del st.query_params["report"]
    page = PAGE_NAMES.get(st.query_params.get("page") or "")
    if page:
        st.session_state["_goto"] = page
    elif resumed:
        st.session_state["_goto"] = "Interview"  # an address from before ?page= was kept


def keep(page: str) -> None:
    """Write the page shown, the report open and the code box chosen into the address (each run, once the page is
    known and the sidebar drawn)."""
    if page == "Interview" and st.session_state.get("sid"):
        st.session_state.pop("report_sid", None)  # back in the interview, the Report page follows it again
    _set("page", None if page == "Start" else page.lower())
    _set("report", st.session_state.get("report_sid"))
    if ace_available():  # without it the plain box is all there is: no choice to keep, and a bookmark's stays
        _set("editor", "plain" if st.session_state.get(PLAIN_EDITOR) else None)


def _resume_session(sid: str | None) -> bool:
    if not sid:
        return False
    key = st.session_state.get("api_key") or os.environ.get("INTERVIEWER_API_KEY", "")
    detail = None
    if SESSION_ID.fullmatch(sid):
        try:
            detail = ApiClient(api_url(), key.strip() or None).get(f"/v1/sessions/{sid}")
        except ApiError:
            pass
    if not isinstance(detail, dict) or "transcript" not in detail:
        del st.query_params["session"]
        return False
    state.resume_session(detail)
    return True


def _set(name: str, value: str | None) -> None:
    """Only on a change: each write sends the browser a new address."""
    if value is None:
        if name in st.query_params:
            del st.query_params[name]
    elif st.query_params.get(name) != value:
        st.query_params[name] = value
