"""The chat-model seam's deterministic fake: each call takes the next scripted reply."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from app.llm import ChatModel, T
from app.llm_failures import describe_failure
from evaluators.chat import LLMError


@dataclass
class ScriptedCall:
    system: str
    user: str
    schema: type[BaseModel] | None


@dataclass
class ScriptedChatModel(ChatModel):
    """A deterministic fake: each call takes the next reply (model, dict, JSON text, or an exception)."""

    replies: Sequence[BaseModel | dict[str, Any] | str | Exception]
    name: str = "scripted"
    budget: int | None = None  # the prompt budget to report, as a model with a small window would
    calls: list[ScriptedCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._queue = list(self.replies)

    @property
    def prompt_budget(self) -> int | None:
        return self.budget

    def _next(self, *, system: str, user: str, schema: type[BaseModel] | None) -> Any:
        self.calls.append(ScriptedCall(system=system, user=user, schema=schema))
        if not self._queue:
            raise LLMError("no scripted reply left")
        reply = self._queue.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def complete_structured(self, *, system: str, user: str, schema: type[T]) -> T:
        reply = self._next(system=system, user=user, schema=schema)
        try:
            if isinstance(reply, schema):
                return reply
            if isinstance(reply, str):
                return schema.model_validate_json(reply)
            return schema.model_validate(reply if isinstance(reply, dict) else reply.model_dump())
        except ValidationError as exc:
            raise LLMError(describe_failure(exc)) from exc

    def complete_text(self, *, system: str, user: str, max_chars: int | None = None) -> str:
        reply = self._next(system=system, user=user, schema=None)
        return (
            reply
            if isinstance(reply, str)
            else json.dumps(reply if isinstance(reply, dict) else reply.model_dump())
        )
