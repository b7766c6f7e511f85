"""Fixtures for the API route tests: the real engine, bank, store and scorer; a fake code runner.

Imported by tests/test_api_*.py. The app is never started with its lifespan here: every
component comes in through `app.dependency_overrides`, as the house style asks.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.api import deps
from app.config import Settings
from app.interview.engine import InterviewEngine
from app.interview.scoring import AnswerScorer
from app.interview.selection import QuestionSelector
from app.main import create_app
from app.store import open_repository
from evaluators.code.results import CheckResult, CodeResult, Status
from evaluators.rubric import RubricScorer

PASSING_MARK = "# passes"


SLOW_MARK = "# slow check"


class FakeRunner:
    """Passes every check when the source contains PASSING_MARK, fails them all otherwise."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def check(self, task: Any, source: str, question_id: str = "") -> CodeResult:
        self.calls.append(question_id)
        if SLOW_MARK in source:  # a check that holds its worker a while
            time.sleep(1.5)
        ok = PASSING_MARK in source
        checks = [
            CheckResult(c.name, c.description, c.weight, ok, None if ok else "wrong values")
            for c in task.checks
        ]
        return CodeResult(question_id, Status.PASSED if ok else Status.FAILED, checks, "", 12.0)


class HeldScorer:
    """The offline scorer, except that each grade (with `marker` in its answer, if given) waits until released: a
    grade held on a slow model."""

    def __init__(self, scorer: Any, release: threading.Event, marker: str = "") -> None:
        self._scorer, self._release, self._marker, self.held = scorer, release, marker, 0

    def evaluate(self, task: Any) -> Any:
        if self._marker in task.answer:
            self.held += 1
            self._release.wait()
        return self._scorer.evaluate(task)

    def evaluate_many(self, tasks: list[Any]) -> list[Any]:
        return [self.evaluate(task) for task in tasks]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scorer, name)


@dataclass
class Api:
    app: Any
    client: TestClient
    repo: Any
    runner: FakeRunner
    keys: dict[str, str]

    def as_user(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[name]}"}


@pytest.fixture(scope="session")
def scorer(embedder):
    return RubricScorer(embedder)


def build_api(
    tmp_path: Path, *, store: Any, bank: list, scorer: Any, with_runner: bool = True, **settings: Any
) -> Api:
    repo = open_repository(f"sqlite:///{tmp_path / 'api.db'}")
    fake = FakeRunner()
    active_runner = fake if with_runner else None
    bank_map = {q.id: q for q in bank}
    engine = InterviewEngine(
        repo=repo,
        selector=QuestionSelector(store),
        bank=bank_map,
        scorer=AnswerScorer(
            evaluator=scorer, code_runner=active_runner
        ),
    )
    defaults: dict[str, Any] = {"data_dir": tmp_path / "data", "code_checks_per_minute": 5}
    app = create_app(Settings(**{**defaults, **settings}))
    app.dependency_overrides.update(
        {
            deps.get_repo: lambda: repo,
            deps.get_store: lambda: store,
            deps.get_bank: lambda: bank_map,
            deps.get_engine: lambda: engine,
            deps.get_evaluator: lambda: scorer,
            deps.get_runner: lambda: active_runner,
        }
    )
    keys = {}
    for name in ("alice", "bob"):
        keys[name], _ = repo.create_api_key(repo.get_or_create_user(name).id, "test")
    return Api(app=app, client=TestClient(app), repo=repo, runner=fake, keys=keys)


@pytest.fixture
def api(tmp_path: Path, ingested_store, bank, scorer) -> Api:
    return build_api(tmp_path, store=ingested_store, bank=bank, scorer=scorer)


@pytest.fixture
def alice(api: Api) -> TestClient:
    """A client that sends alice's key on every request."""
    api.client.headers.update(api.as_user("alice"))
    return api.client


def assert_problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status and body["title"] and body["type"] and body["detail"]
    return body  # type: ignore[no-any-return]
