"""A tab with no session of its own (a new tab, a bookmark) while the user has one in progress: the pages offer to
continue it and the Report page shows its report so far, from the API's replies (JSON, as it serves them)."""

from __future__ import annotations

import dataclasses
import json
import re

from streamlit.testing.v1 import AppTest

from app.reports import build_report, render
from knowledge.loader import bank_index
from tests.test_reports import session, session_turns

SUMMARY = {"id": "s1", "status": "active", "mode": "practice", "num_questions": 3, "answered": 1,
           "created_at": "2026-11-29T01:00:00Z", "updated_at": "2026-11-29T01:05:00Z"}
PROMPT = {"turn": 2, "number": 2, "total": 3, "kind": "question", "question_id": "zero-grad", "topic": "training-loop",
          "difficulty": 1, "text": "Why call zero_grad before backward?", "notes": [], "code_contract": None,
          "starter_code": None, "time_limit_s": None, "asked_at": "2026-11-29T01:05:00Z"}
DETAIL = {**SUMMARY, "config": {"mode": "practice", "num_questions": 3}, "prompt": PROMPT, "notes": [], "draft": None,
          "transcript": [{"position": 0, "kind": "question", "question_id": "autograd-basics", "topic": "autograd",
                          "difficulty": 1, "prompt": "What does autograd record?", "action": "answer",
                          "answer_text": "The operations on tensors.", "answer_code": None, "hints_used": 0,
                          "hints": [], "evaluation": None, "code_result": None, "notes": []}]}


def _app(sessions: list[dict], detail: dict, report: str = "{}", page: str = "Interview") -> None:
    """The app's page as a tab with no session opens it; every request it sent is in session_state["sent"]."""
    import httpx
    import streamlit as st

    from ui import interview_page, report_page, start_page, state
    from ui.client import ApiClient

    def reply(request: httpx.Request) -> httpx.Response:
        st.session_state.setdefault("sent", []).append(f"{request.url.path}?{request.url.query.decode()}")
        body: object = {"interviewer": "offline"}
        if request.url.path == "/v1/sessions":
            body = sessions if request.url.params.get("status") == "active" else []
        elif request.url.path == "/v1/sessions/s1":
            body = detail
        elif request.url.path.endswith("/report"):
            return httpx.Response(200, text=report, headers={"content-type": "application/json"})
        elif request.url.path == "/openapi.json":
            body = {"components": {"schemas": {}}}
        return httpx.Response(200, json=body)

    state.apply_pending_page()
    shown = st.session_state.get("nav", page)
    pages = {"Interview": interview_page.render, "Report": report_page.render, "Start": start_page.render}
    pages[shown](ApiClient("http://api.test", transport=httpx.MockTransport(reply)))


def _said(page: AppTest) -> str:
    return re.sub(r"\\(.)", r"\1", "\n".join(str(e.value) for e in [*page.info, *page.markdown, *page.caption]))


def test_a_new_tab_offers_the_interview_in_progress_and_continues_it() -> None:
    """Review s52: a new tab or a bookmark said "No interview in progress: start one on the Start page." while History
    listed the user's active session; starting anew used up questions."""
    page = AppTest.from_function(_app, args=([SUMMARY], DETAIL), default_timeout=30).run()
    assert not page.exception, page.exception
    said = _said(page)
    assert "No interview in progress" not in said
    assert ("You have an interview in progress (started 2026-11-29 01:00 · practice mode · 1 of 3 questions done)"
            in said)
    assert "/v1/sessions?status=active&limit=1" in page.session_state["sent"]
    next(b for b in page.button if b.label == "▶ Continue my interview").click().run()
    assert not page.exception, page.exception
    assert page.session_state["sid"] == "s1" and page.session_state["prompt"]["turn"] == 2
    assert "Why call zero_grad before backward?" in _said(page)  # the page drawn again is the interview


def test_the_start_page_offers_it_too_and_a_user_with_none_is_told_as_before() -> None:
    start = AppTest.from_function(_app, args=([SUMMARY], DETAIL, "{}", "Start"), default_timeout=30).run()
    assert not start.exception, start.exception
    assert "You have an interview in progress" in _said(start)
    assert any(b.label == "▶ Continue my interview" for b in start.button)
    none = AppTest.from_function(_app, args=([], DETAIL), default_timeout=30).run()
    assert "No interview in progress: start one on the Start page." in _said(none)
    assert [b.label for b in none.button] == ["Go to Start"]


def test_the_report_page_of_a_new_tab_shows_the_report_so_far_of_the_session_in_progress() -> None:
    """It said "No report yet: finish an interview" during a practice session whose report the API serves."""
    practice = dataclasses.replace(session({"autograd-basics": 3.8}, status="active"),
                                   config={"mode": "practice", "num_questions": 3})
    report = build_report(session=practice, turns=session_turns()[:1], bank=bank_index())
    page = AppTest.from_function(_app, args=([SUMMARY], DETAIL, render(report, "json")[0].decode(), "Report"),
                                 default_timeout=30).run()
    assert not page.exception, page.exception
    said = _said(page)
    assert "No report yet" not in said and json.loads(render(report, "json")[0])["status"] == "active"
    assert "This session is still going: the report covers what you have answered so far" in said
    assert "/v1/sessions/s1/report?format=json" in page.session_state["sent"]
    next(b for b in page.button if b.label == "Continue the interview").click().run()
    assert page.session_state["sid"] == "s1" and page.session_state["nav"] == "Interview"


def _hinted(detail: dict, prompt: dict) -> None:
    """A session reopened (a reload, a new tab) after hints on an answered question and on the open one; the first
    turn's hints are from before their texts were kept (its `hints` empty)."""
    import streamlit as st

    from ui import interview_page, state

    answered = {**detail["transcript"][0], "hints_used": 2, "hints": []}
    open_turn = {**answered, "position": 1, "question_id": "zero-grad", "prompt": prompt["text"], "action": None,
                 "answer_text": None, "hints_used": 2,
                 "hints": ["Think of what backward adds to.", "Gradients accumulate across calls."]}
    state.resume_session({**detail, "prompt": {**prompt, "turn": 1, "hints": open_turn["hints"]},
                          "transcript": [answered, open_turn]})
    for entry in st.session_state["chat"]:
        interview_page._show_entry(entry)


def test_a_reopened_session_shows_the_hints_taken_under_their_question() -> None:
    """Review s55: a paid hint's text was gone after a reload, the chat saying only "1 hint(s) taken here" though the
    API sends the texts (the transcript's and the prompt's `hints`)."""
    page = AppTest.from_function(_hinted, args=(DETAIL, PROMPT), default_timeout=30).run()
    assert not page.exception, page.exception
    assert [box.value for box in page.info] == [
        "2 hint(s) taken here (each costs points on this question).",  # texts not kept: counted, as before
        "Think of what backward adds to. (hints cost points on this question)",
        "Gradients accumulate across calls. (hints cost points on this question)"]
    said = _said(page)
    assert said.count("Could I have a hint?") == 2 and said.count(PROMPT["text"]) == 1  # the open question once
    chat = [entry.get("text") or entry.get("prompt", {}).get("text") for entry in page.session_state["chat"]]
    assert chat[chat.index(PROMPT["text"]):] == [  # the open question, then its hints in the order taken
        PROMPT["text"], "Could I have a hint?", "Think of what backward adds to. (hints cost points on this question)",
        "Could I have a hint?", "Gradients accumulate across calls. (hints cost points on this question)"]


def test_a_reopened_sessions_hints_say_what_each_cost_as_the_live_reply_did() -> None:
    """The live reply to a hint says "(hints cost 0.5 points each on this question)"; after a reload the same hint
    said only "(hints cost points on this question)": the figure is in the API's constant, which `ui` may not
    import. The session's `hint_cost` now gives it."""
    page = AppTest.from_function(_hinted, args=({**DETAIL, "hint_cost": 0.5}, PROMPT), default_timeout=30).run()
    assert not page.exception, page.exception
    assert [box.value for box in page.info] == [
        "2 hint(s) taken here (each costs 0.5 points on this question).",
        "Think of what backward adds to. (hints cost 0.5 points each on this question)",
        "Gradients accumulate across calls. (hints cost 0.5 points each on this question)"]
