"""The API's JSON replies, written so that text stored before input was checked cannot fail them.

A session stored before stop 55 may hold half a UTF-16 surrogate pair in a check's message or a submission's
output (JSON-escaped in its payload, so the store kept it). UTF-8 cannot encode it: every read of that session,
its transcript and its JSON report, was a 500. Replies show it as U+FFFD instead, as a browser shows bytes it
cannot read; the stored row is left as it is (no migration rewrites a candidate's session).
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse
from pydantic_core import PydanticSerializationError, to_json

from app.text_input import as_text_throughout, without_lone_surrogates


class TextJSONResponse(JSONResponse):
    """JSONResponse, except that a lone surrogate in any string is written as U+FFFD rather than raising."""

    def render(self, content: Any) -> bytes:
        try:  # pydantic's encoder, as FastAPI's own replies use (json.dumps took ~6 times as long on a transcript)
            return to_json(content, inf_nan_mode="null")  # NaN as null, as its dump_json writes it
        except PydanticSerializationError:  # a lone surrogate: UTF-8 cannot encode it
            return to_json(as_text_throughout(content, without_lone_surrogates), inf_nan_mode="null")
