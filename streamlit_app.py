"""The Streamlit front end: start, interview, report and history pages over the HTTP API.

It holds no interview logic: every question, score and report comes from the API at
INTERVIEWER_API_URL (`make run` starts both). With authentication on, the API key comes from
INTERVIEWER_API_KEY or the sidebar.
"""

from __future__ import annotations

import os

import streamlit as st

from ui import address, history_page, interview_page, report_page, start_page, state, wrapping
from ui.client import ApiClient, ApiError, api_url
from ui.editor import ace_available
from ui.widgets import literal

st.set_page_config(page_title="PyTorch mock interviewer", page_icon="🎤", layout="wide")
PAGES = {
    "Start": start_page.render,
    "Interview": interview_page.render,
    "Report": report_page.render,
    "History": history_page.render,
}


def sidebar() -> ApiClient:
    with st.sidebar:
        st.title("🎤 PyTorch mock interviewer")
        state.apply_pending_page()
        st.radio("Page", list(PAGES), key="nav", label_visibility="collapsed")
        st.divider()
        url = api_url()
        st.caption(f"API: {url}")
        key = st.text_input(
            "API key", value=os.environ.get("INTERVIEWER_API_KEY", ""), type="password", key="api_key",
            help="Needed when the API has authentication on: `interviewer keys create --name NAME`.",
        )
        st.checkbox(
            "Plain code box", key=address.PLAIN_EDITOR, value=not ace_available(), disabled=not ace_available(),
            help="A monospace text box instead of the syntax-highlighting editor. The page's address keeps the "
            "choice, so a reload or a bookmark of the page opens the plain box again.",
        )
    return ApiClient(url, key.strip() or None)


def main() -> None:
    address.restore()
    api = sidebar()
    page = st.session_state.get("nav", "Start")
    address.keep(page)
    state.show_page(page)
    wrapping.code_blocks_fit()  # on every page: the code submitted, a model answer's code, a run's output
    try:
        if page != "Interview":
            interview_page.keep_what_was_typed(api)
        if not address.withheld(page):
            PAGES[page](api)
    except ApiError as exc:
        st.error(literal(str(exc)))


main()
