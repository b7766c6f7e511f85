"""Coming back to an interview in a real browser: a new tab, or a bookmark of a page, while a session is in progress.
Each test starts its own session through the API; the page offers the newest one still going."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.e2e.browser import shot, wait_idle

pytestmark = pytest.mark.e2e


def _session_in_progress(api_url: str, *, answered: bool) -> dict[str, Any]:
    """A new practice session (the newest of this test's user), its first question answered when `answered`."""
    created = httpx.post(f"{api_url}/v1/sessions", json={"topics": ["tensors"], "num_questions": 3},
                         timeout=60).json()
    if answered:
        httpx.post(f"{api_url}/v1/sessions/{created['id']}/answers", timeout=120, json={
            "text": "A tensor holds its values with a shape, a dtype and a device.", "turn": created["prompt"]["turn"],
        }).raise_for_status()
    return httpx.get(f"{api_url}/v1/sessions/{created['id']}", timeout=60).json()  # type: ignore[no-any-return]


def test_a_bookmark_of_the_interview_page_continues_the_session_in_progress(servers, page) -> None:
    """Review s52: the page said "No interview in progress: start one on the Start page." while History listed
    the session, and starting anew used up questions."""
    from playwright.sync_api import expect

    api_url, ui_url = servers
    detail = _session_in_progress(api_url, answered=False)
    page.goto(f"{ui_url}/?page=interview")
    expect(page.get_by_text("You have an interview in progress")).to_be_visible()
    expect(page.get_by_text("No interview in progress")).to_have_count(0)
    shot(page, "resume-offer")
    page.get_by_role("button", name="Continue my interview").click()
    expect(page.get_by_text(f"Practice mode · session {detail['id'][:8]}")).to_be_visible()
    expect(page.get_by_text(detail["prompt"]["text"][:60])).to_be_visible()
    expect(page.get_by_label("Your answer")).to_be_visible()
    wait_idle(page)
    assert f"session={detail['id']}" in page.url  # a reload now finds it by its address


def test_the_report_page_of_a_new_tab_shows_the_report_so_far(servers, page) -> None:
    """It said "No report yet: finish an interview" during a practice session whose report the API serves."""
    from playwright.sync_api import expect

    api_url, ui_url = servers
    detail = _session_in_progress(api_url, answered=True)
    page.goto(f"{ui_url}/?page=report")
    expect(page.get_by_text("This session is still going: the report covers what you have answered")).to_be_visible()
    expect(page.get_by_text(f"Session {detail['id'][:8]} · practice mode · active")).to_be_visible()
    expect(page.get_by_text("No report yet")).to_have_count(0)
    shot(page, "resume-report")
    page.get_by_role("button", name="Continue the interview").click()
    expect(page.get_by_label("Your answer")).to_be_visible()
    expect(page.get_by_text(f"Practice mode · session {detail['id'][:8]}")).to_be_visible()
