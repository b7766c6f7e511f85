"""What a model server could echo of the credentials it was sent, cut out of all it returns.

A server may echo the key (in an error message, or a hostile one in a judge reply); what reaches a note, the
database or a report never holds it, nor a bearer or basic credential or a password in the base URL.
"""

from __future__ import annotations

import base64
import re
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from app.lookalike import as_read

_URL_PASSWORD = re.compile(r"(//)[^/@\s]*:([^/@\s]*)@")
_BEARER = re.compile(r"(?i)\b(bearer\s+)\S+")
_BASIC = re.compile(r"(?i)\b(basic\s+)([A-Za-z0-9+/]{4,}={0,2})(?![\w+/=])")
_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")


def without_password(url: str) -> str:
    """The URL without a user:password@ part."""
    return _URL_PASSWORD.sub(r"\1", url)


def secrets_sent(base_url: str, api_key: str) -> list[str]:
    """The key and the base URL's passwords, as sent (a URL's credentials go as Basic auth, base64) and as a
    server or a model may echo them: forward or reversed, each URL-encoded, in hex, in base64 with or without its
    padding, and each of those reversed (the cheap spellings a prompt can ask for; no other cipher is tried)."""
    users = [m.group(0)[2:-1] for m in _URL_PASSWORD.finditer(base_url)]  # "user:password"
    secrets = [api_key, *(u.split(":", 1)[1] for u in users)]
    secrets += [v[::-1] for v in secrets]
    encoded = [base64.b64encode(v.encode()).decode() for v in (*users, *secrets)]
    encoded += [v.rstrip("=") for v in encoded]
    forms = {*secrets, *(quote(v, safe="") for v in secrets), *(v.encode().hex() for v in secrets), *encoded}
    return [v for v in forms | {v[::-1] for v in forms} if len(v) >= 4]


def redact(text: str, secrets: list[str]) -> str:
    """The text without the given secrets, bearer or basic credentials, "sk-..." keys or a URL's user:password@."""
    text = _without(text, secrets)
    text = _BEARER.sub(r"\1[redacted]", text)
    text = _BASIC.sub(lambda m: m.group(1) + "[redacted]" if _is_basic_credential(m.group(2)) else m.group(0), text)
    text = _KEY_LIKE.sub("[redacted]", text)
    return _URL_PASSWORD.sub(r"\1", text)


def _without(text: str, secrets: list[str]) -> str:
    """The text with each secret cut out as it reads: in any case, with invisible characters or spaces inside
    it, in fullwidth or look-alike letters (an exact match left "tok_Q7\u200bf9Lm2Xp4" and "TOK_Q7F9LM2XP4")."""
    needles = {n for n in ("".join(as_read(s).split()) for s in secrets) if len(n) >= 4}
    if not needles:
        return text
    read, origin = [], []  # the text as read, without spaces; and where each of its characters came from
    for i, char in enumerate(text):
        for letter in _read_char(char):
            if not letter.isspace():
                read.append(letter)
                origin.append(i)
    said = "".join(read)
    spans = []
    for needle in needles:
        at = said.find(needle)
        while at != -1:
            spans.append((origin[at], origin[at + len(needle) - 1] + 1))
            at = said.find(needle, at + 1)
    pieces, last = [], 0
    for start, end in sorted(spans):
        if start >= last:  # overlapping spans are cut as one
            pieces += [text[last:start], "[redacted]"]
        last = max(last, end)
    return "".join([*pieces, text[last:]])


@lru_cache(maxsize=4096)
def _read_char(char: str) -> str:
    return as_read(char)


def _is_basic_credential(token: str) -> bool:
    """Base64 of "user:password", as Basic auth sends it; "basic block" in a question or a quote is no credential."""
    try:
        return ":" in base64.b64decode(token, validate=True).decode()
    except ValueError:  # not base64, or not text (binascii.Error and UnicodeDecodeError are ValueErrors)
        return False


def redact_strings(value: Any, secrets: list[str]) -> Any:
    """A parsed reply (dicts, lists, strings) with every string redacted."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {k: redact_strings(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_strings(v, secrets) for v in value]
    return value


