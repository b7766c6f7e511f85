"""Run code against a code task's hidden checks in the sandbox: on the side, or as a session's "Run checks"."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException
from pydantic import Field

from app.api.deps import (
    BankDep,
    LimiterDep,
    RepoDep,
    RunnerDep,
    SettingsDep,
    UserDep,
    code_check_slot,
    require_size,
)
from app.api.problems import problem_responses
from app.api.schemas import CodeResultOut, RequestModel, code_result_out
from app.errors import ConflictError, NotFoundError, UserFacingError, echoed, no_session
from app.interview.turns import SessionTurns
from app.warmup import settle
from evaluators.run_points import judge_run
from knowledge.schema import Question

router = APIRouter(prefix="/v1/code", tags=["code"], responses=problem_responses(401, 422))


class CodeCheckIn(RequestModel):
    question_id: str = Field(examples=["pairwise-distances"])
    code: str = Field(
        examples=["import torch\n\ndef pairwise_distances(x, y):\n    return torch.cdist(x, y)\n"]
    )
    session_id: str | None = Field(
        default=None, description="The session whose current question this is: the run is counted on it, and "
        "the report shows how often the hidden checks were run before the answer.")


class CodeRunOut(CodeResultOut):
    runs: int | None = Field(default=None, description="Runs of this task's checks in the session so far")


@router.post("/check", response_model=CodeRunOut, responses=problem_responses(400, 404, 409, 413, 429, 503))
def check_code(
    user: UserDep,
    settings: SettingsDep,
    bank: BankDep,
    runner: RunnerDep,
    limiter: LimiterDep,
    repo: RepoDep,
    body: Annotated[CodeCheckIn, Body()],
) -> CodeRunOut:
    """The runner's verdict: passed, failed, error, timed_out or resource_limit, with each check."""
    require_size(body.code, settings.max_code_chars, "code")
    if not body.code.strip():
        raise UserFacingError("code is empty: send the code to check")
    question = bank.get(body.question_id)
    if question is None:
        raise NotFoundError(
            f"no question {echoed(body.question_id)}; list code tasks with GET /v1/questions?kind=code"
        )
    if question.code is None:
        raise UserFacingError(f"question {body.question_id!r} is not a code task: nothing to run")
    question = _counted_where_asked(repo, user.id, body, bank) or question
    runner = settle(runner)  # a sandbox still starting is waited for a while, then a 503 with Retry-After
    if runner is None:
        raise HTTPException(503, "code checks are unavailable on this server (the sandbox could not start)")
    with code_check_slot(user, limiter) as take:
        take()
        result = runner.check(question.code, body.code, question.id)
    out = code_result_out(result if isinstance(result, dict) else result.to_json())
    assert out is not None
    runs = repo.count_code_run(body.session_id, question.id) if body.session_id else None
    # The score a session gives this run (by the rubric points its checks verify), not the checks' own weights.
    return CodeRunOut(**{**out.model_dump(), "score": judge_run(question, out.model_dump())[1]}, runs=runs)


def _counted_where_asked(repo: Any, user_id: int, body: CodeCheckIn, bank: dict[str, Question]) -> Question | None:
    """A run for a session must be of its question on screen; a task on screen in an interview-mode session is
    run only through it, where its runs are counted (each run shows which hidden checks fail, so a candidate
    could otherwise iterate against them unseen). For a session, the task as the session asked it: its answer is
    judged by that copy, so a pack edited since must not change what Run checks shows."""
    if body.session_id is None:
        if body.question_id in repo.questions_in_interview(user_id):
            raise ConflictError(f"question {body.question_id!r} is being asked in your interview: run it there "
                                "(give its session_id), where the report counts the runs")
        return None
    session = repo.get_session(body.session_id, user_id)
    if session is None:
        raise no_session(body.session_id)
    if session.status != "active" or session.state.get("current_question_id") != body.question_id:
        raise ConflictError(f"question {body.question_id!r} is not the one on screen in session {body.session_id}")
    return SessionTurns(repo).asked(body.session_id, body.question_id, bank)
