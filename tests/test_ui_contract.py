"""How a code task's contract reads in its panel on the interview page (streamlit.testing: the panel's texts)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from evaluators.code.forbidden import contract_with_refusals
from knowledge.loader import bank_index
from knowledge.schema import CodeTask
from ui.widgets import bank_markdown


def _panel(contract: str, starter: str) -> None:
    import streamlit as st

    from ui.interview_page import _code_panel

    st.session_state["plain_editor"] = True  # custom components do not render in streamlit.testing
    _code_panel({"question_id": "q", "turn": 0, "code_contract": contract, "starter_code": starter}, "s1")


def _task(*, forbids_built_ins: bool) -> CodeTask:
    return next(q.code for q in bank_index().values()
                if q.code and (q.code.forbidden is not None) == forbids_built_ins)


def _page(task: CodeTask) -> AppTest:
    """The panel of `task` as the API sends its contract."""
    page = AppTest.from_function(_panel, args=(contract_with_refusals(task), task.starter), default_timeout=30).run()
    assert not page.exception, page.exception
    return page


def _in_the_open(page: AppTest, but: tuple[str, ...] = ()) -> list[str]:
    """The panel's texts above the code box, but for the plain box's style sheet and the texts folded away (`but`)."""
    return [m.value for m in page.main.markdown if "<style>" not in m.value and m.value not in but]


def test_what_the_sandbox_also_refuses_is_folded_away_under_the_contract() -> None:
    """The 41 modules and 7 built-ins a task forbidding built-ins also refuses stood between its contract and the
    editor, as 14 lines (350 px) of code spans at 390 px."""
    task = _task(forbids_built_ins=True)
    page = _page(task)
    (folded,) = page.expander
    assert folded.label == "Modules and built-ins this task also refuses"
    said = [m.value for m in folded.markdown]
    assert "`importlib`" in " ".join(said) and "`breakpoint`" in " ".join(said)
    assert _in_the_open(page, but=tuple(said)) == ["**Code task: the contract**", bank_markdown(task.contract).strip()]


def test_a_contract_without_refusals_shows_whole_with_nothing_folded() -> None:
    task = _task(forbids_built_ins=False)
    page = _page(task)
    assert not page.expander
    assert _in_the_open(page) == ["**Code task: the contract**", bank_markdown(task.contract).strip()]
