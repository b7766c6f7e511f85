"""What the LLM judge asks the model to return: the reply's shape, and the JSON schema sent for one task."""

from __future__ import annotations

import math
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


# The scale the model is asked to score on. The bound is sent in the schema, but not checked on the reply: the score
# is recomputed from the verified verdicts, and a number off the scale (7, as if out of 10) cost the reply's sound
# verdicts too, all scored offline. Grammars do not hold a server to it either: llama.cpp bounds integers only, and
# llama-cpp-python's converter no number at all. OpenAI's strict mode takes minimum and maximum for a number; a server
# that refuses a keyword of the schema is asked the next way (app/llm.py).
SCORE_SCALE = (0, 5)


class JudgeReply(BaseModel):
    """What the model must return; field order puts the evidence before the score."""

    points: list[JudgedPoint]
    misconceptions: list[JudgedMisconception]
    feedback: str
    score: float = Field(json_schema_extra={"minimum": SCORE_SCALE[0], "maximum": SCORE_SCALE[1]})

    @property
    def own_score(self) -> float | None:
        """The model's own score when it is one on the scale asked for; None for a number off it (or NaN)."""
        low, high = SCORE_SCALE
        return self.score if math.isfinite(self.score) and low <= self.score <= high else None


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
