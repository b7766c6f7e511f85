"""A stopping server gives up the model call under way: judging raises EvaluatorStopped (a 503, nothing stored), a
wording takes the template and the step is stored whole. Before, the call was made on the request's own thread, and
uvicorn, which waits for every request under way before it stops, waited for the model's reply (59.8 s)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.interview.engine import InterviewEngine
from app.interview.models import SessionConfig
from app.interview.phrasing import LLMPhraser
from app.interview.scoring import AnswerScorer
from app.interview.selection import QuestionSelector
from app.llm import chat_model_from_settings
from app.llm_breaker import forget_breakers
from app.store import open_repository
from evaluators.base import EvaluatorStopped
from evaluators.judge import LLMJudge
from evaluators.rubric import RubricScorer
from tests.fake_openai import FakeOpenAI, echo, slow

HANGS_S = 290.0  # the reply comes this late, within the timeout: the old code waited for it
# Bounds on waits that take moments when the code works; a loaded 2-core machine gets ample room.
ARRIVES_WITHIN_S = 120.0
ENDS_WITHIN_S = 60.0


@pytest.fixture
def fake():
    forget_breakers()
    with FakeOpenAI() as server:
        yield server


def _settings(fake: FakeOpenAI) -> Settings:
    return Settings(llm_base_url=fake.base_url, llm_model="m", llm_timeout_s=300.0, llm_max_retries=0)


def _engine(fake: FakeOpenAI, tmp_path: Path, store: Any, bank: list[Any], embedder: Any) -> tuple[Any, Any, int]:
    settings = _settings(fake)
    repo = open_repository(f"sqlite:///{tmp_path / 'stop.db'}")
    engine = InterviewEngine(
        repo=repo, selector=QuestionSelector(store), bank={q.id: q for q in bank},
        scorer=AnswerScorer(evaluator=LLMJudge(chat_model_from_settings(settings), RubricScorer(embedder))),
        phraser=LLMPhraser(chat_model_from_settings(settings)),
    )
    return engine, repo, repo.get_or_create_user("dana").id


def _in_thread(work: Any) -> tuple[threading.Thread, dict[str, Any]]:
    ended: dict[str, Any] = {}

    def run() -> None:
        try:
            ended["result"] = work()
        except BaseException as exc:  # noqa: BLE001 - what the test asserts on
            ended["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, ended


def _until_sent(fake: FakeOpenAI, count: int) -> None:
    deadline = time.monotonic() + ARRIVES_WITHIN_S
    while len(fake.requests) < count:
        assert time.monotonic() < deadline, f"{len(fake.requests)} requests in {ARRIVES_WITHIN_S:g} s"
        time.sleep(0.05)


def test_a_stop_gives_up_the_judge_call_under_way_and_stores_nothing_of_the_answer(
        fake, tmp_path, ingested_store, bank, embedder):
    engine, repo, user = _engine(fake, tmp_path, ingested_store, bank, embedder)
    fake.script([echo(lambda line: line.split("Line:\n", 1)[1])])
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=["tensors"], seed=1))
    before = repo.get_session(session.id, user).state
    fake.script([slow(delay_s=HANGS_S)])
    thread, ended = _in_thread(lambda: engine.answer(session_id=session.id, user_id=user,
                                                     text="A tensor is an n-dimensional array.", code=None))
    _until_sent(fake, 2)  # the question's wording, then the judge's call
    engine.stop()  # what the server's lifespan does on SIGTERM or SIGINT
    thread.join(ENDS_WITHIN_S)
    assert not thread.is_alive(), f"the answer still waited for the model {ENDS_WITHIN_S:g} s after the stop"
    assert isinstance(ended.get("error"), EvaluatorStopped), ended
    assert repo.get_session(session.id, user).state == before  # not scored offline, not stored
    assert [t.answered for t in repo.turns(session.id)] == [False]
    assert len(fake.requests) == 2  # nothing was worded after the stop


def test_a_stop_during_a_wording_asks_the_question_from_the_template_at_once(
        fake, tmp_path, ingested_store, bank, embedder):
    engine, repo, user = _engine(fake, tmp_path, ingested_store, bank, embedder)
    fake.script([slow(delay_s=HANGS_S)])
    thread, ended = _in_thread(lambda: engine.start(user_id=user, config=SessionConfig(
        num_questions=1, topics=["tensors"], seed=1)))
    _until_sent(fake, 1)
    engine.stop()
    thread.join(ENDS_WITHIN_S)
    assert not thread.is_alive(), f"the start still waited for the model {ENDS_WITHIN_S:g} s after the stop"
    session, prompt = ended["result"]
    question = {q.id: q for q in bank}[prompt.question_id]
    assert question.question in prompt.text  # the template's wording, stored with the session
    assert repo.get_session(session.id, user).state["notes"] == [
        "Q1: LLM phrasing given up as the server stopped; template used"]


def test_after_a_stop_no_call_is_made_and_none_is_judged_offline(fake, bank, embedder):
    from evaluators.base import GradingTask

    judge = LLMJudge(chat_model_from_settings(_settings(fake)), RubricScorer(embedder))
    judge.stop()
    question = next(q for q in bank if q.id == "zero-grad")
    with pytest.raises(EvaluatorStopped):
        judge.evaluate(GradingTask.from_question(question, "backward adds to .grad, so zero it each step"))
    assert fake.requests == []
