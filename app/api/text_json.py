"""The API's JSON replies, written so that text stored before input was checked cannot fail them.

A session stored before stop 55 may hold half a UTF-16 surrogate pair in a check's message or a submission's
output (JSON-escaped in its payload, so the store kept it). UTF-8 cannot encode it: every read of that session,
its transcript and its JSON report, was a 500. Replies show it as U+FFFD instead, as a browser shows bytes it
cannot read; the stored row is left as it is (no migration rewrites a candidate's session).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import JSONResponse

from app.text_input import without_lone_surrogates


class TextJSONResponse(JSONResponse):
    """JSONResponse, except that a lone surrogate in any string is written as U+FFFD rather than raising."""

    def render(self, content: Any) -> bytes:
        # Escapes (\u0000, \") are already written by json.dumps: only a raw surrogate can be left to replace.
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"))
        return without_lone_surrogates(text).encode("utf-8")
