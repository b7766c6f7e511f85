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
from ui.widgets import literal

SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # an id, not a path ("../me/progress") or a mangled link
PAGE_NAMES = {page.lower(): page for page in state.PAGES}
PLAIN_EDITOR = "plain_editor"  # the sidebar checkbox's key
# (session id, why) for the address's session while the API cannot say whether it exists (down, failing, or the key
# refused): it stays in the address, so a reload once the API is back opens it, and each run tries again.
UNOPENED = "_address_session_unopened"


def restore() -> None:
    """On the first run of a browser session, open what the address names; a part that names nothing this
    key can open (gone, someone else's, mangled) is dropped, with a word for a session, and the rest opens as usual.
    A session the API could not be asked about (down, failing) stays in the address and is asked for on each run."""
    if st.session_state.get("_address_read"):
        unopened = st.session_state.get(UNOPENED)
        if unopened and st.query_params.get("session") != unopened[0]:
            del st.session_state[UNOPENED]  # another session began since
        elif unopened:  # the API may answer now (or the key typed in the sidebar be right)
            _resume_session(unopened[0])
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
    elif resumed or UNOPENED in st.session_state:
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


def withheld(page: str) -> bool:
    """On a page that would show the address's session (the interview, or the report of no past session), say why it
    is not open yet, instead of "No interview in progress". True when that took the page's place."""
    shows_it = page == "Interview" or (page == "Report" and not st.session_state.get("report_sid"))
    if UNOPENED not in st.session_state or not shows_it:
        return False
    sid, why = st.session_state[UNOPENED]
    st.error(literal(f"Session {sid[:8]} in this page's address could not be opened: {why}. It opens once the API "
                     "answers: reload the page then."))
    return True


def _resume_session(sid: str | None) -> bool:
    if not sid:
        return False
    key = st.session_state.get("api_key") or os.environ.get("INTERVIEWER_API_KEY", "")
    detail = None
    if SESSION_ID.fullmatch(sid):
        try:
            detail = ApiClient(api_url(), key.strip() or None).get(f"/v1/sessions/{sid}")
        except ApiError as exc:
            if exc.status != 404:  # not "no such session": keep it, for a reload once the API can say
                st.session_state[UNOPENED] = (sid, str(exc))
                return False
    st.session_state.pop(UNOPENED, None)
    if not isinstance(detail, dict) or "transcript" not in detail:
        del st.query_params["session"]
        st.warning(literal(f"No session {sid[:64]!r} was found for this API key: the address named one that is gone, "
                           "someone else's, or mistyped."))
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
