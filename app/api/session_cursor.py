"""The opaque cursor of a page of sessions: where the previous page ended, by the list's own order."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime

from fastapi import HTTPException


def encode(created_at: datetime, session_id: str) -> str:
    """The cursor just past this session; opaque to clients, so its form can change."""
    return base64.urlsafe_b64encode(f"{created_at.isoformat()}|{session_id}".encode()).decode().rstrip("=")


def decode(cursor: str) -> tuple[datetime, str]:
    """(created_at, id) of the session a page starts after; 400 for a cursor this server did not give."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, session_id = text.split("|")
        created_at = datetime.fromisoformat(stamp)
        if created_at.tzinfo is None or not session_id:
            raise ValueError(text)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise HTTPException(400, f"cursor {cursor[:40]!r} is not one this server gave out: follow the `Link` "
                                 "header of the previous page, or leave cursor out to start from the newest") from None
    return created_at, session_id
