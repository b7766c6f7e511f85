"""The answer being written, kept by the API as it is written (PUT /v1/sessions/{id}/draft), so that a reload, a
closed tab or a crash of the app loses nothing; ui.state puts it back in the boxes when the session is opened."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui import state
from ui.client import ApiClient, ApiError
from ui.editor import ACE_SEND_DELAY_S

# A text area sends its text to the app only when it loses the focus or on Ctrl+Enter, so a page reloaded while
# the candidate was typing would lose all they typed since. This presses Ctrl+Enter for them (the text area's own
# "apply", which leaves the focus and the caret where they are) once they pause typing in the answer box.
PAUSE_MS = 800
EMPTY_WAIT_MS = 2000
# What came after the last pause was still lost to a reload: nothing sent while the page unloads reaches the app (a
# Ctrl+Enter on `beforeunload` or `pagehide` was never saved), and the browser cannot send the draft to the API itself
# (the API may be out of its reach, wants a key the page must not hold, and takes no `sendBeacon` POST). So each
# keystroke is also kept in the tab's sessionStorage, which a reload keeps, and the reloaded page puts it back in the
# box and sends it. Only over a text this tab sent (or showed before it was typed in): a draft another tab saved since
# is newer, and stays.
COMMIT_WHILE_TYPING = """<script>
(() => {
  if (window.__answerDraftWatch) return;
  window.__answerDraftWatch = true;
  const BOX = 'textarea[aria-label="Your answer"]', PREFIX = "answer-draft:", KNOWN = 20;
  // The box's key (ui.state.answer_key: the session and the turn) from its container's class: one prompt's draft.
  // No "<" before a letter in this script: DOMPurify drops a script whose text has one (st.html sanitises it).
  const keyOf = (box) => {
    const holder = box.closest("[class*='st-key-answer-']");
    const found = holder && [...holder.classList].find((name) => name.startsWith("st-key-answer-"));
    return found ? PREFIX + found.slice("st-key-".length) : null;
  };
  const read = (key) => { try { return JSON.parse(sessionStorage.getItem(key)); } catch { return null; } };
  const write = (key, kept) => { try { sessionStorage.setItem(key, JSON.stringify(kept)); } catch {} };
  // The texts the app may hold, by digest: an answer of 20,000 characters is not kept twenty times.
  const digest = (text) => {
    let hash = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
    return (hash >>> 0).toString(36) + ":" + text.length;
  };
  const keep = (key, text) => {  // a text the app has, or will have once the commit under way arrives
    if (!key) return;
    const kept = read(key) || {text, known: []};
    kept.known = [...kept.known.filter((d) => d !== digest(text)), digest(text)].slice(-KNOWN);
    write(key, {...kept, text});
  };
  const remember = (box) => keep(keyOf(box), box.value);
  const typed = (key, text) => {  // a text the app does not have yet
    const kept = key && read(key);
    if (kept) write(key, {...kept, text});
  };
  // Whether the tab's text goes back over the one shown: only over a text this tab had (a draft another tab saved
  // since is newer, and stays). The tab's drafts of other prompts (answered since) go.
  const toPutBack = (key, shown, prefix) => {
    for (const old of Object.keys(sessionStorage)) {
      if (old.startsWith(prefix) && old !== key) sessionStorage.removeItem(old);
    }
    const kept = read(key);
    return kept && kept.text !== shown && kept.known.includes(digest(shown)) ? kept.text : null;
  };
  const commit = (box) => {
    remember(box);
    box.dispatchEvent(new KeyboardEvent("keydown", {
      key: "Enter", code: "Enter", keyCode: 13, ctrlKey: true, bubbles: true,
    }));
  };
  let timer;
  document.addEventListener("beforeinput", (event) => {
    if (event.target.matches?.(BOX) && timer === undefined) remember(event.target);  // the text shown, before an edit
  }, true);
  document.addEventListener("input", (event) => {
    const box = event.target;
    if (!box.matches?.(BOX)) return;
    typed(keyOf(box), box.value);
    clearTimeout(timer);
    timer = setTimeout(() => { timer = undefined; commit(box); }, PAUSE_MS);
  }, true);
  document.addEventListener("focusout", (event) => {  // the box sends its text when it loses the focus
    if (event.target.matches?.(BOX)) remember(event.target);
  }, true);
  const restore = (box) => {
    if (box.dataset.draftRead) return;
    // An empty box may be the page before the app has put the saved draft in it (seen under load: the tab's text then
    // went over another tab's newer draft), so an empty box is read again a little later, as it then is.
    if (!box.value && box.dataset.draftWait !== "done") {
      if (!box.dataset.draftWait) {
        box.dataset.draftWait = "pending";
        setTimeout(() => { box.dataset.draftWait = "done"; restore(box); }, EMPTY_WAIT_MS);
      }
      return;
    }
    box.dataset.draftRead = "1";
    const key = keyOf(box), text = key && toPutBack(key, box.value, PREFIX);
    if (text === null || text === undefined) return;
    Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value").set.call(box, text);
    box.dispatchEvent(new Event("input", {bubbles: true}));  // for the box's own state, as if typed
    commit(box);
  };
  document.querySelectorAll(BOX).forEach(restore);
  new MutationObserver(() => document.querySelectorAll(BOX).forEach(restore))
    .observe(document.body, {childList: true, subtree: true});

  // The code editor sends an edit SEND_MS ms after the last keystroke, so a reload sooner lost it. Its frame is this
  // page's, so its edits are kept in the tab too, and a reload puts them back in the editor, which sends them.
  const FRAME = "iframe[title*='streamlit_ace']", CODE_PREFIX = "code-draft:";
  const codeKeyOf = (frame) => {  // ui.state.code_key (the session and the question) from the editor's key
    const holder = frame.closest("[class*='st-key-code-']");
    const found = holder && [...holder.classList].find((name) => name.startsWith("st-key-code-"));
    return found ? CODE_PREFIX + found.slice("st-key-".length).replace(/-ace-[0-9]+$/, "") : null;
  };
  const watchEditor = (frame) => {
    let editor;
    try { editor = frame.contentDocument.querySelector(".ace_editor").env.editor; } catch { return; }
    const key = codeKeyOf(frame);
    if (!editor || editor.draftWatched || !key) return;
    editor.draftWatched = true;
    let sent;
    editor.on("change", () => {
      typed(key, editor.getValue());
      clearTimeout(sent);
      sent = setTimeout(() => keep(key, editor.getValue()), SEND_MS);  // as the editor sends it
    });
    const text = toPutBack(key, editor.getValue(), CODE_PREFIX);
    if (text === null) keep(key, editor.getValue());  // the code the app drew it with
    else editor.setValue(text, 1);
  };
  setInterval(() => document.querySelectorAll(FRAME).forEach(watchEditor), 250);
})();
</script>""".replace("PAUSE_MS", str(PAUSE_MS)).replace("EMPTY_WAIT_MS", str(EMPTY_WAIT_MS)).replace(
    "SEND_MS", str(round(ACE_SEND_DELAY_S * 1000)))


def watch_typing() -> None:
    """Draw the script that has the answer box send its text when the candidate pauses typing, and keeps what was
    typed since, in the box and in the code editor, for a reload to send."""
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
