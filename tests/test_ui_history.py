"""The Streamlit history page, from progress and sessions served as the API serves them (JSON)."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from tests.html_tables import topic_tables

PROGRESS = {
    "sessions": 2, "completed_sessions": 2, "answers": 4, "weak_topics": ["autograd"],
    "topics": [{"topic": "autograd", "answers": 4, "mean_score": 1.55, "latest_score": 2.3, "history": [
        {"session_id": "s1", "at": "2026-01-01T10:00:00Z", "mean_score": 0.85, "answers": 2},
        {"session_id": "s2", "at": "2026-01-02T10:00:00Z", "mean_score": 2.25, "answers": 2}]}],
}


def _page(progress: str) -> None:
    import httpx

    from ui import history_page
    from ui.client import ApiClient

    def reply(request: httpx.Request) -> httpx.Response:
        body = progress if request.url.path == "/v1/me/progress" else "[]"
        return httpx.Response(200, text=body, headers={"content-type": "application/json"})

    history_page.render(ApiClient("http://api.test", transport=httpx.MockTransport(reply)))


def test_the_history_table_rounds_a_mean_as_the_report_shows_it() -> None:
    """Review s50: the table showed a mean of 1.55 where the report of the same answers showed 1.6 / 5."""
    page = AppTest.from_function(_page, args=(json.dumps(PROGRESS),), default_timeout=30).run()
    assert not page.exception, page.exception
    (table,) = topic_tables(page)
    row = table[0]
    assert (row["mean score"], row["latest score"]) == ("1.6 / 5", "2.3 / 5")
