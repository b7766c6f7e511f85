"""The start page: choose frameworks, topics, difficulty, length, mode and timer, then begin."""

from __future__ import annotations

import re
from typing import Any

import streamlit as st

from ui import resume, state
from ui.client import ApiClient, ApiError
from ui.widgets import literal

DIFFICULTIES = ["adaptive", 1, 2, 3]


@st.cache_data(ttl=300, show_spinner=False)
def choices(base_url: str, _api: ApiClient) -> dict[str, list[str]]:
    """Frameworks and topics as the API's OpenAPI document enumerates them (the API is the source)."""
    schemas = _api.get("/openapi.json").get("components", {}).get("schemas", {})
    return {name: list(schemas.get(name, {}).get("enum", [])) for name in ("Framework", "Topic")}


def interviewer_status(api: ApiClient) -> None:
    """Whether an LLM or the offline interviewer answers, from GET /readyz."""
    try:
        ready = api.get("/readyz")
    except ApiError as exc:
        if exc.status == 503:
            st.warning(literal(f"The API is not fully ready: {exc}"))
            return
        raise
    model = ready.get("model") or {}
    if ready.get("interviewer") == "llm" and model.get("ok") is False:
        st.warning(literal(f"An LLM interviewer is configured, but {model.get('detail')}. Until it answers, "
                           "questions come from the bank as written and answers are scored offline."))
    elif ready.get("interviewer") == "llm":
        st.success("🧠 An LLM interviewer is configured: questions are phrased and answers judged by the model.")
    else:
        st.info("📘 Offline interviewer in use (no LLM configured): rubric scoring and the question bank only.")


def render(api: ApiClient) -> None:
    st.header("Start a mock interview")
    interviewer_status(api)
    resume.offer_to_continue(api, resume.latest_active(api), where="start")
    options = choices(api.base_url, api)
    with st.form("start"):
        left, right = st.columns(2)
        frameworks = left.multiselect("Frameworks", options["Framework"], placeholder="any framework", key="frameworks")
        topics = right.multiselect("Topics", options["Topic"], placeholder="any topic", key="topics")
        difficulty = left.select_slider(
            "Difficulty", DIFFICULTIES, value="adaptive", key="difficulty",
            help="Adaptive starts in the middle and follows your scores.",
        )
        num_questions = right.number_input(
            "Number of questions", min_value=1, max_value=30, value=5, key="num_questions"
        )
        mode = left.radio(
            "Mode", ["practice", "interview"], horizontal=True, key="mode_choice",
            format_func=lambda m: {"practice": "Practice (feedback after each answer)",
                                   "interview": "Interview (feedback in the report)"}[m],
        )
        timed = right.checkbox("Time each question", key="timed")
        seconds = right.number_input(
            "Seconds per question", min_value=30, max_value=3600, value=300, step=30, key="seconds"
        )
        seed = left.text_input(
            "Seed (optional)", key="seed", help="The same seed and settings draw questions the same way; questions "
            "you were asked in earlier sessions wait until the others are used up, so yours can differ."
        )
        submitted = st.form_submit_button("Start interview", type="primary")
    if submitted:
        config: dict[str, Any] = {
            "frameworks": frameworks or None,
            "topics": topics or None,
            "difficulty": difficulty,
            "num_questions": int(num_questions),
            "mode": mode,
            "time_limit_s": int(seconds) if timed else None,
        }
        if seed.strip():
            if not re.fullmatch(r"[+-]?[0-9]+", seed.strip()):  # not str.isdigit: "²" is a digit to it
                st.error("The seed is a whole number, or empty for random questions.")
                return
            config["seed"] = int(seed)
        start(api, config)


def start(api: ApiClient, config: dict[str, Any]) -> None:
    """POST /v1/sessions and open the interview page, or show the API's reason on this page."""
    try:
        created = api.post("/v1/sessions", config)
    except ApiError as exc:
        st.error(literal(str(exc)))
        return
    state.begin_session(created)
    state.goto("Interview")
