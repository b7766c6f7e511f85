"""Response bodies shared by the session routes; what the OpenAPI document promises clients."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, field_validator

from app.errors import echoed
from app.interview.models import Prompt, SessionConfig
from app.interview.penalties import HINT_COST
from app.store.records import DraftRecord, SessionRecord
from app.text_input import not_text
from evaluators.base import DetectedMisconception, PointVerdict
from evaluators.run_points import failure_said

PROMPT_EXAMPLE = {
    "turn": 0,
    "kind": "question",
    "question_id": "zero-grad",
    "text": "Let's start. Why do you call optimizer.zero_grad() in a training loop?",
    "topic": "training-loop",
    "difficulty": 1,
    "number": 1,
    "total": 5,
    "code_contract": None,
    "starter_code": None,
    "time_limit_s": None,
    "asked_at": "2026-11-28T09:30:00Z",
    "notes": [],
}


class RequestModel(BaseModel):
    """A request body: unknown fields are refused, and so is a string that is not text (a lone UTF-16
    surrogate, `app/text_input.py`): a 422 naming the field, before it reaches the scorer, the sandbox or
    the database."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _whole_text(cls, value: Any) -> Any:
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and (why := not_text(text)):
                raise ValueError(why)
        return value


def _exact_level(value: Any) -> Any:
    """A level as the schema writes it: pydantic's Literal took the JSON number 1.0 for the level 1 (and a check of
    its own was needed to refuse `true`), so a client's float arithmetic went unnoticed."""
    if value == "adaptive" or type(value) is int:
        return value  # the Literal checks the range (4 is refused there)
    kind = {bool: "a boolean", float: "a decimal number", str: "a string", type(None): "no level"}.get(
        type(value), "not a number")
    sent = json.dumps(value)  # as the client wrote it: true, not Python's True
    sent = sent if len(sent) <= 20 else f"{sent[:20]}... ({len(sent)} characters)"
    raise ValueError(f'should be the integer 1, 2 or 3, or "adaptive"; {sent} is {kind}')


# A requested level (POST /v1/sessions): the integer 1, 2 or 3, or "adaptive". Documented as an integer or that
# string, where the Literal's schema was an enum of no type.
Level = Annotated[
    Literal[1, 2, 3, "adaptive"],
    BeforeValidator(_exact_level),
    WithJsonSchema({"anyOf": [{"type": "integer", "enum": [1, 2, 3]}, {"type": "string", "enum": ["adaptive"]}]}),
]

_DIGITS = re.compile(r"-?[0-9]+")


def _digits_only(value: Any) -> Any:
    """A query string's number as digits: pydantic reads "1.0" as 1 and "1_0" as 10 (Python's own literal rules),
    so `?per_page=1_0` answered ten items as if asked for them."""
    if isinstance(value, str) and not _DIGITS.fullmatch(value):
        raise ValueError(f"should be a whole number written in digits, as 20; {echoed(value, 20)} is not one")
    return value


# For every integer query parameter (limits, page sizes, levels, turns): the schema stays `type: integer`.
QueryInt = BeforeValidator(_digits_only)


class EvaluationOut(BaseModel):
    """How one answer scored: 0-5 with a verdict per rubric point and the reasons."""

    model_config = ConfigDict(extra="allow")

    question_id: str | None = None
    score: float = Field(ge=0, le=5, examples=[3.5])
    points: list[PointVerdict] = Field(default_factory=list)
    misconceptions: list[DetectedMisconception] = Field(default_factory=list)
    feedback: str = ""
    model_answer: str | None = None
    evaluator: str = Field(examples=["rubric"])
    gate: str | None = None
    notes: list[str] = Field(default_factory=list)
    penalties: list[str] | None = Field(default=None, description="What this turn was charged (hints, lateness, code "
                                        "fixed on a follow-up)")
    question_penalties: list[str] | None = Field(default=None, description="What the question's score has been "
                                                 "charged in all, this turn included")
    code_score: float | None = Field(default=None, description="A code answer's score from its run: the share of the "
                                      "checked points' weight the run showed, with the points the question asks for "
                                      "in words beside them")
    rubric_score: float | None = None


class CheckOut(BaseModel):
    name: str
    description: str
    weight: float
    passed: bool
    message: str | None = None
    # How a failed check failed: the code returned a wrong value, raised, or was never run by it.
    failure: Literal["wrong", "raised", "not_run"] | None = None
    said: str | None = Field(default=None, description="A failed check's message on one line, as the CLI says it "
                             "beside the description (torch's comparison report cut to what differs); `message` keeps "
                             "it whole")


class CodeResultOut(BaseModel):
    """The sandboxed runner's verdict: one result per hidden check."""

    question_id: str
    status: Literal["passed", "failed", "error", "timed_out", "resource_limit"]
    passed_checks: int | None = None
    total_checks: int | None = None
    score: float = Field(ge=0, le=1)
    checks: list[CheckOut]
    stdout: str = ""
    duration_ms: float = 0.0


class TurnOut(BaseModel):
    """What follows an action: feedback (practice mode only) and the next prompt, if any."""

    status: Literal["active", "completed"]
    evaluation: EvaluationOut | None = None
    code_result: CodeResultOut | None = None
    prompt: Prompt | None = None
    message: str | None = None
    notes: list[str] = Field(default_factory=list, description="Once the session is over, what its last step "
                             "noted (\"Ended early ...\"), which no next prompt is there to carry; a next prompt "
                             "carries its own, in its `notes`")


class SessionCreated(BaseModel):
    id: str = Field(examples=["3f6c0d8e2b5a4c19a7e4d2b1c0f9e8d7"])
    status: Literal["active", "completed"]
    config: SessionConfig
    prompt: Prompt | None = Field(examples=[PROMPT_EXAMPLE])
    notes: list[str] = Field(default_factory=list, description="What the session has told the candidate so far, "
                             "in order (fewer questions than asked for, a level that could not be kept, review); "
                             "each new one also comes with the prompt it arose on, in its `notes`")


class TranscriptTurn(BaseModel):
    position: int
    kind: Literal["question", "follow_up"]
    question_id: str
    topic: str
    difficulty: int
    prompt: str
    action: str | None = None
    answer_text: str | None = None
    answer_code: str | None = None
    hints_used: int = 0
    hints: list[str] = Field(default_factory=list, description="The hints shown on this turn, in order (none for "
                             "turns stored before hint texts were kept)")
    asked_at: datetime
    answered_at: datetime | None = None
    evaluation: EvaluationOut | None = None
    code_result: CodeResultOut | None = None
    notes: list[str] = Field(default_factory=list, description="What the candidate was told as this prompt was "
                             "asked (its prompt's `notes`)")


class DraftOut(BaseModel):
    """An answer written for the open prompt and not sent yet, as last saved."""

    turn: int = Field(description="The `turn` of the prompt it was written for")
    text: str | None = None
    code: str | None = None
    saved_at: datetime


class SessionDetail(SessionCreated):
    created_at: datetime
    updated_at: datetime
    transcript: list[TranscriptTurn]
    draft: DraftOut | None = Field(default=None, description="The unsent draft for the current prompt (PUT "
                                   "/v1/sessions/{id}/draft), gone once that prompt is answered")
    # Said with each hint as it is given (the hint's reply); a screen that shows the transcript's hints again after a
    # reload had no figure to say, only that they "cost points".
    hint_cost: float = Field(default=HINT_COST, description="Score points (of 5) each hint costs on the question it "
                             "is taken on: what each of the transcript's `hints` was charged")


def draft_out(draft: DraftRecord) -> DraftOut:
    return DraftOut(turn=draft.turn, text=draft.text, code=draft.code, saved_at=draft.updated_at)


class SessionSummary(BaseModel):
    id: str
    status: Literal["active", "completed"]
    mode: str
    num_questions: int
    answered: int = Field(description="Main questions done with (answered, skipped or not known); the one being "
                          "asked counts once its first answer is in")
    created_at: datetime
    updated_at: datetime


def session_summary(session: SessionRecord) -> SessionSummary:
    return SessionSummary(
        id=session.id,
        status=session.status,  # type: ignore[arg-type]  # the store admits only the two statuses
        mode=session.config.get("mode", "practice"),
        num_questions=session.config.get("num_questions", 0),
        answered=len(session.state.get("question_scores", {})),
        created_at=session.created_at,
        updated_at=session.updated_at,
    )


def evaluation_out(evaluation: dict[str, Any] | None) -> EvaluationOut | None:
    """The stored evaluation without its nested copy of the raw rubric result."""
    if evaluation is None:
        return None
    return EvaluationOut.model_validate({k: v for k, v in evaluation.items() if k != "rubric"})


def code_result_out(result: dict[str, Any] | None) -> CodeResultOut | None:
    if result is None:
        return None
    # Beside the check's description, as the CLI prints it: the description is not said again in `said`.
    checks = [{**c, "said": None if c.get("passed") else failure_said({**c, "description": ""}) or None}
              for c in result.get("checks") or []]
    return CodeResultOut.model_validate({**{k: v for k, v in result.items() if k != "file"}, "checks": checks})
