"""The code box: the Ace editor component (syntax highlighting) when installed, else a monospace text area.

The plain box is also offered as a choice in the sidebar: it works with screen readers and in
streamlit.testing, where custom components do not render.
"""

from __future__ import annotations

import time

import streamlit as st

from ui import state

MONOSPACE_CSS = (
    "<style>[class*='st-key-code-'] textarea "
    "{font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9rem;}</style>"
)


# Ace sizes its lines from the font's own height: at 14 px with DejaVu Sans Mono (the monospace most Linux browsers
# fall back to), a 16 px line cut off the underscore at a device scale of 1, so `train_loss` read "train loss".
# At 15 px (18 px lines) it shows; streamlit-ace offers no font or line-height option of its own.
FONT_SIZE_PX = 15

# streamlit-ace (auto_update) sends an edit 200 ms after the last keystroke: a click within that time reaches
# the app first, and the edit follows on the same connection at most that long after it (plus jitter).
ACE_SEND_DELAY_S = 0.2
LATE_EDIT_MARGIN_S = 0.15


def ace_available() -> bool:
    try:
        import streamlit_ace  # noqa: F401
    except ImportError:
        return False
    return True


def code_editor(*, key: str, starter: str, plain: bool) -> str:
    """The candidate's code, starting from the task's starter code; `key` must start with 'code-'. The code
    so far is kept under `key:code`, so switching between the editor and the plain box keeps it."""
    latest = latest_code(key, starter)
    if plain or not ace_available():
        st.markdown(MONOSPACE_CSS, unsafe_allow_html=True)
        if st.session_state.get(f"{key}:shown") != "plain" or not state.shown_on_this_visit(key):
            # The code as the editor had it, not the box's own last state; or, when the box is drawn anew after
            # another page, the code kept (ui.state.kept says why the box needs it set).
            st.session_state[key] = latest
        st.session_state[f"{key}:shown"] = "plain"
        code = str(st.text_area("Your code", height=320, key=key))
        state.mark_shown(key)
    else:
        from streamlit_ace import st_ace

        st.caption("Your code (the editor sends it as you type)")
        # auto_update sends each edit back, so "Run checks" and "Submit" see what is on screen. The editor
        # is made anew with the latest code when it comes back from the plain box.
        if st.session_state.get(f"{key}:shown") == "plain":
            st.session_state[f"{key}:switches"] = st.session_state.get(f"{key}:switches", 0) + 1
        st.session_state[f"{key}:shown"] = "ace"
        editor_key = _ace_key(key)
        # Whether it wraps its lines is set in the browser, by its width (ui.wrapping).
        code = str(st_ace(value=latest, language="python", theme="tomorrow", key=editor_key, auto_update=True,
                          min_lines=14, font_size=FONT_SIZE_PX, tab_size=4, show_gutter=True))
    st.session_state[f"{key}:code"] = code
    return code


def latest_code(key: str, starter: str) -> str:
    """The code as the boxes have it in this run, kept under `key:code`. The box (or editor) shown last may have sent
    an edit with this run, also a run that draws another page (a click elsewhere commits the plain box's text), and
    Streamlit drops the state of a widget that is not drawn: read here, the edit outlives it."""
    latest = str(st.session_state.get(f"{key}:code", starter))
    shown = st.session_state.get(f"{key}:shown")
    if shown == "plain" and key in st.session_state:
        latest = str(st.session_state[key])  # the box's own text: the click that switches back commits it
    elif shown == "ace" and st.session_state.get(_ace_key(key)) is not None:
        latest = str(st.session_state[_ace_key(key)])
    st.session_state[f"{key}:code"] = latest
    return latest


def _ace_key(key: str) -> str:
    """The editor's key: a new one each time it comes back from the plain box, so it is made with the latest code."""
    return f"{key}-ace-{st.session_state.get(f'{key}:switches', 0)}"


def await_last_edit(key: str) -> None:
    """Before the code under `key` is sent: when the editor is showing, give its last keystrokes the time to
    arrive. They come as a newer run, which stops this one at its next element and sends the queued click
    itself, with them (ui.interview_page._queue); the plain box commits its text before a click."""
    if st.session_state.get(f"{key}:shown") == "ace":
        time.sleep(ACE_SEND_DELAY_S + LATE_EDIT_MARGIN_S)
        st.empty()  # that next element, drawn here (a spinner is drawn from a timer thread, where no run stops)
