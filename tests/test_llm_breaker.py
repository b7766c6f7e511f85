"""The LLM breaker: a step stops calling after one call got no reply, and a server that leaves calls unanswered
is skipped for a cool-down, then tried with one call."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from app.config import Settings
from app.llm import LangChainChatModel, chat_model_from_settings
from app.llm_breaker import Breaker, llm_step
from evaluators.chat import LLMError
from tests.fake_openai import NEVER_S, REPLIES_WITHIN_S, FakeOpenAI, content, slow


class Unanswered(LLMError):
    pass


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def attempt(breaker: Breaker, outcome: Exception | None = None) -> str:
    """One call through the breaker: 'made' (whatever it raised) or the reason it was not made."""
    try:
        with breaker.call(unanswered=Unanswered):
            if outcome is not None:
                raise outcome
    except LLMError as exc:
        if exc is not outcome:
            return exc.reason
    return "made"


def test_a_server_left_unanswered_is_skipped_for_the_cool_down_then_tried_with_one_call():
    clock = Clock()
    breaker = Breaker(failures_to_open=3, cool_down_s=30, clock=clock)
    assert attempt(breaker, Unanswered("timeout after 20 s")) == "made"
    assert attempt(breaker, LLMError("HTTP 400: bad request")) == "made"  # an answer: the count starts again
    for _ in range(3):
        assert attempt(breaker, Unanswered("timeout after 20 s")) == "made"
    skipped = attempt(breaker)
    assert skipped == ("not called during a 30 s cool-down: the model server left 3 calls in a row unanswered, "
                       "last: timeout after 20 s")
    clock.now = 29.9
    assert attempt(breaker) == skipped
    clock.now = 30.0
    assert attempt(breaker, Unanswered("connection failed")) == "made"  # the one call that tries again
    assert attempt(breaker).startswith("not called during a 30 s cool-down")  # failed: another cool-down
    clock.now = 60.0
    assert attempt(breaker) == "made"  # answered: back to normal
    assert attempt(breaker) == "made"


def test_while_one_call_tries_the_server_again_the_others_still_skip():
    clock = Clock()
    breaker = Breaker(failures_to_open=1, cool_down_s=5, clock=clock)
    attempt(breaker, Unanswered("timeout after 1 s"))
    clock.now = 5.0
    with breaker.call(unanswered=Unanswered):
        assert attempt(breaker).startswith("not called during a 5 s cool-down")
    assert attempt(breaker) == "made"


def test_after_a_call_of_a_step_got_no_reply_its_other_calls_are_not_made():
    breaker = Breaker(failures_to_open=99)
    with llm_step():
        assert attempt(breaker, LLMError("HTTP 500")) == "made"  # an answer, if a bad one
        assert attempt(breaker, Unanswered("timeout after 20 s")) == "made"
        assert attempt(breaker) == "not called: an earlier call of this step got no reply, timeout after 20 s"
    with llm_step():
        assert attempt(breaker) == "made"  # the next step calls again
    assert attempt(breaker) == "made"  # outside a step nothing is remembered


def test_a_dead_server_costs_the_timeout_only_until_the_breaker_opens():
    """Three calls time out; the fourth, from another client of the same server (the phrasing after the judge),
    is not sent and says why."""
    with FakeOpenAI() as server:
        server.script([slow(delay_s=NEVER_S)] * 4)
        settings = Settings(llm_base_url=server.base_url, llm_model="m", llm_timeout_s=0.3, llm_max_retries=0)
        judge, phrasing = chat_model_from_settings(settings), chat_model_from_settings(settings)
        assert isinstance(judge, LangChainChatModel) and isinstance(phrasing, LangChainChatModel)
        for _ in range(3):
            with pytest.raises(LLMError, match="timeout after 0.3 s"):
                judge.complete_text(system="s", user="u")
        with pytest.raises(LLMError) as caught:
            phrasing.complete_text(system="s", user="u")
        assert caught.value.reason.startswith("not called during a 30 s cool-down")
        assert len(server.requests) == 3


def test_a_server_that_answers_is_never_skipped():
    with FakeOpenAI() as server:
        server.script([content("fine")] * 5)
        model = LangChainChatModel(base_url=server.base_url, model="m", timeout_s=REPLIES_WITHIN_S, max_retries=0,
                                   breaker=Breaker(failures_to_open=1))
        assert [model.complete_text(system="s", user="u") for _ in range(5)] == ["fine"] * 5


class HungServer:
    """Takes connections and never answers (a hung process); counts the connections it took."""

    def __init__(self) -> None:
        import socket
        import threading

        self._socket = socket.create_server(("127.0.0.1", 0))
        self.taken: list[socket.socket] = []
        threading.Thread(target=self._take, daemon=True).start()

    def _take(self) -> None:
        while True:
            try:
                self.taken.append(self._socket.accept()[0])
            except OSError:
                return

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}/v1"

    def close(self) -> None:
        for conn in self.taken:
            conn.close()
        self._socket.close()


def test_a_hung_server_is_not_asked_for_its_window_once_its_calls_are_skipped():
    """The judge asks for the window (GET /models) before its call: that waited out the probe's timeout on every
    answer, and once more for the model check (9.5 s an answer at a 3 s timeout; 3.1 s each while skipped)."""
    hung = HungServer()
    try:
        settings = Settings(llm_base_url=hung.base_url, llm_model="m", llm_timeout_s=0.5, llm_max_retries=0)
        model = chat_model_from_settings(settings)
        assert model is not None
        for _ in range(3):
            assert model.prompt_budget is None
            with pytest.raises(LLMError, match="timeout after 0.5 s"):
                model.complete_text(system="s", user="u")
        assert len(hung.taken) == 4  # GET /models once (not asked again soon after), then the three calls
        assert model.prompt_budget is None
        with pytest.raises(LLMError, match="not called during a 30 s cool-down"):
            model.complete_text(system="s", user="u")
        assert len(hung.taken) == 4
    finally:
        hung.close()


def in_flight(breaker: Breaker) -> Callable[[Exception | None], None]:
    """A call admitted now and ended later: with the outcome given (an exception, or None for an answer)."""
    call = breaker.call(unanswered=Unanswered)
    call.__enter__()

    def end(outcome: Exception | None) -> None:
        call.__exit__(type(outcome) if outcome else None, outcome, None)

    return end


def test_calls_in_flight_when_the_breaker_opens_neither_count_nor_extend_its_cool_down():
    clock = Clock()
    breaker = Breaker(failures_to_open=3, cool_down_s=30, clock=clock)
    calls = [in_flight(breaker) for _ in range(5)]  # a batch: five calls out before any failed
    for end in calls[:3]:
        end(Unanswered("timeout after 20 s"))
    clock.now = 10.0
    for end in calls[3:]:
        end(Unanswered("timeout after 20 s"))
    assert "left 3 calls in a row" in attempt(breaker)
    clock.now = 30.0
    assert attempt(breaker) == "made"  # the cool-down ran from the third failure, not the fifth


def test_a_call_from_before_the_cool_down_failing_does_not_let_a_second_call_try_the_server():
    clock = Clock()
    breaker = Breaker(failures_to_open=1, cool_down_s=5, clock=clock)
    early, late = in_flight(breaker), in_flight(breaker)
    early(Unanswered("timeout after 1 s"))
    clock.now = 5.0
    trying = in_flight(breaker)  # the one call that tries the server again
    late(Unanswered("timeout after 1 s"))  # admitted before the breaker opened
    for clock.now in (5.0, 10.0, 60.0):  # however long the try takes, no other call joins it
        assert attempt(breaker).startswith("not called during a 5 s cool-down")
    trying(None)
    assert attempt(breaker) == "made"
