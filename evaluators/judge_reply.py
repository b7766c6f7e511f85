"""What the LLM judge asks the model to return: the reply's shape, and the JSON schema sent for one task."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, JsonValue, create_model
from pydantic.json_schema import JsonDict

from evaluators.base import GradingTask


class JudgedPoint(BaseModel):
    point_id: str = Field(description="A rubric point id, exactly as listed.")
    verdict: Literal["covered", "partial", "missed"]
    evidence_quote: str | None = Field(
        description="An exact, contiguous span copied from the candidate's answer; null when missed."
    )


class JudgedMisconception(BaseModel):
    claim: str = Field(description="The misconception's claim, copied from the list of known misconceptions.")
    quote: str = Field(description="The candidate's words that state it, copied exactly from the answer.")


class JudgeReply(BaseModel):
    """What the model must return; field order puts the evidence before the score."""

    points: list[JudgedPoint]
    misconceptions: list[JudgedMisconception]
    feedback: str
    score: float = Field(ge=0, le=5)


# Bounds sent in the schema only (validation stays as above): a server that decodes to the schema
# (llama.cpp, vLLM, Ollama) then cannot invent a point id or loop in a string or a list until
# max_tokens, as SmolLM2-135M did, repeating one made-up misconception until it was cut off.
QUOTE_CHARS, FEEDBACK_CHARS = 300, 600


def reply_schema(task: GradingTask) -> type[JudgeReply]:
    """JudgeReply whose JSON schema lists this task's point ids and misconception claims and bounds
    every list and string; it validates exactly as JudgeReply does."""
    ids: list[JsonValue] = [p.id for p in task.rubric]
    claims: list[JsonValue] = [m.claim for m in task.misconceptions]
    text: JsonDict = {"maxLength": QUOTE_CHARS}
    point = create_model(
        "JudgedPoint", __base__=JudgedPoint,
        point_id=(str, Field(description="A rubric point id.", json_schema_extra={"enum": ids})),
        evidence_quote=(str | None, Field(description=_QUOTE_DESCRIPTION, json_schema_extra=text)),
    )
    # With no claims to name, the list is bounded to none and its items keep a plain string claim: an empty enum is
    # a rule with nothing on its right in llama.cpp's grammar, which failed to parse and crashed its server
    # (segmentation fault) on the first ad-hoc question, leaving LLM mode dead until restarted by hand.
    wrong = JudgedMisconception if not claims else create_model(
        "JudgedMisconception", __base__=JudgedMisconception,
        claim=(str, Field(description="A known misconception's claim.", json_schema_extra={"enum": claims, **text})),
        quote=(str, Field(description="The candidate's words that state it.", json_schema_extra=text)),
    )
    return create_model(
        "JudgeReply", __base__=JudgeReply,
        points=(list[point], Field(json_schema_extra={"minItems": len(ids), "maxItems": len(ids)})),  # type: ignore[valid-type]
        misconceptions=(list[wrong], Field(json_schema_extra={"maxItems": len(claims)})),  # type: ignore[valid-type]
        feedback=(str, Field(json_schema_extra={"maxLength": FEEDBACK_CHARS})),
    )


_QUOTE_DESCRIPTION = "An exact, contiguous span copied from the candidate's answer; null when missed."
