"""Liveness and readiness probes; no authentication, no details an attacker could use."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from app.api.deps import RepoDep, RunnerDep, SettingsDep, StoreDep
from app.api.problems import problem, problem_responses
from app.llm_reachable import model_reachable
from app.services import resume_after_s
from app.warmup import Part

router = APIRouter(tags=["health"])
log = logging.getLogger(__name__)


class Health(BaseModel):
    status: Literal["ok"]


class Check(BaseModel):
    ok: bool
    detail: str


class Readiness(BaseModel):
    status: Literal["ready"]
    ready: Literal[True] = True
    waiting_for: list[str] = Field(default_factory=list, description="Parts still starting (none once ready)")
    checks: dict[str, Check]
    # Which interviewer answers: an LLM endpoint, or the offline rubric interviewer (no model name given).
    interviewer: Literal["llm", "offline"] = "offline"
    # The parts built after the server listens (app/warmup.py): 503 while "running", naming them in waiting_for.
    warm_up: Literal["done", "running"] | None = None
    # LLM mode only: whether the model server answers. Not among `checks`: without it the interviewer still works
    # (offline, with a note on each answer), so it never makes the API unready.
    model: Check | None = None
    step_within_s: float = Field(
        description="The longest one interview step (an answer judged, the next prompt worded) may take with "
                    "the configured model timeout and retries; a client should wait at least this long for a reply")


@router.get("/healthz", response_model=Health)
async def healthz() -> Health:
    """The process is up and serving requests."""
    # async: answered on the event loop. A plain def waits for a thread of the pool every sync route shares
    # (40), and 45 grades held on a slow model took them all (38 s for this answer).
    return Health(status="ok")


@router.get("/readyz", response_model=Readiness, responses=problem_responses(503))
def readyz(request: Request, repo: RepoDep, store: StoreDep, runner: RunnerDep, settings: SettingsDep) -> Any:
    """The database, the Chroma bank and the code runner pool are all usable, and every part built after start-up
    (the question index, the embeddings, the code sandbox) is there. Until then a 503 whose `waiting_for` names the
    parts still starting, in the order they are built."""
    warm_up, waiting_for = _warm_up(request)
    checks = {
        "database": _probe(lambda: _database(repo)),
        "chroma": _probe(lambda: _bank_size(store, indexing="questions" in waiting_for or warm_up == "running")),
        "runner": _probe(lambda: _runner_state(runner)),
    }
    if warm_up is not None:  # ready means the first candidate is served at full speed
        checks["warm_up"] = Check(ok=warm_up == "done", detail=warm_up)
    interviewer: Literal["llm", "offline"] = "llm" if settings.llm_enabled else "offline"
    step_within_s = resume_after_s(settings)
    model = _model(settings) if settings.llm_enabled else None
    if all(c.ok for c in checks.values()):
        return Readiness(status="ready", checks=checks, interviewer=interviewer, warm_up=warm_up,
                         step_within_s=step_within_s, model=model)
    failing = ", ".join(name for name, c in checks.items() if not c.ok)
    detail = f"not ready: {failing}" + (f" (still starting: {', '.join(waiting_for)})" if waiting_for else "")
    return problem(
        503, detail, headers={"Retry-After": "2"} if waiting_for else None, ready=False, waiting_for=waiting_for,
        checks={k: v.model_dump() for k, v in checks.items()}, interviewer=interviewer, step_within_s=step_within_s,
        model=None if model is None else model.model_dump(),
    )


def _model(settings: Any) -> Check:
    ok, detail = model_reachable(settings.llm_base_url, settings.llm_api_key.get_secret_value(), settings.llm_model)
    return Check(ok=ok, detail=detail)


def _warm_up(request: Request) -> tuple[Literal["done", "running"] | None, list[str]]:
    """The warm-up's state, and the parts it has still to build."""
    warmup = getattr(request.app.state, "warmup", None)
    event = getattr(request.app.state, "warm_up", None)
    if warmup is not None:
        waiting = warmup.waiting_for()
        return ("running" if waiting else "done"), waiting
    if event is None:
        return None, []
    return ("done", []) if event.is_set() else ("running", ["warm_up"])


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
    if isinstance(runner, Part):
        raise NotReady("the code sandbox is starting")
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
