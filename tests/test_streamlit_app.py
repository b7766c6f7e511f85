"""The practice page renders, scores an answer, and shows errors with st.error (never a traceback)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO


@pytest.fixture
def app(monkeypatch, tmp_path, bank):
    import streamlit as st

    from app.config import get_settings
    from app.services import store_for

    st.cache_resource.clear()  # the app caches its services per process; each test has its own settings
    store_for(get_settings()).upsert(bank)
    return AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=60)


def test_practice_page_scores_an_answer(app):
    app.run()
    assert not app.exception
    app.sidebar.text_input[0].set_value("custom relu autograd function").run()
    app.sidebar.radio[0].set_value("relu-autograd-function").run()
    app.text_area[0].input("fine").run()
    app.button[0].click().run()
    assert not app.exception
    assert any("0.0 / 5" in m.value for m in app.metric)


def test_unreachable_chroma_server_is_shown_as_error(app, monkeypatch):
    monkeypatch.setenv("INTERVIEWER_CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("INTERVIEWER_CHROMA_PORT", "1")
    from app.config import get_settings

    get_settings.cache_clear()
    app.run()
    assert not app.exception
    assert app.error and "not reachable" in app.error[0].value
