"""A read-only code block (the code a candidate submitted, in the session's transcript) on a phone's width."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.e2e.browser import wait_idle

pytestmark = pytest.mark.e2e
PHONE = {"width": 390, "height": 900}
# A line far wider than a phone's 28 or so columns, and a run with no space in it (a URL) wider still.
URL = "https://pytorch.org/docs/stable/generated/torch.nn.functional.cross_entropy.html#torch.nn.functional.cross_entropy"
CODE = ("import torch\n\n\ndef loss_of(model, x, targets, vocab_size, pad_id):\n"
        f"    # {URL}\n"
        "    return torch.nn.functional.cross_entropy(model(x).reshape(-1, vocab_size), targets.reshape(-1), "
        "ignore_index=pad_id)\n")


def _session_with_code_answered(api_url: str) -> str:
    """An active session whose first question, a code task, has been answered with CODE."""
    for seed in range(40):
        created = httpx.post(f"{api_url}/v1/sessions", timeout=60, json={
            "topics": ["training-loop", "modules"], "num_questions": 2, "seed": seed}).json()
        prompt = created["prompt"]
        if prompt["code_contract"]:
            answered = httpx.post(f"{api_url}/v1/sessions/{created['id']}/answers", timeout=180,
                                  json={"text": "My loss function.", "code": CODE, "turn": prompt["turn"]})
            assert answered.status_code == 200 and answered.json()["status"] == "active", answered.text
            return str(created["id"])
        httpx.post(f"{api_url}/v1/sessions/{created['id']}/finish?turn=0").raise_for_status()
    raise AssertionError("no code task left to ask")


def test_the_code_submitted_wraps_on_a_phone_and_loses_nothing(page: Any, servers: tuple[str, str]) -> None:
    """At 390 px the code submitted scrolled sideways in its box (Streamlit's `white-space: pre`), most of its long
    lines out of sight; it wraps there now, every character kept (ui/wrapping.py)."""
    api_url, ui_url = servers
    page.set_viewport_size(PHONE)
    page.goto(f"{ui_url}/?session={_session_with_code_answered(api_url)}")
    page.get_by_text("Code submitted").first.click()
    block = page.locator("[data-testid='stExpanderDetails'] [data-testid='stCode'] pre").first
    block.wait_for()
    wait_idle(page)
    drawn = block.evaluate("pre => ({wide: pre.scrollWidth, width: pre.clientWidth, text: pre.innerText})")
    assert drawn["wide"] <= drawn["width"] + 1, drawn
    assert "".join(drawn["text"].split()) == "".join(CODE.split()), drawn["text"]
