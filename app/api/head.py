"""HEAD on every GET route: the GET's status and headers, without its body (RFC 9110 9.3.2).

Monitors and link checkers send HEAD, and a 405 reads as a broken link. Starlette's routes take HEAD wherever they
take GET; FastAPI's do not (fastapi/fastapi#1773, open). This layer, outside the app's routing, asks the app for the
GET and passes on its reply's start and no body: it needs nothing of how FastAPI keeps its routes, covers a GET route
added later, and keeps HEAD out of the OpenAPI document (where it would be each GET again).
"""

from __future__ import annotations

from fastapi import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Set in the scope of a GET made for a HEAD: a route whose body is costly to make (a report's PDF) may leave it
# unmade, and its Content-Length out, as RFC 9110 9.3.2 allows for a value known only once the body is made.
HEADERS_ONLY = "interviewer.headers_only"


class HeadAsGet:
    """Answers HEAD as the app answers GET, headers only."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def without_body(message: Message) -> None:
            if message["type"] != "http.response.body":
                await send(message)
            elif not message.get("more_body", False):  # one empty last part ends the reply, whatever was streamed
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        await self.app({**scope, "method": "GET", HEADERS_ONLY: True}, receive, without_body)


def headers_only(request: Request) -> bool:
    """Whether the reply's body will be dropped (the request was a HEAD)."""
    return bool(request.scope.get(HEADERS_ONLY))
