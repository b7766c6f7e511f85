"""Run code against a code task's hidden checks in the sandbox, outside any session."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, HTTPException
from pydantic import Field

from app.api.deps import BankDep, LimiterDep, RunnerDep, SettingsDep, UserDep, code_check_slot, require_size
from app.api.problems import problem_responses
from app.api.schemas import CodeResultOut, RequestModel, code_result_out
from app.errors import NotFoundError, UserFacingError

router = APIRouter(prefix="/v1/code", tags=["code"], responses=problem_responses(401, 422))


class CodeCheckIn(RequestModel):
    question_id: str = Field(examples=["pairwise-distances"])
    code: str = Field(
        examples=["import torch\n\ndef pairwise_distances(x, y):\n    return torch.cdist(x, y)\n"]
    )


@router.post("/check", response_model=CodeResultOut, responses=problem_responses(400, 404, 413, 429, 503))
def check_code(
    user: UserDep,
    settings: SettingsDep,
    bank: BankDep,
    runner: RunnerDep,
    limiter: LimiterDep,
    body: Annotated[CodeCheckIn, Body()],
) -> CodeResultOut:
    """The runner's verdict: passed, failed, error, timed_out or resource_limit, with each check."""
    require_size(body.code, settings.max_code_chars, "code")
    question = bank.get(body.question_id)
    if question is None:
        raise NotFoundError(
            f"no question {body.question_id!r}; list code tasks with GET /v1/questions?kind=code"
        )
    if question.code is None:
        raise UserFacingError(f"question {body.question_id!r} is not a code task: nothing to run")
    if runner is None:
        raise HTTPException(503, "code checks are unavailable on this server (the sandbox could not start)")
    with code_check_slot(user, limiter) as take:
        take()
        result = runner.check(question.code, body.code, question.id)
    out = code_result_out(result if isinstance(result, dict) else result.to_json())
    assert out is not None
    return out
