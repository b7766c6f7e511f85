"""Ad-hoc grading: score answers against bank questions or reference answers of your own, one at a
time or in batches (an LMS or bootcamp grading a cohort's answers)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, HTTPException
from pydantic import BaseModel, BeforeValidator, Field, StrictFloat, WithJsonSchema, model_validator

from app.api.deps import BankDep, EvaluatorDep, RepoDep, SettingsDep, StoreDep, UserDep, grading_slot, require_size
from app.api.problems import problem_responses
from app.api.schemas import EvaluationOut, RequestModel
from app.errors import ConflictError, NotFoundError, UserFacingError, echoed
from app.grade_lines import GradeLine, best_evaluations, question_id_text
from app.graded_examples import ExampleError
from app.grading import MAX_REFERENCES, BulkGrader, evaluation_fields

router = APIRouter(prefix="/v1", tags=["grading"], responses=problem_responses(401, 422))
# Items per batch request: ~1 s of scoring on 2 cores for interview-length answers. The request body cap
# of this route is sized from it (app/main.py).
MAX_BATCH = 100


QuestionId = Annotated[
    str, BeforeValidator(question_id_text), WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "integer"}]})
]


class GradeIn(RequestModel):
    """Give `question_id` (a bank entry), or `question` plus `reference_answer` (a `question_id` beside
    them is your own label for the question, echoed back and used to pair examples), or `question` alone
    (matched to the closest bank entry)."""

    answer: str
    question_id: QuestionId | None = Field(
        default=None, description="A bank entry's id; beside your own reference_answer, your own label for the "
        "question (echoed back, and it pairs the item with your examples of the same id). An integer is read as "
        "its digits, as a string (17 is '17')",
    )
    question: str | None = None
    reference_answer: str | Annotated[list[str], Field(min_length=1, max_length=MAX_REFERENCES)] | None = Field(
        default=None,
        description="The answer you expect, or a list of acceptable answers (any one of them a full answer): "
        "the answer is graded against each and the best grade counts",
    )

    def references(self) -> list[str]:
        return [self.reference_answer] if isinstance(self.reference_answer, str) else self.reference_answer or []


class GradeOut(EvaluationOut):
    matched_id: str | None = Field(default=None, description="The bank entry a free question text matched")
    match_confidence: float | None = Field(
        default=None,
        description="How sure the match of a free question text is, 0-1; below a threshold the answer is "
        "not graded (422, or the item's error) rather than graded against the wrong question",
    )
    score_without_examples: float | None = Field(
        default=None, description="Where you sent graded examples of this question: the score before your standard"
    )
    examples_used: int | None = Field(default=None, description="How many of your graded examples set the standard")


class GradedExampleIn(GradeIn):
    """An answer you graded yourself, given the way items are."""

    # Strict and finite: `true` is not a grade of 1, and an infinite scale is no scale.
    grade: StrictFloat = Field(ge=0, allow_inf_nan=False, description="Your grade, out of grade_max")
    grade_max: StrictFloat = Field(default=5.0, gt=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _within_scale(self) -> GradedExampleIn:
        if self.grade > self.grade_max:
            raise ValueError(f"grade {self.grade:g} is above grade_max {self.grade_max:g}")
        return self


class GradeBatchIn(RequestModel):
    items: list[GradeIn] = Field(min_length=1, max_length=MAX_BATCH)
    examples: list[GradedExampleIn] = Field(
        default_factory=list, max_length=MAX_BATCH,
        description="Answers you graded yourself: each item whose question (the same question_id, or question "
        "text) has examples is graded at your standard, learned from them",
    )


class GradeItemOut(BaseModel):
    """One item's grade, or why it could not be graded; the other items are graded either way."""

    index: int = Field(description="The item's position in the request")
    result: GradeOut | None = None
    error: str | None = None


class ExampleUseOut(BaseModel):
    """Whether one of your graded examples set a standard, and if not, why (no item of its question, a
    non-answer): an example is never left out without a word."""

    index: int = Field(description="The example's position in the request")
    used: bool = Field(description="It set the standard of at least one item (counted in its examples_used)")
    note: str | None = Field(default=None, description="Why it set none, and the likely fix")


class GradeBatchOut(BaseModel):
    results: list[GradeItemOut]
    examples: list[ExampleUseOut] = Field(default_factory=list, description="One per graded example you sent")


GRADE_EXAMPLES = {
    "bank": {
        "summary": "Against a bank entry",
        "value": {
            "question_id": "zero-grad",
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
    "alternatives": {
        "summary": "Several acceptable answers (the best grade counts)",
        "value": {
            "question": "Why does the bulb stay off?",
            "reference_answer": ["The switch is open, so the circuit has a gap.",
                                 "The bulb is not in a closed path with the battery."],
            "answer": "There is no closed loop through the bulb and the battery.",
        },
    },
}


@router.post("/grade", response_model=GradeOut, responses=problem_responses(400, 404, 409, 413, 429),
             dependencies=[Depends(grading_slot)])
def grade(
    user: UserDep,
    repo: RepoDep,
    settings: SettingsDep,
    bank: BankDep,
    store: StoreDep,
    evaluator: EvaluatorDep,
    body: Annotated[GradeIn, Body(openapi_examples=GRADE_EXAMPLES)],
) -> GradeOut:
    """Score one answer 0-5 with a verdict per key point, without starting a session."""
    require_size(body.answer, settings.max_answer_chars, "answer")
    require_size(body.question, settings.max_answer_chars, "question")
    for reference in body.references():
        require_size(reference, settings.max_answer_chars, "reference_answer")
    if body.question_id is not None and body.reference_answer is None and body.question_id not in bank:
        raise NotFoundError(f"no question {echoed(body.question_id)}; list them with GET /v1/questions")
    line = BulkGrader(evaluator=evaluator, bank=bank, store=store).resolve(body.model_dump(exclude_none=True))
    if why := _held_by_interview(line, repo.questions_in_interview(user.id)):
        raise ConflictError(why)
    (evaluation,) = best_evaluations(evaluator, [line])
    if evaluation is None:
        raise HTTPException(422, line.error or "this answer cannot be graded")
    fields: dict[str, Any] = evaluation_fields(evaluation, line)
    return GradeOut.model_validate(
        {
            **fields,
            "question_id": evaluation.question_id or body.question_id,  # a bank entry, or the caller's own label
            "matched_id": line.matched_id,
            "match_confidence": line.match_confidence,
        }
    )


@router.post("/grade/batch", response_model=GradeBatchOut, responses=problem_responses(400, 413, 429),
             dependencies=[Depends(grading_slot)])
def grade_batch(
    user: UserDep,
    repo: RepoDep,
    settings: SettingsDep,
    bank: BankDep,
    store: StoreDep,
    evaluator: EvaluatorDep,
    body: GradeBatchIn,
) -> GradeBatchOut:
    """Score up to 100 answers in one request, in order. An item that cannot be graded (unknown
    question_id, a question that matches no bank entry, a field over its length limit) gets an
    `error` instead of a `result`; the rest are still graded. The answers are embedded together,
    so a batch costs far less than as many single requests. A graded example that cannot be read is a
    400 naming it; one that sets no item's standard is graded around and said so in `examples`."""
    grader = BulkGrader(evaluator=evaluator, bank=bank, store=store, max_answer_chars=settings.max_answer_chars)
    for index, example in enumerate(body.examples):
        if too_long := _too_long(example, settings.max_answer_chars):
            raise UserFacingError(f"examples[{index}]: {too_long}")
    try:
        grader.learn_standards(example.model_dump(exclude_none=True) for example in body.examples)
    except ExampleError as exc:
        raise UserFacingError(f"examples[{exc.index}]: {exc.why}") from None
    lines = [_resolve(grader, item, settings.max_answer_chars) for item in body.items]
    held = repo.questions_in_interview(user.id)
    for line in lines:
        if line.error is None and (why := _held_by_interview(line, held)):
            line.error, line.tasks = why, []
    results = []
    for index, (line, evaluation) in enumerate(zip(lines, best_evaluations(evaluator, lines), strict=True)):
        if evaluation is None:
            line.error = line.error or "this answer cannot be graded"
            grader.not_graded(line, f"items[{index}]")
            results.append(GradeItemOut(index=index, error=line.error))
            continue
        label = evaluation.question_id or body.items[index].question_id
        fields = {**evaluation_fields(evaluation, line), "question_id": label,
                  **grader.standard_fields(line, evaluation)}
        result = GradeOut.model_validate(
            {**fields, "matched_id": line.matched_id, "match_confidence": line.match_confidence}
        )
        results.append(GradeItemOut(index=index, result=result))
    unused = grader.unused_examples()
    examples = [ExampleUseOut(index=i, used=i not in unused, note=unused.get(i)) for i in range(len(body.examples))]
    return GradeBatchOut(results=results, examples=examples)


def _held_by_interview(line: GradeLine, held: set[str]) -> str | None:
    """Why a line may not be graded now: it would be graded against the rubric of a question the user's
    interview is asking (by its id, or its text matched to it), and the reply names every point of it."""
    if line.record.get("reference_answer") is not None:  # the caller's own reference: no rubric of ours shown
        return None
    entry = line.matched_id or line.record.get("question_id")
    if entry is None or str(entry) not in held:
        return None
    return (f"question {entry!r} is being asked in one of your interview sessions, which shows no rubric until "
            "it is over; grade answers to it once that session is completed")


def _resolve(grader: BulkGrader, item: GradeIn, limit: int) -> GradeLine:
    """The grader checks the answer's length; the question texts an API client sends are held to the same limit."""
    if too_long := _too_long(item, limit):  # the record kept: it says which question an example of it is of
        return GradeLine(record=item.model_dump(exclude_none=True), error=too_long)
    return grader.resolve(item.model_dump(exclude_none=True))


def _too_long(item: GradeIn, limit: int) -> str | None:
    for name, value in [("question", item.question or ""), *(("reference_answer", r) for r in item.references())]:
        if len(value) > limit:
            return f"{name} is {len(value)} characters; the limit is {limit}"
    return None
