"""The answer being written, kept by the API as it is written (PUT /v1/sessions/{id}/draft), so that a reload, a
closed tab or a crash of the app loses nothing; ui.state puts it back in the boxes when the session is opened."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui import state
from ui.client import ApiClient, ApiError

# A text area sends its text to the app only when it loses the focus or on Ctrl+Enter, so a page reloaded while
# the candidate was typing would lose all they typed since. This presses Ctrl+Enter for them (the text area's own
# "apply", which leaves the focus and the caret where they are) once they pause typing in the answer box.
PAUSE_MS = 800
COMMIT_WHILE_TYPING = """<script>
(() => {
  if (window.__answerDraftWatch) return;
  window.__answerDraftWatch = true;
  let timer;
  document.addEventListener("input", (event) => {
    const box = event.target;
    if (box.tagName !== "TEXTAREA" || box.getAttribute("aria-label") !== "Your answer") return;
    clearTimeout(timer);
    timer = setTimeout(() => box.dispatchEvent(new KeyboardEvent("keydown", {
      key: "Enter", code: "Enter", keyCode: 13, ctrlKey: true, bubbles: true,
    })), PAUSE_MS);
  }, true);
})();
</script>""".replace("PAUSE_MS", str(PAUSE_MS))


def watch_typing() -> None:
    """Draw the script that has the answer box send its text when the candidate pauses typing."""
    st.html(COMMIT_WHILE_TYPING, unsafe_allow_javascript=True)


def save(api: ApiClient, *, sid: str, prompt: dict[str, Any], text: str, code: str | None) -> None:
    """Send the answer and code on screen to the API when they differ from what it last kept for this prompt
    (each edit reaches the app once the editor or the box sends it). Code left as the starter is no draft."""
    turn = prompt["turn"]
    if code is not None and code.strip() == (prompt.get("starter_code") or "").strip():
        code = None
    now = (sid, turn, text, code)
    last = st.session_state.get(state.DRAFT_SAVED)
    if last is None or tuple(last[:2]) != (sid, turn):
        last = (sid, turn, "", None)  # nothing kept for this prompt yet: an empty box needs no saving
    if tuple(last) == now:
        return
    try:
        api.put(f"/v1/sessions/{sid}/draft", {"turn": turn, "text": text, "code": code})
    except ApiError as exc:
        if exc.status != 409:  # a prompt answered meanwhile: the next action brings the page up to date
            st.warning(f"Your draft could not be saved ({exc}); it is still in this tab.")
        return
    st.session_state[state.DRAFT_SAVED] = now
