"""The code box: the Ace editor component (syntax highlighting) when installed, else a monospace text area.

The plain box is also offered as a choice in the sidebar: it works with screen readers and in
streamlit.testing, where custom components do not render.
"""

from __future__ import annotations

import streamlit as st

MONOSPACE_CSS = (
    "<style>[class*='st-key-code-'] textarea "
    "{font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9rem;}</style>"
)


def ace_available() -> bool:
    try:
        import streamlit_ace  # noqa: F401
    except ImportError:
        return False
    return True


def code_editor(*, key: str, starter: str, plain: bool) -> str:
    """The candidate's code, starting from the task's starter code; `key` must start with 'code-'."""
    if plain or not ace_available():
        st.markdown(MONOSPACE_CSS, unsafe_allow_html=True)
        return str(st.text_area("Your code", value=starter, height=320, key=key))
    from streamlit_ace import st_ace

    st.caption("Your code (the editor sends it as you type; Ctrl+Enter also applies it)")
    # auto_update sends each edit back, so "Run checks" and "Submit" always see what is on screen.
    return str(
        st_ace(value=starter, language="python", theme="tomorrow", key=key, auto_update=True,
               min_lines=14, font_size=14, tab_size=4, show_gutter=True)
    )
