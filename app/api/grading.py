"""Ad-hoc grading: score one answer against a bank question or a reference answer of your own."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from app.api.deps import BankDep, EvaluatorDep, SettingsDep, StoreDep, UserDep, require_size
from app.api.problems import problem_responses
from app.api.schemas import EvaluationOut
from app.errors import NotFoundError
from app.grading import BulkGrader, evaluation_fields

router = APIRouter(prefix="/v1", tags=["grading"], responses=problem_responses(401, 422))


class GradeIn(BaseModel):
    """Give `question_id` (a bank entry), or `question` plus `reference_answer`, or `question` alone
    (matched to the closest bank entry)."""

    model_config = ConfigDict(extra="forbid")

    answer: str
    question_id: str | None = None
    question: str | None = None
    reference_answer: str | None = None


class GradeOut(EvaluationOut):
    matched_id: str | None = Field(default=None, description="The bank entry a free question text matched")


GRADE_EXAMPLES = {
    "bank": {
        "summary": "Against a bank entry",
        "value": {
            "question_id": "autograd-zero-grad",
            "answer": "Gradients accumulate, so zero them each step.",
        },
    },
    "own": {
        "summary": "Your own question and reference",
        "value": {
            "question": "What does model.eval() change?",
            "reference_answer": "It switches dropout off and makes batch norm use its running statistics. "
            "It does not disable gradient tracking.",
            "answer": "Dropout is disabled and batchnorm uses running stats.",
        },
    },
}


@router.post("/grade", response_model=GradeOut, responses=problem_responses(404, 413))
def grade(
    _user: UserDep,
    settings: SettingsDep,
    bank: BankDep,
    store: StoreDep,
    evaluator: EvaluatorDep,
    body: Annotated[GradeIn, Body(openapi_examples=GRADE_EXAMPLES)],
) -> GradeOut:
    """Score one answer 0-5 with a verdict per key point, without starting a session."""
    require_size(body.answer, settings.max_answer_chars, "answer")
    require_size(body.question, settings.max_answer_chars, "question")
    require_size(body.reference_answer, settings.max_answer_chars, "reference_answer")
    if body.question_id is not None and body.question_id not in bank:
        raise NotFoundError(f"no question {body.question_id!r}; list them with GET /v1/questions")
    line = BulkGrader(evaluator=evaluator, bank=bank, store=store).resolve(body.model_dump(exclude_none=True))
    if line.task is None:
        raise HTTPException(422, line.error or "this answer cannot be graded")
    fields: dict[str, Any] = evaluation_fields(evaluator.evaluate(line.task))
    return GradeOut.model_validate(
        {**fields, "question_id": line.task.question_id, "matched_id": line.matched_id}
    )
