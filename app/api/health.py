"""Liveness and readiness probes; no authentication, no details an attacker could use."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel

from app.api.deps import RepoDep, RunnerDep, SettingsDep, StoreDep
from app.api.problems import problem, problem_responses

router = APIRouter(tags=["health"])
log = logging.getLogger(__name__)


class Health(BaseModel):
    status: Literal["ok"]


class Check(BaseModel):
    ok: bool
    detail: str


class Readiness(BaseModel):
    status: Literal["ready"]
    checks: dict[str, Check]
    # Which interviewer answers: an LLM endpoint, or the offline rubric interviewer (no model name given).
    interviewer: Literal["llm", "offline"] = "offline"
    # Indexing a fresh bank, rubric and related-entry warm-up after start-up (503 while "running").
    warm_up: Literal["done", "running"] | None = None


@router.get("/healthz", response_model=Health)
async def healthz() -> Health:
    """The process is up and serving requests."""
    # async: answered on the event loop. A plain def waits for a thread of the pool every sync route shares
    # (40), and 45 grades held on a slow model took them all (38 s for this answer).
    return Health(status="ok")


@router.get("/readyz", response_model=Readiness, responses=problem_responses(503))
def readyz(request: Request, repo: RepoDep, store: StoreDep, runner: RunnerDep, settings: SettingsDep) -> Any:
    """The database, the Chroma bank and the code runner pool are all usable."""
    warm_up = _warm_up(request)
    checks = {
        "database": _probe(lambda: _database(repo)),
        "chroma": _probe(lambda: _bank_size(store, indexing=warm_up == "running")),
        "runner": _probe(lambda: _runner_state(runner)),
    }
    if warm_up is not None:  # ready means the first candidate is served at full speed
        checks["warm_up"] = Check(ok=warm_up == "done", detail=warm_up)
    interviewer: Literal["llm", "offline"] = "llm" if settings.llm_enabled else "offline"
    if all(c.ok for c in checks.values()):
        return Readiness(status="ready", checks=checks, interviewer=interviewer, warm_up=warm_up)
    failing = ", ".join(name for name, c in checks.items() if not c.ok)
    return problem(
        503, f"not ready: {failing}", checks={k: v.model_dump() for k, v in checks.items()}, interviewer=interviewer
    )


def _warm_up(request: Request) -> Literal["done", "running"] | None:
    event = getattr(request.app.state, "warm_up", None)
    return None if event is None else "done" if event.is_set() else "running"


def _probe(check: Callable[[], str]) -> Check:
    try:
        return Check(ok=True, detail=check())
    except Exception as exc:
        # Logged in full, reported by type only: messages can carry hosts or file paths.
        log.warning("readiness check failed: %s", exc)
        return Check(ok=False, detail=str(exc) if isinstance(exc, NotReady) else type(exc).__name__)


class NotReady(Exception):
    """A component is up but cannot serve yet; the message says what to do."""


def _database(repo: Any) -> str:
    repo.get_session("readyz-probe", 0)  # a real round trip; the answer itself does not matter
    return "reachable"


def _bank_size(store: Any, *, indexing: bool = False) -> str:
    count = store.count()
    if count == 0 and indexing:
        raise NotReady("the question bank is being indexed (first start on this data directory)")
    if count == 0:
        raise NotReady("the question bank is empty: run `interviewer ingest`")
    return f"{count} questions"


def _runner_state(runner: Any) -> str:
    if runner is None:
        raise NotReady("the code sandbox could not start (is bubblewrap installed?)")
    health = getattr(getattr(runner, "pool", None), "health", None)
    if health is None:  # a runner without a worker pool (a test double) has nothing to report
        return "ready"
    healthy, detail = health()
    if not healthy:
        # The full reason (the worker's stderr, which may name host paths) is in the server log.
        log.warning("code runner unhealthy: %s", detail)
        raise NotReady("the code sandbox cannot keep its workers running: see the server log")
    return detail
