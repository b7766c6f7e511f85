"""Why a chat-model call failed, in a few words, and which kind of failure it was.

The kind decides what the client does next: a server that refuses an output format is asked the next way,
one that gave no reply leaves the method untried, and one that sent nothing back in time trips the breaker.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from evaluators.chat import LLMError


class UnsupportedFormat(LLMError):
    """The server refused the request's output format (not the reply): try the next method."""


class NoReply(LLMError):
    """No reply came (no server, a timeout, an HTTP error): the method it was asked with stays untried."""


class Unanswered(NoReply):
    """Nothing at all came back in time (a timeout, no connection): the breaker counts these."""


def _unanswered(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, openai.APIConnectionError)  # APITimeoutError is one


def _refuses_format(exc: BaseException) -> bool:
    """An HTTP error about response_format or tools: llama-cpp-python answers json_schema with a 500,
    others with 400/422/501."""
    import openai

    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 415, 422, 500, 501):
        return False
    text = str(exc).lower()
    return any(word in text for word in ("response_format", "json_schema", "tool_choice", "tools"))


class NotAnOpenAIApi(ValueError):
    """A web page (HTML) came back for a chat call: the base URL points at a site or a proxy, not at the API."""


# What a failure note says to fix, by the settings' own environment variables (app/config.py).
WRONG_KEY = "the model server refused the API key (check INTERVIEWER_LLM_API_KEY)"
NOT_FOUND = ("not found: check INTERVIEWER_LLM_BASE_URL (an OpenAI-compatible API, usually ending in /v1) and "
             "INTERVIEWER_LLM_MODEL")
NOT_AN_API = "the base URL does not look like an OpenAI-compatible API (check INTERVIEWER_LLM_BASE_URL)"
REASONING = ("malformed output: the reply began with the model's reasoning block (<think>...</think>), which is not "
             "allowed before the JSON; use a model or server setting that does not show its reasoning")

CUT_OFF = "malformed output: reply cut off at the length limit"
# The server's content filter stopped the reply: whatever came before it (half a JSON object, say) was the model's
# and unfinished, and read as a reply it was called malformed. It is the server declining, as a refusal is.
FILTERED = "refusal: content filter"


def finish_failure(finish_reason: object, *, limit: int | None) -> str | None:
    """Why a reply that stopped for `finish_reason` cannot be used, or None when it ended as replies do."""
    if finish_reason == "length":
        return CUT_OFF + (f" ({limit} tokens)" if limit else "")
    if finish_reason == "content_filter":
        return FILTERED
    return None


def call_failure(exc: BaseException, *, timeout_s: float | None) -> LLMError:
    """The LLMError for an exception the SDK raised on a call, of the kind that says what to do next."""
    if _refuses_format(exc):
        return UnsupportedFormat(describe_failure(exc))
    if _unanswered(exc):
        return Unanswered(describe_failure(exc, timeout_s=timeout_s))
    if _stopped_reply(exc):  # a reply came, in the format asked for: what it holds is the failure
        return LLMError(describe_failure(exc))
    return NoReply(describe_failure(exc, timeout_s=timeout_s))


def _stopped_reply(exc: BaseException) -> bool:
    """The SDK's error for a reply cut off or filtered, which it raises for a request with a response_format (taken
    for no reply, it left the format the server had just taken unknown, as if untried)."""
    import openai

    return isinstance(exc, openai.LengthFinishReasonError | openai.ContentFilterFinishReasonError)


def describe_failure(exc: BaseException, *, timeout_s: float | None = None) -> str:
    """A short reason for a failed call: timeout, HTTP status, connection, refusal or malformed output."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return f"timeout after {timeout_s:g} s" if timeout_s else "timeout"
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code in (401, 403):
            return f"HTTP {exc.status_code}: {WRONG_KEY}"
        # a client error's message says what to fix (unknown model, prompt longer than the window)
        detail = _server_message(exc) if exc.status_code in (400, 404, 422) else ""
        if exc.status_code == 404 and (not detail or detail.startswith("Error code: 404") or "<" in detail):
            detail = NOT_FOUND  # the SDK's own "Error code: 404", or a page: nothing from an API to quote
        return f"HTTP {exc.status_code}" + (f": {clip(detail, 160 if detail == NOT_FOUND else 80)}" if detail else "")
    if isinstance(exc, openai.APIConnectionError):
        return "connection failed"
    if isinstance(exc, openai.LengthFinishReasonError):
        return CUT_OFF
    if isinstance(exc, openai.ContentFilterFinishReasonError):
        return FILTERED
    if type(exc).__name__ == "OpenAIRefusalError":
        return f"refusal: {clip(str(exc))}"
    if isinstance(exc, NotAnOpenAIApi):
        return NOT_AN_API
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"malformed output: {first['msg']}" + (f" at {where}" if where else "")
    if isinstance(exc, json.JSONDecodeError | ValueError | KeyError | TypeError):
        return f"malformed output: {clip(str(exc))}"
    return f"unexpected error: {type(exc).__name__}"


def _server_message(exc: Any) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    message = body.get("message") or (body.get("error") or {}).get("message") if body else None
    return str(message or exc.message or "")


def clip(text: str, limit: int = 80) -> str:
    """The text on one line, cut to `limit` characters: a reason stays short enough to read in a note."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
