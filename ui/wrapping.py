"""Long lines of code in a narrow window: the code editor wraps them when it is narrow.

A narrow editor (62 columns in a 700 px window, 28 on a 390 px phone) cut a task's own lines, which scrolled sideways
while the rest of the page fitted. A wide one keeps a long line whole and scrolls instead: there a wrapped line's
rest, set in at its indentation, read as a nested block of Python. The line between them is drawn by the editor's own
width, in the browser: Streamlit does not tell the app the window's width, and the sidebar (open, folded or dragged
wider) changes the editor's anyway. Whether the browser is a phone's (its headers) was no guide: a desktop browser's
narrow window scrolled sideways as a phone had.

The read-only code blocks (the code submitted, a model answer's) wrap by the same rule, by their own width, in CSS
(`CODE_BLOCKS_BY_WIDTH`): on a phone they scrolled sideways in their own box, a third of each long line out of sight.
Streamlit's block holds no line per element, so a wrapped rest cannot start at its own line's indentation as the
editor's does; it hangs 4 columns in from the margin, and each line of the code still starts at its own indentation,
so a rest is not taken for a line of its own.
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


# Each `st.code` block (and each fenced block of a Markdown model answer) is a container measured by its own width:
# narrower than WRAP_BELOW_COLUMNS columns, its lines wrap, between words where they can and anywhere in a longer
# run (a URL, a long name), and each wrapped rest hangs 4 columns in (`each-line`: not the code's own lines, which
# begin after a line break). The container's `ch` is its body face's, within a tenth of the code face's.
CODE_BLOCKS_BY_WIDTH = """<style>
[data-testid="stCode"] { container-type: inline-size; }
@container (max-width: WRAP_BELOW_COLUMNSch) {
  [data-testid="stCode"] code {
    white-space: pre-wrap !important;  /* over the inline `pre` Streamlit sets */
    overflow-wrap: anywhere;
    display: block;
    padding-left: 4ch;
    text-indent: -4ch each-line;
  }
}
</style>""".replace("WRAP_BELOW_COLUMNS", str(WRAP_BELOW_COLUMNS))


def code_blocks_fit() -> None:
    """Draw the style that has each read-only code block wrap its lines when it is narrow (a style alone takes no
    room on the page)."""
    st.html(CODE_BLOCKS_BY_WIDTH)


def editor_lines_by_width() -> None:
    """Draw the script that has each code editor wrap its lines when it is narrow. Draw it last on the page: an
    element with nothing to show still takes the page's gap between elements (16 px)."""
    st.html(EDITOR_BY_WIDTH, unsafe_allow_javascript=True)

