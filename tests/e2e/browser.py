"""Helpers of the browser tests: screenshots, waits on the page and the API, a code task's page and its editor."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx

from tests.conftest import REPO

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SHOTS = REPO / "test-output" / "screenshots"


def shot(page: Any, name: str) -> None:
    """The whole page: Streamlit scrolls inside its main block, so grow the viewport to fit it first."""
    size = page.viewport_size
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')?.scrollHeight || 0")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], min(int(height) + 40, 12000))})
    page.wait_for_timeout(500)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    page.set_viewport_size(size)


def wait_idle(page: Any) -> None:
    """Until Streamlit is not running the script (its status widget shows a running icon meanwhile)."""
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidgetRunningIcon\"]')", timeout=60_000
    )


def wait_for(condition: Any, timeout: float = 150.0, what: str = "the API to record the action",
              page: Any = None) -> None:
    """`page`: wait through it, so that Playwright takes in the page's events meanwhile (needed when a test
    relays the app's messages itself)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        if page is None:
            time.sleep(0.3)
        else:
            page.wait_for_timeout(300)


def code_task_session(api_url: str) -> str:
    """A new session whose first prompt is a code task (whichever this user has not been asked yet)."""
    for seed in range(40):
        created = httpx.post(f"{api_url}/v1/sessions",
                             json={"topics": ["training-loop", "modules"], "num_questions": 1, "seed": seed}).json()
        if created["prompt"]["code_contract"]:
            return str(created["id"])
        httpx.post(f"{api_url}/v1/sessions/{created['id']}/finish?turn=0").raise_for_status()
    raise AssertionError("no code task left to ask")


def session_detail(api_url: str, sid: str) -> dict[str, Any]:
    # A session's GET waits while an answer to it is scored (its code run in the sandbox): more than httpx's
    # default 5 s on a busy machine.
    return httpx.get(f"{api_url}/v1/sessions/{sid}", timeout=120).json()  # type: ignore[no-any-return]


def session_draft(api_url: str, sid: str) -> dict[str, Any] | None:
    return session_detail(api_url, sid).get("draft")


def in_the_editor(page: Any, url: str, link: Any) -> Any:
    """The page opened at `url` over `link`, with the caret at the end of the code editor."""
    page.route_web_socket(re.compile(r"/_stcore/stream"), link.route)
    page.goto(url)
    page.frame_locator("iframe[title*='streamlit_ace']").locator(".ace_editor .ace_content").first.click()
    page.keyboard.press("Control+End")
    return link


def wait_for_editor_to_show(page: Any, code: str) -> None:
    """Until the Ace editor is drawn in its frame and holds `code`."""
    page.wait_for_function("""code => {
        const frame = document.querySelector("iframe[title*='streamlit_ace']");
        const ace = frame && frame.contentDocument && frame.contentDocument.querySelector('.ace_editor');
        return Boolean(ace && ace.env && ace.env.editor.getValue().includes(code));
    }""", arg=code, timeout=45_000)


EDITOR_STATE = """() => {
    const editor = document.querySelector("iframe[title*='streamlit_ace']").contentDocument
        .querySelector('.ace_editor').env.editor;
    return {caret: editor.getCursorPosition(), undo: editor.session.getUndoManager().hasUndo()};
}"""


def code_task_page(page: Any, api_url: str, ui_url: str) -> None:
    """A new code task's page, drawn, with its editor on it."""
    page.goto(f"{ui_url}/?session={code_task_session(api_url)}")
    page.frame_locator("iframe[title*='streamlit_ace']").locator(".ace_editor .ace_content").first.wait_for()
    wait_idle(page)
