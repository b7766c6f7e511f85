"""Long lines of code in a narrow window: the code editor wraps them when it is narrow.

A narrow editor (62 columns in a 700 px window, 28 on a 390 px phone) cut a task's own lines, which scrolled sideways
while the rest of the page fitted. A wide one keeps a long line whole and scrolls instead: there a wrapped line's
rest, set in at its indentation, read as a nested block of Python. The line between them is drawn by the editor's own
width, in the browser: Streamlit does not tell the app the window's width, and the sidebar (open, folded or dragged
wider) changes the editor's anyway. Whether the browser is a phone's (its headers) was no guide: a desktop browser's
narrow window scrolled sideways as a phone had.

The read-only code blocks (the code submitted, a model answer's) are left to scroll sideways in their own box when
narrow: Streamlit's block has no hanging indent, so a wrapped rest there starts at column 0 and reads as dedented
Python, and the page itself still fits.
"""

from __future__ import annotations

import streamlit as st

# At 1280 px with the sidebar open the editor shows 79 columns (DejaVu Sans Mono at 15 px, 9 px a character): 72 leaves
# room there for a desktop's scroll bar or a wider sidebar, and a 700 px window (62 columns) wraps.
WRAP_BELOW_COLUMNS = 72

# streamlit-ace's `wrap` is one boolean for Ace's wrap mode, which has no setting by width, so this page script sets
# the mode of each editor whenever its frame changes size.
EDITOR_BY_WIDTH = """<script>
(() => {
  if (window.__editorWrapByWidth) return;
  window.__editorWrapByWidth = true;
  const FRAME = "iframe[title*='streamlit_ace']";
  // Wrapping makes the editor taller, not wider or narrower (a page scroll bar it brings only narrows it further), so
  // a setting made here never undoes itself.
  const fit = (editor) => {
    const columns = editor.renderer.scroller.clientWidth / editor.renderer.characterWidth;
    if (!Number.isFinite(columns) || columns === 0) return;  // not laid out yet: its next change of size sets it
    const wrap = columns < WRAP_BELOW_COLUMNS;
    if (editor.session.getUseWrapMode() !== wrap) editor.session.setUseWrapMode(wrap);
  };
  const watch = (frame) => {
    let editor;
    try { editor = frame.contentDocument.querySelector(".ace_editor").env.editor; } catch { return; }
    if (!editor || editor.wrapWatched) return;
    editor.wrapWatched = true;
    // Called once now and on each change of the frame's size, its height included: the frame grows as the editor
    // is first drawn, so a first call made before the editor was laid out is followed by one made after.
    new ResizeObserver(() => fit(editor)).observe(frame);
  };
  setInterval(() => document.querySelectorAll(FRAME).forEach(watch), 250);
})();
</script>""".replace("WRAP_BELOW_COLUMNS", str(WRAP_BELOW_COLUMNS))


def editor_lines_by_width() -> None:
    """Draw the script that has each code editor wrap its lines when it is narrow. Draw it last on the page: an
    element with nothing to show still takes the page's gap between elements (16 px)."""
    st.html(EDITOR_BY_WIDTH, unsafe_allow_javascript=True)

