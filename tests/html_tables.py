"""The rows of the pages' HTML tables (ui.tables) as an AppTest run drew them, read as a person reads them."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any


class _Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.headers: list[str] = []
        self.rows: list[dict[str, str]] = []
        self.cell: list[str] | None = None
        self.label = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("th", "td"):
            self.cell, self.label = [], dict(attrs).get("data-label") or ""
        elif tag == "tr" and self.headers:
            self.rows.append({})

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "th" and self.cell is not None:
            self.headers.append("".join(self.cell))
        elif tag == "td" and self.cell is not None:
            self.rows[-1][self.label] = "".join(self.cell)
        if tag in ("th", "td"):
            self.cell = None


def topic_tables(page: Any) -> list[list[dict[str, str]]]:
    """Each table's rows, as {header: text}, in the order drawn."""
    tables = []
    for element in page.markdown:
        if 'class="topic-table"' in element.value:
            parser = _Rows()
            parser.feed(element.value)
            assert all(list(row) == parser.headers for row in parser.rows), "a cell without its column's header"
            tables.append(parser.rows)
    return tables
