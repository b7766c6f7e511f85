"""The server listens before its slow parts are built, and says what it still waits for.

The sandbox's start is held by a test hook (an event), not made slow by a clock: what is asserted holds however busy
the machine is.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import app.main
import app.services
from app.config import Settings
from app.main import create_app
from tests.api_fixtures import PASSING_MARK, FakeRunner

BACKSTOP_S = 600.0  # only a hung test ends here


class ClosableRunner(FakeRunner):
    closed = False

    def close(self) -> None:
        self.closed = True


@dataclass
class Starting:
    client: TestClient
    headers: dict[str, str]
    building: threading.Event  # the warm-up has begun the sandbox
    release: threading.Event  # lets the sandbox's start end
    runner: ClosableRunner
    code_task: Any


@pytest.fixture
def starting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Starting]:
    """The real start-up on a fresh data directory (hash embeddings), with the sandbox's start held until released.
    A sandbox built while the server starts (before it serves) is not held: the test then finds it ready."""
    building, release, runner = threading.Event(), threading.Event(), ClosableRunner()
    builders: set[threading.Thread] = set()
    build = app.main.build_components

    def build_components(settings: Settings) -> dict[str, Any]:
        builders.add(threading.current_thread())
        return build(settings)

    def code_runner_for(settings: Settings) -> ClosableRunner:
        building.set()
        if threading.current_thread() not in builders:  # after start-up: held until the test lets it go
            release.wait(BACKSTOP_S)
        return runner

    monkeypatch.setattr(app.main, "build_components", build_components)
    monkeypatch.setattr(app.services, "code_runner_for", code_runner_for)
    api = create_app(Settings(data_dir=tmp_path / "data", embedder="hash"))
    try:
        with TestClient(api) as client:
            repo = api.state.repo
            key, _ = repo.create_api_key(repo.get_or_create_user("alice").id, "test")
            task = next(q for q in api.state.bank.values() if q.code is not None)
            yield Starting(client, {"Authorization": f"Bearer {key}"}, building, release, runner, task)
    finally:
        release.set()


def _sandbox_held(s: Starting) -> None:
    """Until the warm-up has built everything but the sandbox, which it is starting."""
    assert s.building.wait(BACKSTOP_S), "the warm-up never started the sandbox"


def test_ready_names_what_still_starts_while_the_sandbox_starts(starting: Starting) -> None:
    """The port opened only once the sandbox's workers had started (22 s on a fresh data directory), and /readyz
    answered 200 a minute after launch. Now the server answers at once; /readyz is a 503 naming the parts still
    starting, and 200 once they are there."""
    s = starting
    assert s.client.get("/healthz").json() == {"status": "ok"}
    _sandbox_held(s)
    reply = s.client.get("/readyz")
    body = reply.json()
    assert reply.status_code == 503 and body["ready"] is False and body["waiting_for"] == ["sandbox"], body
    assert reply.headers["Retry-After"] and body["checks"]["runner"]["detail"] == "the code sandbox is starting"
    assert body["checks"]["chroma"]["ok"] and body["checks"]["database"]["ok"]
    # A question is served meanwhile, and an answer in words is scored: neither needs the sandbox.
    created = s.client.post("/v1/sessions", json={"num_questions": 1, "topics": ["autograd"]}, headers=s.headers)
    assert created.status_code == 201, created.text
    session = created.json()
    if session["prompt"]["code_contract"] is None:
        answered = s.client.post(f"/v1/sessions/{session['id']}/answers", headers=s.headers,
                                 json={"text": "Autograd records a graph of operations.", "turn": 0})
        assert answered.status_code == 200, answered.text
    s.release.set()
    assert s.client.app.state.warm_up.wait(BACKSTOP_S)  # type: ignore[attr-defined]
    ready = s.client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["ready"] is True and ready.json()["waiting_for"] == []


def test_a_code_check_while_the_sandbox_starts_is_told_when_to_come_back(
    starting: Starting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A code check that came while the sandbox started waits for it a while, then gets a 503 with Retry-After
    naming the sandbox; nothing ran and no run was counted. Once the sandbox is there, the same check runs."""
    s = starting
    _sandbox_held(s)
    monkeypatch.setattr("app.warmup.WAIT_S", 0.2)
    check = {"question_id": s.code_task.id, "code": PASSING_MARK}
    refused = s.client.post("/v1/code/check", json=check, headers=s.headers)
    assert refused.status_code == 503, refused.text
    assert refused.headers["Retry-After"] == "5" and refused.json()["waiting_for"] == ["sandbox"]
    assert "sandbox is still starting" in refused.json()["detail"] and s.runner.calls == []
    s.release.set()
    ran = s.client.post("/v1/code/check", json=check, headers=s.headers)
    assert ran.status_code == 200 and ran.json()["status"] == "passed" and s.runner.calls == [s.code_task.id]


def test_a_code_check_waits_for_a_sandbox_that_comes_in_time(
    starting: Starting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within the wait, the check waits for the sandbox and runs."""
    s = starting
    _sandbox_held(s)
    monkeypatch.setattr("app.warmup.WAIT_S", BACKSTOP_S)
    replies: list[Any] = []
    check = {"question_id": s.code_task.id, "code": PASSING_MARK}
    sent = threading.Thread(target=lambda: replies.append(s.client.post("/v1/code/check", json=check,
                                                                        headers=s.headers)))
    sent.start()
    s.release.set()  # before or after the request began to wait: either way it gets the run
    sent.join(BACKSTOP_S)
    assert replies and replies[0].status_code == 200 and replies[0].json()["status"] == "passed"


def test_a_sandbox_that_starts_after_shutdown_is_closed() -> None:
    """Stopped while the sandbox started: its workers are closed as soon as they are up, not left running; and no
    part after it is built."""
    from app.warmup import Part, StillWarming, Warmup

    building, release, closed, later = threading.Event(), threading.Event(), [], []

    def start_sandbox() -> str:
        building.set()
        release.wait(BACKSTOP_S)
        return "workers"

    warmup = Warmup([Part("sandbox", start_sandbox, close=closed.append),
                     Part("later", lambda: later.append("built"))]).start()
    assert building.wait(BACKSTOP_S)
    warmup.stop()  # the lifespan's shutdown, as on SIGTERM
    with pytest.raises(StillWarming):  # a request waiting for it is let go at once
        warmup.part("sandbox").wait(BACKSTOP_S)
    release.set()
    assert warmup.done.wait(BACKSTOP_S)
    assert closed == ["workers"] and later == [] and warmup.part("sandbox").value is None


def test_a_code_answer_while_the_sandbox_starts_keeps_nothing(starting: Starting, monkeypatch: pytest.MonkeyPatch) \
        -> None:
    """A code answer that came while the sandbox started gets a 503 with Retry-After before anything of it is kept:
    the same answer to the same turn is taken once the sandbox is there."""
    s = starting
    _sandbox_held(s)
    monkeypatch.setattr("app.warmup.WAIT_S", 0.2)
    for seed in range(50):  # a session whose first question is a code task
        created = s.client.post("/v1/sessions", json={"num_questions": 1, "seed": seed}, headers=s.headers).json()
        if created["prompt"]["code_contract"] is not None:
            break
    else:
        pytest.fail("no session of 50 seeds began with a code task")
    answer = {"text": "", "code": PASSING_MARK, "turn": created["prompt"]["turn"]}
    refused = s.client.post(f"/v1/sessions/{created['id']}/answers", json=answer, headers=s.headers)
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "5", refused.text
    assert refused.json()["waiting_for"] == ["sandbox"] and s.runner.calls == []
    s.release.set()
    taken = s.client.post(f"/v1/sessions/{created['id']}/answers", json=answer, headers=s.headers)
    assert taken.status_code == 200, taken.text
    assert taken.json()["code_result"]["status"] == "passed" and len(s.runner.calls) == 1


def test_a_part_that_fails_because_the_server_stops_is_not_logged_as_a_failure(caplog: pytest.LogCaptureFixture) \
        -> None:
    """Ctrl-C while the embeddings were built shut their thread pool under them ("cannot schedule new futures after
    shutdown"), and the log ended with "start-up: embeddings failed" and a traceback after the server had finished."""
    from app.warmup import Part, Warmup

    building, release = threading.Event(), threading.Event()

    def embed() -> str:
        building.set()
        release.wait(BACKSTOP_S)
        raise RuntimeError("cannot schedule new futures after shutdown")

    warmup = Warmup([Part("embeddings", embed)]).start()
    assert building.wait(BACKSTOP_S)
    warmup.stop()
    with caplog.at_level("INFO", logger="app.warmup"):
        release.set()
        assert warmup.done.wait(BACKSTOP_S)
    failed = [r for r in caplog.records if r.levelname == "ERROR"]
    assert not failed and any("given up" in r.getMessage() for r in caplog.records), caplog.records


def test_a_server_started_again_warms_up_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first start's stopped warm-up stayed on app.state, and a second start (a test client entered again, as the
    fuzz test's schema loader and its fixture both did) served it: /readyz said "waiting_for": ["sandbox"] for ever
    (a failed CI run), and a code answer got a 503."""
    monkeypatch.setattr(app.services, "code_runner_for", lambda settings: ClosableRunner())
    api = create_app(Settings(data_dir=tmp_path / "data", embedder="hash"))
    with TestClient(api):
        first = api.state.warmup
    with TestClient(api) as client:
        assert api.state.warmup is not first
        assert api.state.warm_up.wait(BACKSTOP_S)
        ready = client.get("/readyz")
    assert ready.status_code == 200, ready.text
