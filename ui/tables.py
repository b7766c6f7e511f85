"""Small tables of a few rows (per topic) that fit a phone's width.

st.dataframe draws its grid on a canvas, with each column as wide as its longest text: at 390 px the report's per-topic
table scrolled sideways and cut its last column to "5 misse". An HTML table wraps its words instead, and on a narrow
screen each row stacks into a card of "header: value" lines, so nothing is cut or hidden to the side.
"""

from __future__ import annotations

from html import escape

import streamlit as st

# Stacked below 640 px (a phone, portrait or landscape); a table with a header row above. The labels come from each
# cell's data-label, so the words of the header are still next to every value.
STACKED_CSS = """<style>
.topic-table table {width: 100%; border-collapse: collapse; font-size: 0.95rem;}
.topic-table th, .topic-table td {text-align: left; padding: 0.35rem 0.6rem; vertical-align: top;
  border-bottom: 1px solid rgba(128, 128, 128, 0.3); overflow-wrap: anywhere;}
.topic-table th {font-weight: 600; opacity: 0.8;}
@media (max-width: 640px) {
  .topic-table thead {display: none;}
  .topic-table tr, .topic-table td {display: block;}
  .topic-table tr {border: 1px solid rgba(128, 128, 128, 0.3); border-radius: 0.5rem; margin-bottom: 0.5rem;
    padding: 0.3rem 0;}
  .topic-table td {border: none; padding: 0.1rem 0.75rem;}
  .topic-table td::before {content: attr(data-label) ": "; font-weight: 600;}
}
</style>"""


def topic_table(rows: list[dict[str, object]]) -> None:
    """`rows` as a table, one per topic; every row has the same keys, which are the column headers."""
    headers = list(rows[0]) if rows else []
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td data-label="{escape(h)}">{escape(str(row[h]))}</td>' for h in headers) + "</tr>"
        for row in rows
    )
    st.markdown(f'{STACKED_CSS}<div class="topic-table"><table><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table></div>", unsafe_allow_html=True)
