"""Requests that may wait on a model hold at most part of the thread pool, so the rest of the API still answers.

Sync routes run on one pool of threads (anyio's, 40 by default). 45 grades held on a slow model took every
thread, and GET /v1/questions waited 35 s behind them. Grading and session actions (each may wait on the LLM
judge and phrasing) now take at most SHARE of the pool; the others wait for one of them on the event loop,
holding no thread.
"""

from __future__ import annotations

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SHARE = 0.75
PREFIXES = ("/v1/grade", "/v1/sessions")

_slots: RunVar[anyio.CapacityLimiter] = RunVar("slow_route_slots")  # one per event loop, as the pool is


def _slots_here() -> anyio.CapacityLimiter:
    try:
        return _slots.get()
    except LookupError:
        pool = anyio.to_thread.current_default_thread_limiter().total_tokens
        _slots.set(anyio.CapacityLimiter(max(1, int(pool * SHARE))))
        return _slots.get()


class SlowRouteLimit:
    """POSTs under PREFIXES run a few at a time; everything else passes straight through."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"].startswith(PREFIXES):
            # The body first, then a slot: a client sending its body slowly (or never) must hold none, or 30
            # such connections, without a key, kept every grade and session action waiting for good.
            replay = await _read_body(receive)
            async with _slots_here():
                await self.app(scope, replay, send)
            return
        await self.app(scope, receive, send)


async def _read_body(receive: Receive) -> Receive:
    """The request's messages up to its body's last part (or the client's disconnect), read now and handed
    on in order. A failure reading them (BodySizeLimit's 413, outside this middleware) is raised again where
    the route reads the body, so the app answers it as before."""
    received: list[Message] = []
    failure: Exception | None = None
    try:
        received.append(await receive())
        while received[-1]["type"] == "http.request" and received[-1].get("more_body", False):
            received.append(await receive())
    except Exception as exc:
        failure = exc

    async def replayed() -> Message:
        if received:
            return received.pop(0)
        if failure is not None:
            raise failure
        return await receive()
    return replayed
