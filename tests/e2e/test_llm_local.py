"""LLM mode against a real model: llama-cpp-python's OpenAI-compatible server running SmolLM2-135M
on loopback (`make llm-local`, which `make test` runs). What the model says is not scripted, so the
assertions are on what we do with it: every quote kept is in the answer, a point credited on an invented one is
read offline with a note, scores are recomputed from verified verdicts, and each failure (timeout, a reply
cut off, an unknown model, no server) scores offline with the reason shown while the session goes on.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from app.interview.engine import InterviewEngine
from app.interview.models import SessionConfig
from app.interview.phrasing import LLMPhraser
from app.interview.scoring import AnswerScorer
from app.interview.selection import QuestionSelector
from app.llm import LangChainChatModel
from app.reports import build_report, render
from app.store import open_repository
from evaluators.base import GradingTask, Verdict
from evaluators.chat import LLMError
from evaluators.judge import LLMJudge
from evaluators.judge_offline import MISCONCEPTION_PENALTY
from evaluators.judge_reply import JudgeReply
from evaluators.quotes import clean_quote, quote_in
from evaluators.rubric import RubricScorer
from tests.local_llm import CONTEXT_TOKENS, MAX_TOKENS, MODEL_ALIAS, local_model_server

pytestmark = [pytest.mark.e2e, pytest.mark.e2e_llm, pytest.mark.slow]

QUESTION = "relu-autograd-function"
OFFLINE_GAP = re.compile(r"LLM judge: ([+-]\d+\.\d) for the points read offline")
PARTIAL = "You subclass torch.autograd.Function and write static forward and backward methods."
FOLLOW_UP = (
    "In forward I call ctx.save_for_backward(x) and return x.clamp(min=0). In backward I read the saved "
    "x and return grad_output * (x > 0). Then you call it as MyReLU.apply(x)."
)


@pytest.fixture(scope="module")
def server_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("llm") / "server.log"


@pytest.fixture(scope="module")
def server(server_log: Path) -> Any:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.fail("llama-cpp-python is not installed: run `make llm-local` (make test does)")
    with local_model_server(log=server_log) as base_url:
        yield base_url


class RecordingModel(LangChainChatModel):
    """The real client, keeping each raw judge reply so the test can see what the model claimed."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.judge_replies: list[JudgeReply | None] = []  # one per grading call; None where it failed

    def complete_structured(self, *, system: str, user: str, schema: Any) -> Any:
        try:
            reply = super().complete_structured(system=system, user=user, schema=schema)
        except Exception:
            self.judge_replies.append(None)
            raise
        self.judge_replies.append(reply if isinstance(reply, JudgeReply) else None)
        return reply


def model(base_url: str, **overrides: Any) -> RecordingModel:
    options: dict[str, Any] = {
        "base_url": base_url, "model": MODEL_ALIAS, "timeout_s": 240.0, "max_retries": 0,
        "max_tokens": MAX_TOKENS, "context_tokens": CONTEXT_TOKENS, **overrides,
    }
    return RecordingModel(**options)


def test_a_practice_session_in_llm_mode_end_to_end(server, tmp_path, ingested_store, bank, embedder):
    chat = model(server)
    offline = RubricScorer(embedder)
    repo = open_repository(f"sqlite:///{tmp_path / 'llm.db'}")
    by_id = {q.id: q for q in bank}
    engine = InterviewEngine(
        repo=repo, selector=QuestionSelector(ingested_store), bank=by_id,
        scorer=AnswerScorer(evaluator=LLMJudge(chat, offline)), phraser=LLMPhraser(chat),
    )
    user = repo.get_or_create_user("e2e").id
    config = SessionConfig(num_questions=1, topics=["autograd"], difficulty=3, seed=3)
    session, prompt = engine.start(user_id=user, config=config)
    while prompt.question_id != QUESTION:
        config = config.model_copy(update={"seed": (config.seed or 0) + 1})
        session, prompt = engine.start(user_id=user, config=config)
    assert prompt.text.strip()  # worded by the model, or the template with a note if it failed

    first = engine.answer(session_id=session.id, user_id=user, text=PARTIAL, code=None)
    assert first.status == "active" and first.prompt is not None and first.prompt.kind == "follow_up"
    assert first.prompt.text.strip()
    second = engine.answer(session_id=session.id, user_id=user, text=FOLLOW_UP, code=None)
    if second.status == "active":  # a second follow-up asks the model nothing new to check: end here, unscored
        engine.finish(session_id=session.id, user_id=user)

    evaluations = [t.evaluation for t in repo.turns(session.id) if t.evaluation]
    assert len(evaluations) >= 2
    answers = [PARTIAL]
    for evaluation in evaluations:
        verify(evaluation, answers=list(answers), question=by_id[QUESTION])
        answers.append(FOLLOW_UP)
    # what the model claimed, against what was kept: every point credited on an invented quote was read offline
    # and named
    assert any(chat.judge_replies), "no grading reply from the real model was usable: nothing was verified"
    for reply, evaluation in zip(chat.judge_replies, evaluations, strict=True):  # one call per answer here
        if reply is None or not _judged(evaluation):  # no reply, or one that quoted nothing: scored offline
            continue
        kept = {p["point_id"]: p for p in evaluation["points"]}
        first: dict[str, Any] = {}
        for claimed in reply.points:
            first.setdefault(claimed.point_id, claimed)  # a repeated id is not read twice
        for claimed in first.values():
            quote = clean_quote(claimed.evidence_quote or "")
            if claimed.point_id in kept and claimed.verdict != "missed" and not quote_in(quote, answers):
                assert any(claimed.point_id in note and "read offline" in note for note in evaluation["notes"])
    assert chat.method == "json_mode"  # llama-cpp-python refuses json_schema: detected, then kept

    stored = repo.get_session(session.id, user)
    assert stored.status == "completed"
    report = build_report(session=stored, turns=repo.turns(session.id), bank=by_id)
    assert report.questions and report.questions[0].question_id == QUESTION
    markdown = render(report, "markdown")[0].decode()
    assert report.questions[0].score is not None and "ReLU" in markdown


def _judged(evaluation: dict[str, Any]) -> bool:
    return str(evaluation["evaluator"]).startswith("llm-judge:")


def verify(evaluation: dict[str, Any], *, answers: list[str], question: Any) -> None:
    """A judged evaluation keeps only quotes found in the answers and its score is the rubric's sum;
    a fallback says why and carries the offline score."""
    if not _judged(evaluation):
        assert any("LLM judge failed:" in note and "offline score used" in note for note in evaluation["notes"])
        return
    for point in evaluation["points"]:
        if point["verdict"] != Verdict.MISSED:
            assert quote_in(point["evidence"], answers), point
    for wrong in evaluation["misconceptions"]:
        assert quote_in(wrong["quote"], answers)
    weights = sum(p["weight"] for p in evaluation["points"])
    earned = 5 * sum(p["weight"] * p["credit"] for p in evaluation["points"]) / weights  # offline's own, if read so
    # Points read offline carry the offline score's gap to its credits, and a note says how much (to 0.1).
    carried = [float(m.group(1)) for n in evaluation["notes"] if (m := OFFLINE_GAP.match(n))]
    penalty = MISCONCEPTION_PENALTY * len(evaluation["misconceptions"])
    expected = round(min(5.0, max(0.0, earned + sum(carried) - penalty)), 1)
    assert evaluation["score"] == pytest.approx(expected, abs=0.1 if carried else 0.05)


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"max_tokens": 24}, "reply cut off at the length limit"),
        ({"model": "no-such-model"}, "model 'no-such-model' is not served"),
        ({"timeout_s": 0.3, "max_tokens": 24}, "timeout after 0.3 s"),  # last: the server still reads its prompt
    ],
    ids=["cut-off", "unknown-model", "timeout"],
)
def test_failures_of_the_real_server_score_offline_with_the_reason(server, embedder, bank, overrides, reason):
    task = GradingTask.from_question({q.id: q for q in bank}[QUESTION], PARTIAL)
    offline = RubricScorer(embedder)
    evaluation = LLMJudge(model(server, **overrides), offline).evaluate(task)
    assert "fallback from llm-judge" in evaluation.evaluator
    assert any(reason in note and "offline score used" in note for note in evaluation.notes), evaluation.notes
    assert evaluation.score == offline.evaluate(task).score


def test_a_reply_given_up_on_stops_the_real_server_generating_it(server, server_log):
    """llama-cpp-python stops a streamed reply whose connection closed (it logs "Disconnected from client"), and
    works an unstreamed one out whole while the next request waits: 19 to 32 s here after a 3 s timeout, 1.1 to
    1.3 s streamed. The log, not the wait, is asserted: the wait depends on the machine's load."""
    import time

    import openai

    def short_request() -> None:  # served once the server is done with the request before it
        client = openai.OpenAI(base_url=server, api_key="not-needed", timeout=600, max_retries=0)
        client.chat.completions.create(model=MODEL_ALIAS, messages=[{"role": "user", "content": "Hi"}], max_tokens=1)

    def stopped() -> int:
        return server_log.read_text(errors="replace").count("Disconnected from client")

    short_request()  # an earlier test's call given up on is over
    before = stopped()
    with pytest.raises(LLMError, match="timeout after 3 s"):
        model(server, timeout_s=3.0).complete_text(
            system="You write at length.", user="Write a long essay on the history of deep learning."
        )
    gave_up = time.monotonic()
    short_request()
    assert stopped() == before + 1, f"the next request waited {time.monotonic() - gave_up:.1f} s"


def test_no_server_at_the_address_scores_offline(tmp_path: Path, embedder, bank):
    task = GradingTask.from_question({q.id: q for q in bank}[QUESTION], PARTIAL)
    evaluation = LLMJudge(model("http://127.0.0.1:9/v1", timeout_s=2.0), RubricScorer(embedder)).evaluate(task)
    assert any("connection failed" in note for note in evaluation.notes)
