"""The Streamlit page tells the candidate a session's note with the question it arises on."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _page() -> None:
    from ui.widgets import show_prompt

    show_prompt({"text": "What is a tensor?", "topic": "tensors", "difficulty": 2, "number": 4, "total": 5,
                 "kind": "question", "notes": ["No question at difficulty 3 that you have not seen is left in "
                                               "these topics, so some questions are at another level."]})


def test_a_prompt_shows_the_notes_it_came_with():
    """The notes reached the candidate only in the final report."""
    page = AppTest.from_function(_page).run()
    assert [box.value for box in page.info] == [
        "No question at difficulty 3 that you have not seen is left in these topics, so some questions are at "
        "another level."]


def _reloaded() -> None:
    import streamlit as st

    from ui import interview_page, state

    review = "tensors comes back for review: your latest answers on it averaged 1.5 / 5."
    asked = {"kind": "question", "question_id": "q1", "topic": "tensors", "difficulty": 2,
             "prompt": "What is a tensor?", "asked_at": "2026-01-01T00:00:00Z", "notes": [review]}
    open_prompt = {"turn": 1, "kind": "question", "question_id": "q2", "text": "Why call zero_grad?",
                   "topic": "training-loop", "difficulty": 2, "number": 2, "total": 2,
                   "notes": ["No question at difficulty 3 that you have not seen is left in these topics, so some "
                             "questions are at another level."]}
    state.resume_session({
        "id": "s1", "status": "active", "config": {"mode": "practice", "num_questions": 2}, "prompt": open_prompt,
        "transcript": [{**asked, "position": 0, "action": "skip"},
                       {**asked, **open_prompt, "prompt": open_prompt["text"], "position": 1}],
    })
    for entry in st.session_state["chat"]:
        interview_page._show_entry(entry)


def test_a_reloaded_session_shows_each_prompt_with_its_notes():
    """After a reload the chat is rebuilt from GET /v1/sessions/{id}: the notes told with each prompt (its
    transcript turn's and the open prompt's `notes`) are shown again beside it."""
    page = AppTest.from_function(_reloaded).run()
    assert [box.value for box in page.info] == [
        "tensors comes back for review: your latest answers on it averaged 1.5 / 5.",
        "No question at difficulty 3 that you have not seen is left in these topics, so some questions are at "
        "another level."]


def _ended_early() -> None:
    import streamlit as st

    from ui import interview_page, state

    review = "tensors comes back for review: your latest answers on it averaged 1.5 / 5."
    ended = "Ended early: question 1 of 2 was shown but not answered, so it is not scored."
    asked = {"kind": "question", "question_id": "q1", "topic": "tensors", "difficulty": 2, "position": 0,
             "prompt": "What is a tensor?", "asked_at": "2026-01-01T00:00:00Z", "notes": [review]}
    state.resume_session({"id": "s1", "status": "completed", "config": {"mode": "practice", "num_questions": 2},
                          "prompt": None, "transcript": [asked], "notes": [review, ended]})
    for entry in st.session_state["chat"]:
        interview_page._show_entry(entry)


def test_a_session_ended_early_and_opened_again_says_why_it_ended():
    """Its "Ended early" note came with no prompt, so the chat rebuilt from the session left it out; a note told
    with a prompt is shown there once, not again at the end."""
    page = AppTest.from_function(_ended_early).run()
    assert [box.value for box in page.info] == [
        "tensors comes back for review: your latest answers on it averaged 1.5 / 5.",
        "Ended early: question 1 of 2 was shown but not answered, so it is not scored."]
