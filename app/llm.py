"""The chat-model seam: any OpenAI-compatible endpoint through langchain-openai, or a scripted fake.

Callers see two things only: a typed reply or an `LLMError` with a short reason. Every failure of
the model (timeout, HTTP status, malformed output, refusal) is one error type, so the offline path
can take over without knowing which SDK raised what.
"""

from __future__ import annotations

import json
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, SecretStr, ValidationError

from app.llm_breaker import Breaker, breaker_for
from app.llm_failures import (
    REASONING,
    NoReply,
    Unanswered,
    UnsupportedFormat,
    call_failure,
    clip,
    describe_failure,
    finish_failure,
)
from app.llm_redaction import redact, redact_strings, secrets_sent, without_password
from app.llm_server import ServerProbe
from app.llm_wire import client_with_deadline, given_up_closes, streamed_chat_openai
from evaluators.chat import LLMError
from evaluators.judge_batch import Stop, unless_stopped

if TYPE_CHECKING:
    from app.config import Settings

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")
StructuredMethod = Literal["json_schema", "json_mode", "function_calling"]
STRUCTURED_METHODS: tuple[StructuredMethod, ...] = ("json_schema", "json_mode", "function_calling")
DEFAULT_REPLY_TOKENS = 1024  # kept free for the reply when no max_tokens is set


class ChatModel(ABC):
    """One chat model; `name` is the model's name as reported in evaluations and transcripts. It is
    the judge's `evaluators.chat.StructuredChatModel`, plus plain text for question wording."""

    name: str = "chat-model"

    @property
    def prompt_budget(self) -> int | None:
        """Tokens a prompt may take in the model's window; None when unknown (not checked)."""
        return None

    @abstractmethod
    def complete_structured(self, *, system: str, user: str, schema: type[T]) -> T:
        """Reply as an instance of `schema`, or raise LLMError."""

    @abstractmethod
    def complete_text(self, *, system: str, user: str, max_chars: int | None = None) -> str:
        """Reply as plain text, or raise LLMError; `max_chars`: a longer reply is of no use, so none is waited for."""

    def stop(self) -> None:
        """The process is stopping: a call under way, and every later one, raises EvaluatorStopped at once (a model
        whose calls end in moments has nothing to give up)."""
        return None


class LangChainChatModel(ChatModel):
    """ChatOpenAI at temperature 0 with bounded timeout, retries and reply length; all errors become
    LLMError. Structured output takes the first way the server accepts (`method="auto"`): the JSON
    schema as `response_format`, else JSON mode with the schema (llama-cpp-python constrains decoding
    to it), else a forced tool call; found on the first call and kept for every later one."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: SecretStr | str = "not-needed",
        timeout_s: float = 20.0,
        max_retries: int = 1,
        method: StructuredMethod | Literal["auto"] = "auto",
        max_tokens: int | None = None,
        context_tokens: int | None = None,
        breaker: Breaker | None = None,
    ) -> None:
        key = api_key if isinstance(api_key, SecretStr) else SecretStr(api_key)
        self.name = model
        self.base_url = without_password(base_url)  # shown in reasons
        # A server may echo what it was sent (the key, in an error message); what reaches a note, the database
        # or a report never holds them.
        self._secrets = secrets_sent(base_url, key.get_secret_value())
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        self._allowed: list[StructuredMethod] = list(STRUCTURED_METHODS) if method == "auto" else [method]
        self.method: StructuredMethod | None = None if method == "auto" else method  # once known
        self._refused: dict[StructuredMethod, str] = {}
        self._lock = threading.Lock()
        self._context_tokens = context_tokens
        self._breaker = breaker or Breaker()
        self._stop = Stop()
        self._server = ServerProbe(
            base_url=base_url, api_key=key.get_secret_value(), model=model, timeout_s=timeout_s
        )
        self._llm = streamed_chat_openai(
            base_url=base_url, api_key=key, model=model, temperature=0, timeout=timeout_s,
            max_retries=max_retries, http_client=client_with_deadline(timeout_s),
            # `max_tokens` in the body, not ChatOpenAI's own field: that is sent as max_completion_tokens,
            # which llama-cpp-python ignores; every server here (and OpenAI's chat models) takes max_tokens.
            extra_body={"max_tokens": max_tokens} if max_tokens else None,
        )

    @property
    def prompt_budget(self) -> int | None:
        """Tokens left for the prompt in the model's window after the reply's; None when unknown."""
        if not self._context_tokens and not self._breaker.admits():
            return None  # no call will be made: asking the server for its window would only wait on it
        window = self._context_tokens or self._waited(self._server.facts).context_tokens
        return window - (self.max_tokens or DEFAULT_REPLY_TOKENS) if window else None

    def complete_structured(self, *, system: str, user: str, schema: type[T]) -> T:
        with self._redacted(), self._breaker.call(unanswered=Unanswered):
            parsed = self._waited(lambda: self._complete(system=system, user=user, schema=schema))
        # Every string of the reply: the judge's feedback is shown and stored, as a wording is.
        return schema.model_validate(redact_strings(parsed.model_dump(), self._secrets))

    @contextmanager
    def _redacted(self) -> Iterator[None]:
        try:
            yield
        except LLMError as exc:
            raise LLMError(redact(exc.reason, self._secrets)) from None

    def _complete(self, *, system: str, user: str, schema: type[T]) -> T:
        self._check_model()
        for method in self._candidates():
            try:
                parsed = self._structured(method, system=system, user=user, schema=schema)
            except UnsupportedFormat as exc:
                with self._lock:
                    self._refused[method] = exc.reason
                continue
            except NoReply:  # down, timed out, 5xx: says nothing about the method, so nothing is kept
                raise
            except LLMError:
                self._found(method)  # the server took the request; the reply itself was the problem
                raise
            self._found(method)
            return parsed
        refused = "; ".join(f"{m}: {r}" for m, r in self._refused.items())
        raise LLMError(f"structured output not supported by the server ({clip(refused, 100)})")

    def _candidates(self) -> list[StructuredMethod]:
        with self._lock:
            return [self.method] if self.method else [m for m in self._allowed if m not in self._refused]

    def _found(self, method: StructuredMethod) -> None:
        with self._lock:
            self.method = self.method or method

    def _structured(self, method: StructuredMethod, *, system: str, user: str, schema: type[T]) -> T:
        if method != "function_calling":
            return self._json_reply(method, system=system, user=user, schema=schema)
        # The call, then its parsing, both on this thread: the raw message gives a refusal or bad tool-call arguments
        # a precise reason instead of a bare "no result". LangChain's `include_raw` would keep it too, but makes the
        # call in a worker thread that Ctrl-C waits for: the terminal hung until the reply came or the timeout passed
        # (up to INTERVIEWER_LLM_TIMEOUT_S, 180 s with `make run-llm`).
        from langchain_core.runnables import RunnableSequence

        chain = self._llm.with_structured_output(schema, method=method)
        if not isinstance(chain, RunnableSequence):  # langchain-openai 1.x: the bound model | its parsers
            raise LLMError(f"unexpected error: structured output is a {type(chain).__name__}")
        raw = self._invoke(chain.first, system, user)
        self._check_reply(raw)
        try:
            parsed = raw
            for step in chain.steps[1:]:  # the refusal check and the schema's parser
                parsed = step.invoke(parsed)
        except Exception as exc:  # what the parser raises for bad JSON or arguments off the schema
            raise LLMError(describe_failure(exc)) from None
        if not isinstance(parsed, schema):
            bad_args = bool(getattr(raw, "invalid_tool_calls", None))
            raise LLMError(
                "malformed output: " + ("invalid JSON arguments" if bad_args else "no structured reply")
            )
        return parsed

    def _json_reply(self, method: StructuredMethod, *, system: str, user: str, schema: type[T]) -> T:
        """The reply's text read as JSON: asked for by the schema as `response_format` (json_schema), or in JSON
        mode with the schema beside it (llama-cpp-python constrains decoding to it) and written into the prompt."""
        if method == "json_schema":
            response_format = _json_schema_format(schema)
        else:
            shape = schema.model_json_schema()
            response_format = {"type": "json_object", "schema": shape}
            system = f"{system}\nReply with one JSON object that follows this JSON schema:\n{json.dumps(shape)}"
        message = self._invoke(self._llm.bind(response_format=response_format), system, user)
        self._check_reply(message)
        try:
            return schema.model_validate_json(_unfenced(message.text))
        except ValidationError as exc:
            if _REASONING.match(message.text):  # a reasoning model's block: say so, not "expected value at column 1"
                raise LLMError(REASONING) from exc
            raise LLMError(describe_failure(exc)) from exc

    def _invoke(self, runnable: Any, system: str, user: str) -> Any:
        try:
            return runnable.invoke(_messages(system, user))
        except Exception as exc:  # the SDK stack raises many types; callers need one
            raise call_failure(exc, timeout_s=self.timeout_s) from exc

    def _check_reply(self, message: Any, *, limit: int | None = None) -> None:
        refused = message.additional_kwargs.get("refusal")
        if refused:
            raise LLMError(f"refusal: {clip(str(refused))}")
        if why := finish_failure(message.response_metadata.get("finish_reason"), limit=limit or self.max_tokens):
            raise LLMError(why)

    def _check_model(self) -> None:
        facts = self._server.facts()
        if not facts.serves(self.name):
            served = ", ".join(facts.models or ())
            raise LLMError(f"model {self.name!r} is not served at {self.base_url} (it serves: {clip(served, 60)})")

    def complete_text(self, *, system: str, user: str, max_chars: int | None = None) -> str:
        # A reply of max_chars characters takes at most about half as many tokens (English ~4 characters a token).
        # On a CPU server every token waited for costs: SmolLM2 ran wordings of a 148-character line to the 800-token
        # limit, which a wording over 3 times the line's length then failed anyway.
        limit = min(self.max_tokens or max_chars, max_chars // 2 + 16) if max_chars else None
        llm = self._llm.bind(extra_body={"max_tokens": limit}) if limit else self._llm
        with self._redacted(), self._breaker.call(unanswered=Unanswered):
            message = self._waited(lambda: self._checked_text(llm, system, user, limit))
        text = message.text.strip()
        if not text:
            raise LLMError("malformed output: empty reply")
        return redact(text, self._secrets)  # a wording is shown and stored: it carries no credential either

    def _checked_text(self, llm: Any, system: str, user: str, limit: int | None) -> Any:
        self._check_model()
        message = self._invoke(llm, system, user)
        self._check_reply(message, limit=limit)
        return message

    def _waited(self, work: Callable[[], R]) -> R:
        """`work` on a thread of its own, waited for until it ends, the process stops, or Ctrl-C; then its reply, if one
        is streaming, is broken off (see llm_wire.given_up_closes)."""
        given_up = threading.Event()
        try:
            return unless_stopped(lambda: given_up_closes(work, given_up), stop=self._stop)
        except BaseException:
            given_up.set()  # nothing if the call itself failed: it has ended
            raise

    def stop(self) -> None:
        # Each call waits on its own daemon thread: a stopping `interviewer serve` (uvicorn waits for every request
        # under way) no longer waits for the model's reply, and a half-scored answer is never stored.
        self._stop.set()


def _json_schema_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The `response_format` asking for `schema` (strict, as LangChain's own json_schema method asks), as a dict.
    Given the pydantic class instead, the SDK parses every streamed event into it, and LangChain's dump of those
    events raised a pydantic UserWarning ("...field_name='parsed'") per reply, on the terminal mid-interview."""
    from langchain_core.utils.function_calling import convert_to_openai_function

    function = convert_to_openai_function(schema.model_json_schema(), strict=True)
    function["schema"] = function.pop("parameters")
    return {"type": "json_schema", "json_schema": function}


def _messages(system: str, user: str) -> list[Any]:
    from langchain_core.messages import HumanMessage, SystemMessage

    return [SystemMessage(content=system), HumanMessage(content=user)]


_FENCED = re.compile(r"^\s*```[\w-]*\s*\n(.*?)\n?```\s*$", re.S)


# A reasoning model's visible thinking ahead of its reply (the phrasing refuses it too: phrasing._unusable).
_REASONING = re.compile(r"\s*<\s*think\b", re.I)


def _unfenced(text: str) -> str:
    """JSON a model wrapped in a Markdown fence (```json ... ```), as small models often do."""
    match = _FENCED.match(text)
    return match.group(1) if match else text


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
        method=settings.llm_structured_output,
        max_tokens=settings.llm_max_tokens,
        context_tokens=settings.llm_context_tokens or None,
        breaker=breaker_for(settings.llm_base_url),
    )
