"""Pages of a user's sessions: the page size, and the opaque cursor of where the previous page ended."""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import HTTPException, Query, Request

from app.api.problems import problem_responses
from app.api.schemas import QueryInt

SESSIONS_PER_PAGE, MAX_SESSIONS_PER_PAGE = 50, 200
Limit = Annotated[int, Query(ge=1, le=MAX_SESSIONS_PER_PAGE, description="Sessions per page"), QueryInt]
Cursor = Annotated[str | None, Query(max_length=200, description="Where the page starts: copy it from the previous "
                                     "page's `Link` header; leave it out for the newest")]
Status = Annotated[Literal["active", "completed"] | None, Query(description="Only the sessions of this status")]
PAGE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A page of sessions",
        "headers": {"Link": {"description": 'The next page, as `<URL>; rel="next"` (RFC 8288); absent on the '
                             "last page", "schema": {"type": "string"}}},
    },
    **problem_responses(400),
}


def link_to_next(request: Request, *, limit: int, created_at: datetime, session_id: str) -> str:
    """The Link header's value for the page after the session given (the last one on this page)."""
    url = request.url.include_query_params(limit=limit, cursor=encode(created_at, session_id))
    return f'<{url.path}?{url.query}>; rel="next"'


def encode(created_at: datetime, session_id: str) -> str:
    """The cursor just past this session; opaque to clients, so its form can change."""
    return base64.urlsafe_b64encode(f"{created_at.isoformat()}|{session_id}".encode()).decode().rstrip("=")


def start_after(cursor: str, *, repo: Any, user_id: int) -> tuple[datetime, str]:
    """(created_at, id) of the session a page starts after: the caller's own session the cursor names, at the time
    it was started; 400 for any other cursor. Checked against the store, not only read: a cursor made up by a client
    (a session of no one, another user's, a time of its choosing) answered 200 with a page the server never gave,
    often the first again, looking like the next one."""
    created_at, session_id = _decode(cursor)
    session = repo.get_session(session_id, user_id)
    if session is None or session.created_at != created_at:
        raise _not_given(cursor)
    return session.created_at, session.id


def _decode(cursor: str) -> tuple[datetime, str]:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, session_id = text.split("|")
        created_at = datetime.fromisoformat(stamp)
        if created_at.tzinfo is None or not session_id:
            raise ValueError(text)
        # In UTC here, as the store compares it: a stamp near year 1 or 9999 with a far offset has no UTC
        # time (OverflowError), which the store would raise as a 500.
        created_at = created_at.astimezone(UTC)
    except (binascii.Error, UnicodeDecodeError, ValueError, OverflowError):
        raise _not_given(cursor) from None
    return created_at, session_id


def _not_given(cursor: str) -> HTTPException:
    return HTTPException(400, f"cursor {cursor[:40]!r} is not one this server gave out: follow the `Link` header "
                              "of the previous page, or leave cursor out to start from the newest")
