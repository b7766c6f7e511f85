"""The chat-model seam: any OpenAI-compatible endpoint through langchain-openai, or a scripted fake.

Callers see two things only: a typed reply or an `LLMError` with a short reason. Every failure of
the model (timeout, HTTP status, malformed output, refusal) is one error type, so the offline path
can take over without knowing which SDK raised what.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, SecretStr, ValidationError

from evaluators.chat import LLMError

if TYPE_CHECKING:
    from app.config import Settings

T = TypeVar("T", bound=BaseModel)
StructuredMethod = Literal["json_schema", "function_calling", "json_mode"]


class ChatModel(ABC):
    """One chat model; `name` is the model's name as reported in evaluations and transcripts. It is
    the judge's `evaluators.chat.StructuredChatModel`, plus plain text for question wording."""

    name: str = "chat-model"

    @abstractmethod
    def complete_structured(self, *, system: str, user: str, schema: type[T]) -> T:
        """Reply as an instance of `schema`, or raise LLMError."""

    @abstractmethod
    def complete_text(self, *, system: str, user: str) -> str:
        """Reply as plain text, or raise LLMError."""


class LangChainChatModel(ChatModel):
    """ChatOpenAI at temperature 0 with bounded timeout and retries; all errors become LLMError."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: SecretStr | str = "not-needed",
        timeout_s: float = 20.0,
        max_retries: int = 1,
        method: StructuredMethod = "json_schema",
    ) -> None:
        from langchain_openai import ChatOpenAI  # imported here: the offline path never pays for it

        self.name = model
        self.timeout_s = timeout_s
        # json_schema is ChatOpenAI's own default; function_calling suits servers without it.
        self.method: StructuredMethod = method
        self._llm = ChatOpenAI(
            base_url=base_url,
            api_key=api_key if isinstance(api_key, SecretStr) else SecretStr(api_key),
            model=model,
            temperature=0,
            timeout=timeout_s,
            max_retries=max_retries,
        )

    def complete_structured(self, *, system: str, user: str, schema: type[T]) -> T:
        # include_raw keeps the raw message, so a refusal or bad tool-call arguments get a precise
        # reason under either method instead of a bare "no result".
        runnable = self._llm.with_structured_output(schema, method=self.method, include_raw=True)
        try:
            out = runnable.invoke(_messages(system, user))
        except Exception as exc:  # the SDK stack raises many types; callers need one
            raise LLMError(describe_failure(exc, timeout_s=self.timeout_s)) from exc
        raw, parsed, error = out["raw"], out["parsed"], out["parsing_error"]
        refused = raw.additional_kwargs.get("refusal")
        if refused:
            raise LLMError(f"refusal: {_clip(str(refused))}")
        if error is not None:
            raise LLMError(describe_failure(error))
        if not isinstance(parsed, schema):
            bad_args = bool(getattr(raw, "invalid_tool_calls", None))
            raise LLMError(
                "malformed output: " + ("invalid JSON arguments" if bad_args else "no structured reply")
            )
        return parsed

    def complete_text(self, *, system: str, user: str) -> str:
        try:
            message = self._llm.invoke(_messages(system, user))
        except Exception as exc:
            raise LLMError(describe_failure(exc, timeout_s=self.timeout_s)) from exc
        refused = message.additional_kwargs.get("refusal")
        if refused:
            raise LLMError(f"refusal: {_clip(str(refused))}")
        text = message.text.strip()
        if not text:
            raise LLMError("malformed output: empty reply")
        return text


def _messages(system: str, user: str) -> list[Any]:
    from langchain_core.messages import HumanMessage, SystemMessage

    return [SystemMessage(content=system), HumanMessage(content=user)]


def describe_failure(exc: BaseException, *, timeout_s: float | None = None) -> str:
    """A short reason for a failed call: timeout, HTTP status, connection, refusal or malformed output."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return f"timeout after {timeout_s:g} s" if timeout_s else "timeout"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}"
    if isinstance(exc, openai.APIConnectionError):
        return "connection failed"
    if isinstance(exc, openai.LengthFinishReasonError):
        return "malformed output: reply cut off at the length limit"
    if isinstance(exc, openai.ContentFilterFinishReasonError):
        return "refusal: content filter"
    if type(exc).__name__ == "OpenAIRefusalError":
        return f"refusal: {_clip(str(exc))}"
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"malformed output: {first['msg']}" + (f" at {where}" if where else "")
    if isinstance(exc, json.JSONDecodeError | ValueError | KeyError | TypeError):
        return f"malformed output: {_clip(str(exc))}"
    return f"unexpected error: {type(exc).__name__}"


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
    calls: list[ScriptedCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._queue = list(self.replies)

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

    def complete_text(self, *, system: str, user: str) -> str:
        reply = self._next(system=system, user=user, schema=None)
        return (
            reply
            if isinstance(reply, str)
            else json.dumps(reply if isinstance(reply, dict) else reply.model_dump())
        )


def chat_model_from_settings(settings: Settings) -> ChatModel | None:
    """The configured chat model, or None for the offline interviewer (the default)."""
    if not settings.llm_enabled:
        return None
    return LangChainChatModel(
        base_url=settings.llm_base_url,
        model=settings.llm_model,
        api_key=settings.llm_api_key,
        timeout_s=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
    )
