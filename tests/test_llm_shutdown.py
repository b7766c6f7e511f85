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


def test_ctrl_c_during_a_batch_answers_it_503_and_the_server_ends_without_waiting_for_the_model(tmp_path):
    """SIGTERM takes the same way (app/api/startup.py)."""
    answered: list[httpx.Response] = []
    with FakeOpenAI() as fake:
        fake.script([slow(delay_s=HANGS_S) for _ in range(8)])
        env = server_env(
            tmp_path / "data", INTERVIEWER_AUTH_DISABLED="true", INTERVIEWER_LLM_BASE_URL=fake.base_url,
            INTERVIEWER_LLM_MODEL="fake-judge", INTERVIEWER_LLM_TIMEOUT_S="300",
            INTERVIEWER_LLM_MAX_RETRIES="0",
        )
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen([*CLI, "serve", "--port", str(port)], env=env, cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_ready(base, proc)  # a first start indexes the bank: no clock, a hung server fails
            items = [{"question_id": "zero-grad", "answer": f"zero_grad clears the gradients, take {i}"}
                     for i in range(8)]
            batch = threading.Thread(target=lambda: answered.append(
                httpx.post(f"{base}/v1/grade/batch", json={"items": items}, timeout=2 * HANGS_S)), daemon=True)
            batch.start()
            deadline = time.monotonic() + 60
            while len(fake.requests) < JUDGE_CALLS_IN_FLIGHT:
                assert time.monotonic() < deadline, f"{len(fake.requests)} judge calls made in 60 s"
                time.sleep(0.1)
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=STOPS_WITHIN_S)
            batch.join(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert len(answered) == 1 and answered[0].status_code == 503, answered and answered[0].text
    assert "the server is stopping" in answered[0].json()["detail"]
    assert len(fake.requests) == JUDGE_CALLS_IN_FLIGHT  # the answers still queued were not sent


def test_a_stop_during_one_judge_call_answers_it_503_without_waiting_for_the_model(tmp_path):
    """One answer graded (POST /v1/grade, as a session's answer is): its one model call was made on the request's own
    thread, and uvicorn waited for it, so the server stopped only once the reply came (59.8 s, 61.1 s at 60 s)."""
    answered: list[httpx.Response] = []
    with FakeOpenAI() as fake:
        fake.script([slow(delay_s=HANGS_S)])
        env = server_env(
            tmp_path / "data", INTERVIEWER_AUTH_DISABLED="true", INTERVIEWER_LLM_BASE_URL=fake.base_url,
            INTERVIEWER_LLM_MODEL="fake-judge", INTERVIEWER_LLM_TIMEOUT_S="300", INTERVIEWER_LLM_MAX_RETRIES="0",
        )
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen([*CLI, "serve", "--port", str(port)], env=env, cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_ready(base, proc)
            grade = threading.Thread(target=lambda: answered.append(httpx.post(
                f"{base}/v1/grade", json={"question_id": "zero-grad", "answer": "zero_grad clears the gradients"},
                timeout=2 * HANGS_S)), daemon=True)
            grade.start()
            deadline = time.monotonic() + 60
            while not fake.requests:
                assert time.monotonic() < deadline, "no judge call made in 60 s"
                time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=STOPS_WITHIN_S)
            grade.join(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert len(answered) == 1 and answered[0].status_code == 503, answered and answered[0].text
    assert "the server is stopping" in answered[0].json()["detail"]
