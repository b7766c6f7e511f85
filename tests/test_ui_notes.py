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
