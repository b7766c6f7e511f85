"""The report and history pages in a real browser, on a phone's width (390 px) and a desktop's (1280 px)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from knowledge.loader import bank_index
from tests.e2e.browser import shot, wait_idle

pytestmark = pytest.mark.e2e
PHONE = {"width": 390, "height": 900}
DESKTOP = {"width": 1280, "height": 900}
# The bank's longest topic names: a table as wide as its words was widest with them.
TOPICS = ["performance-memory", "transfer-learning", "regularisation"]
WEAK_ANSWER = "You call zero_grad, then backward, then step; gradients accumulate in .grad so the order matters."

# What scrolls sideways, cuts its content, or sticks out of the window, between the headings `from` and `to`.
SIDEWAYS = """([from, to]) => {
    const heading = text => [...document.querySelectorAll('h1, h2, h3')].find(h => h.innerText.trim() === text);
    const start = heading(from), end = heading(to);
    const after = el => start.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING;
    const before = el => end.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_PRECEDING;
    return [...document.querySelectorAll('[data-testid="stMain"] *')].filter(el => after(el) && before(el))
        .filter(el => el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible'
                      || el.getBoundingClientRect().right > innerWidth + 1)
        .map(el => `${el.tagName}.${el.className}: ${el.scrollWidth} wide in ${el.clientWidth}`);
}"""


def _weakly_answered_session(api_url: str, topics: list[str] = TOPICS) -> str:
    """A completed practice session, a question a topic, every answer weak: each topic has gaps to list."""
    created = httpx.post(f"{api_url}/v1/sessions", json={"topics": topics, "num_questions": len(topics), "seed": 5},
                         timeout=60).json()
    prompt = created["prompt"]
    while prompt:
        turn = httpx.post(f"{api_url}/v1/sessions/{created['id']}/answers", timeout=180,
                          json={"text": WEAK_ANSWER, "turn": prompt["turn"]}).json()
        prompt = turn["prompt"] if turn["status"] == "active" else None
    return str(created["id"])


def _open(page: Any, url: str, heading: str) -> None:
    from playwright.sync_api import expect

    page.goto(url)
    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
    wait_idle(page)


def test_the_per_topic_tables_fit_a_phone_and_stay_tables_on_a_desktop(page: Any, servers: tuple[str, str]) -> None:
    """At 390 px the report's per-topic table (and History's) was a grid as wide as its words: it scrolled sideways
    and cut "5 missed (Q1)" to "5 misse"."""
    from playwright.sync_api import expect

    api_url, ui_url = servers
    sid = _weakly_answered_session(api_url)
    page.set_viewport_size(PHONE)
    _open(page, f"{ui_url}/?page=report&report={sid}", "Per topic")
    shot(page, "report-phone")
    assert page.evaluate(SIDEWAYS, ["Per topic", "Questions"]) == []
    for topic in TOPICS:  # each row's words as text on the page (the grid drew them on a canvas)
        expect(page.locator("td").filter(has_text=topic)).to_have_count(1)
    _open(page, f"{ui_url}/?page=history", "Progress per topic")
    assert page.evaluate(SIDEWAYS, ["Progress per topic", "Past sessions"]) == []

    page.set_viewport_size(DESKTOP)
    _open(page, f"{ui_url}/?page=report&report={sid}", "Per topic")
    expect(page.get_by_role("columnheader", name="not yet covered")).to_be_visible()
    # A row's cells side by side, as a table has them, not stacked as on the phone.
    tops = page.get_by_role("row").filter(has_text=TOPICS[0]).get_by_role("cell").evaluate_all(
        "cells => cells.map(cell => Math.round(cell.getBoundingClientRect().top))")
    assert len(tops) == 4 and len(set(tops)) == 1, tops


# Each topic's label on the report page's chart, whole or cut, and whether it lies inside the chart's drawing.
CHART_LABELS = """() => [...document.querySelectorAll('[data-testid="stMain"] svg')].flatMap(svg => {
    const box = svg.getBoundingClientRect();
    return [...svg.querySelectorAll('text')].map(text => {
        const r = text.getBoundingClientRect();
        return {text: text.textContent, inside: r.left >= box.left - 1 && r.right <= box.right + 1};
    });
})"""


def test_the_topic_chart_names_every_topic_whole(page: Any, servers: tuple[str, str]) -> None:
    """Streamlit's chart theme cut a topic's name at 100 px: "performance-memory" read "performance-me…". A session
    over all of the bank's topics, on a phone and on a desktop."""
    api_url, ui_url = servers
    topics = sorted({str(question.topic.value) for question in bank_index().values()})
    assert len(topics) == 15
    sid = _weakly_answered_session(api_url, topics)
    shown = {str(t["topic"]) for t in httpx.get(f"{api_url}/v1/sessions/{sid}/report", params={"format": "json"},
                                                 timeout=60).json()["topics"]}
    assert shown == set(topics)
    for size, name in ((PHONE, "phone"), (DESKTOP, "desktop")):
        page.set_viewport_size(size)
        _open(page, f"{ui_url}/?page=report&report={sid}", "Score per topic")
        page.wait_for_function("n => document.querySelectorAll('[data-testid=\"stMain\"] svg text').length >= n",
                               arg=len(topics))
        shot(page, f"report-chart-{name}")
        labels = [label for label in page.evaluate(CHART_LABELS) if label["text"].rstrip("…") in " ".join(topics)]
        whole = {label["text"] for label in labels if label["inside"]}
        assert [topic for topic in topics if topic not in whole] == [], (name, labels)
