"""`interviewer serve` in LLM mode told to stop while a batch is judged: it stops without waiting for the model."""

from __future__ import annotations

import signal
import subprocess
import threading
import time

import httpx
import pytest

from evaluators.judge import JUDGE_CALLS_IN_FLIGHT
from tests.conftest import REPO
from tests.fake_openai import FakeOpenAI, slow
from tests.test_api_server import CLI, free_port, server_env, wait_ready

pytestmark = pytest.mark.e2e

HANGS_S = 290.0  # each judge call's reply comes this late, within the timeout (at most 300 s)
# An idle server took 9 s to stop at a load of 17 on 2 cores; one waiting for the batch would take 2 x HANGS_S.
STOPS_WITHIN_S = 60.0


def stopped_while_judging(tmp_path, path: str, body: dict, replies: int, calls: int, stop: signal.Signals
                          ) -> tuple[list[httpx.Response], int]:
    """Start `serve` against a fake model whose every reply comes HANGS_S late, send one request to `path`, and once
    the model has `calls` calls in flight send `stop`: the server must end within STOPS_WITHIN_S. The replies the
    client got, and the calls the model saw."""
    answered: list[httpx.Response] = []
    with FakeOpenAI() as fake:
        fake.script([slow(delay_s=HANGS_S) for _ in range(replies)])
        env = server_env(
            tmp_path / "data", INTERVIEWER_AUTH_DISABLED="true", INTERVIEWER_LLM_BASE_URL=fake.base_url,
            INTERVIEWER_LLM_MODEL="fake-judge", INTERVIEWER_LLM_TIMEOUT_S="300", INTERVIEWER_LLM_MAX_RETRIES="0",
        )
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen([*CLI, "serve", "--port", str(port)], env=env, cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_ready(base, proc)  # a first start indexes the bank: no clock, a hung server fails
            sent = threading.Thread(target=lambda: answered.append(
                httpx.post(f"{base}{path}", json=body, timeout=2 * HANGS_S)), daemon=True)
            sent.start()
            deadline = time.monotonic() + 60
            while len(fake.requests) < calls:
                assert time.monotonic() < deadline, f"{len(fake.requests)} judge calls made in 60 s"
                time.sleep(0.1)
            proc.send_signal(stop)
            proc.wait(timeout=STOPS_WITHIN_S)
            sent.join(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return answered, len(fake.requests)


def test_ctrl_c_during_a_batch_answers_it_503_and_the_server_ends_without_waiting_for_the_model(tmp_path):
    """SIGTERM takes the same way (app/api/startup.py)."""
    items = [{"question_id": "zero-grad", "answer": f"zero_grad clears the gradients, take {i}"} for i in range(8)]
    answered, calls = stopped_while_judging(tmp_path, "/v1/grade/batch", {"items": items}, replies=8,
                                            calls=JUDGE_CALLS_IN_FLIGHT, stop=signal.SIGINT)
    assert len(answered) == 1 and answered[0].status_code == 503, answered and answered[0].text
    assert "the server is stopping" in answered[0].json()["detail"]
    assert calls == JUDGE_CALLS_IN_FLIGHT  # the answers still queued were not sent


def test_a_stop_during_one_judge_call_answers_it_503_without_waiting_for_the_model(tmp_path):
    """One answer graded (POST /v1/grade, as a session's answer is): its one model call was made on the request's own
    thread, and uvicorn waited for it, so the server stopped only once the reply came (59.8 s, 61.1 s at 60 s)."""
    answered, _ = stopped_while_judging(
        tmp_path, "/v1/grade", {"question_id": "zero-grad", "answer": "zero_grad clears the gradients"}, replies=1,
        calls=1, stop=signal.SIGTERM)
    assert len(answered) == 1 and answered[0].status_code == 503, answered and answered[0].text
    assert "the server is stopping" in answered[0].json()["detail"]
