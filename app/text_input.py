"""Text from outside (a request, a file, a terminal) that may not be text.

A lone UTF-16 surrogate is what a JavaScript client sends when it cuts a string inside an emoji
("\\ud83d" in JSON), and what Python makes of bytes that are not UTF-8 on a terminal. It decodes into a
str, but the tokenizer, the database and the JSON writer all fail on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# JSON decoding joins every escaped pair into one character, so a surrogate left in a str is alone.
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def not_text(value: str) -> str | None:
    """Why `value` is not text, or None when it is. A NUL character is not either: PostgreSQL cannot store
    one, and no answer needs it."""
    if (nul := value.find("\x00")) >= 0:
        return f"holds a NUL character (\\u0000) at character {nul}, which is not text"
    found = _SURROGATE.search(value)
    if found is None:
        return None
    return (f"holds half of a UTF-16 surrogate pair (\\u{ord(found.group()):04x}) at character {found.start()}, "
            "which is not text; send the whole character")


def as_text(value: str) -> str:
    """`value` with each lone surrogate (and NUL) shown as U+FFFD, as a browser shows bytes it cannot read."""
    return _SURROGATE.sub(REPLACEMENT, value).replace("\x00", REPLACEMENT)


def as_text_throughout(value: Any, each: Callable[[str], str] = as_text) -> Any:
    """`value` (str, or lists and dicts of them, as a JSON payload is) with every string passed through `each`.

    For what was stored before input was checked: a check's message or a submission's output could carry half a
    surrogate pair into a session's payloads, and every later read of that session failed to encode it."""
    if isinstance(value, str):
        return each(value)
    if isinstance(value, list | tuple):
        return [as_text_throughout(item, each) for item in value]
    if isinstance(value, dict):
        return {as_text_throughout(key, each): as_text_throughout(item, each) for key, item in value.items()}
    return value


def without_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate shown as U+FFFD and nothing else changed (a NUL stays as it is)."""
    return _SURROGATE.sub(REPLACEMENT, text)
