"""How a reply comes over the wire: streamed, and whole within the timeout.

Every call streams, for one reason: a local server stops generating when a streamed request's
connection closes (a timeout, Ctrl-C), and not otherwise. llama-cpp-python (0.3.36) checks for a closed
connection after each streamed chunk, but works an unstreamed reply out whole while the next request
waits: a wording given up at 3 s held the server 19 to 32 s more, 1.1 to 1.3 s streamed; the judge's call
given up at 5 s, 70 to 134 s, 35 to 85 s streamed (SmolLM2-135M, 1 thread, a loaded 2-core machine). What
streaming cannot save is the reading of the prompt (1,443 tokens for the judge), which no server breaks
off. The reply is still gathered whole before it is parsed, so the cap on tokens, JSON mode and the
checks on the full reply work as before.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from typing import Any, TypeVar, cast

from app.llm_failures import NotAnOpenAIApi

R = TypeVar("R")
# Set while its caller still waits for the reply: a call made on a thread of its own outlives a caller that gave up.
_GIVEN_UP: ContextVar[threading.Event | None] = ContextVar("llm_given_up", default=None)


def given_up_closes(work: Callable[[], R], given_up: threading.Event) -> R:
    """`work` (run in the call's own context, on its thread), whose reply stops streaming once `given_up` is set: the
    connection closes at the next chunk, and a local server stops generating, as it did when Ctrl-C broke off the
    read on the caller's thread (a stopped server, or Ctrl-C, no longer waits there for it)."""
    _GIVEN_UP.set(given_up)
    return work()


def streamed_chat_openai(**options: Any) -> Any:
    """ChatOpenAI streaming every call (its `invoke` gathers the chunks into one reply), keeping a refusal."""
    return _streamed_chat_openai()(streaming=True, **options)


@cache
def _streamed_chat_openai() -> type:
    from langchain_openai import ChatOpenAI  # imported here: the offline path never pays for it

    class StreamedChatOpenAI(ChatOpenAI):
        def _convert_chunk_to_generation_chunk(self, chunk: dict, *args: Any, **kwargs: Any) -> Any:
            # langchain-openai (1.7.4, the latest) drops a streamed `refusal` unless the request had a response_format
            # (so a forced tool call or plain text lost it; unstreamed, they kept it), and offers no public way to
            # see it: langchain-ai/langchain#39747, open. Kept where its own parsers and `content_blocks` look.
            generation = super()._convert_chunk_to_generation_chunk(chunk, *args, **kwargs)
            choices = chunk.get("choices") or []
            refusal = (choices[0].get("delta") or {}).get("refusal") if choices else None
            if generation is not None and refusal:
                generation.message.additional_kwargs["refusal"] = refusal
            return generation

    return StreamedChatOpenAI


def client_with_deadline(seconds: float) -> Any:
    """An HTTP client whose every reply must arrive whole within `seconds`. The SDK's timeout bounds each
    read, so a server sending a byte now and then held a request, and a server thread, as long as it liked
    (a space every 5 s: 90 s at a 20 s timeout).

    A timeout is raised as the SDK's own APITimeoutError, which the SDK passes on without retrying: a server
    that took the whole timeout once would likely take it again, and the retry doubled what a step waits
    (2.45 s for one call at a 1 s timeout, one retry). A refused connection or a 5xx is still retried."""
    import httpx
    import openai

    @contextmanager
    def _no_retry(request: httpx.Request) -> Iterator[None]:
        try:
            yield
        except httpx.TimeoutException as exc:
            # typed for the SDK's own httpx2 requests; it only keeps the request, and takes this client's too
            raise openai.APITimeoutError(request=cast(Any, request)) from exc

    class Until(httpx.SyncByteStream):
        def __init__(self, inner: Any, request: httpx.Request, deadline: float, *, unstreamed: bool,
                     page: bool = False) -> None:
            self._inner, self._request, self._deadline = inner, request, deadline
            self._unstreamed, self._page = unstreamed, page
            self._given_up = _GIVEN_UP.get()  # read on the call's thread, where the reply is read too

        def __iter__(self) -> Iterator[bytes]:
            if self._page:  # read as events it holds none either: the SDK's bare AssertionError said nothing
                raise NotAnOpenAIApi("a web page came back for a chat call")
            if self._unstreamed:  # read as server-sent events it holds none: "No generations", an AssertionError
                raise NotStreamedError("the server sent a whole JSON reply to a streamed request (no streaming)")
            with _no_retry(self._request):
                for chunk in self._inner:
                    if time.monotonic() > self._deadline:
                        raise httpx.ReadTimeout(f"the reply took over {seconds:g} s in all", request=self._request)
                    if self._given_up is not None and self._given_up.is_set():
                        raise httpx.ReadError("the caller gave up the reply", request=self._request)
                    yield chunk

        def close(self) -> None:
            self._inner.close()

    class Deadline(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            deadline = time.monotonic() + seconds
            with _no_retry(request):
                response = super().handle_request(request)
            unstreamed = (response.status_code == 200 and _asks_to_stream(request)
                          and response.headers.get("content-type", "").startswith("application/json"))
            page = response.status_code == 200 and response.headers.get("content-type", "").startswith("text/html")
            response.stream = Until(response.stream, request, deadline, unstreamed=unstreamed, page=page)
            return response

    return httpx.Client(transport=Deadline(), timeout=seconds, follow_redirects=True)


class NotStreamedError(ValueError):
    """A server that ignores `stream: true` (a proxy or a server of its own): its reply is not used, said so."""


def _asks_to_stream(request: Any) -> bool:
    try:
        return bool(json.loads(request.content or b"{}").get("stream"))
    except (ValueError, AttributeError, RuntimeError):  # not JSON, not an object, a body not read (streamed)
        return False
