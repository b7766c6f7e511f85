"""Checking that a quote really is the candidate's words before a report repeats it back to them.

The evaluators already verify their quotes; the report checks again because it is the last place a
wrong "you said ..." could reach the candidate, and stored evaluations outlive evaluator versions.
The rule is a looser form of the LLM judge's (evaluators/quotes.py): the pieces in order, without its
checks of word boundaries and of negations an ellipsis skips.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.store.records import TurnRecord

_TYPOGRAPHIC = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-", "\u00a0": " "}
)
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|\u2026)\s*")
MIN_QUOTE_CHARS = 4  # a one-letter "quote" occurs in every answer and proves nothing


def normalise(text: str) -> str:
    """Case, whitespace and typographic quotes do not count when matching a quote."""
    return " ".join(text.translate(_TYPOGRAPHIC).split()).casefold()


def quote_found(quote: str | None, texts: Iterable[str]) -> bool:
    """True when the quote occurs in one text; a quote elided with '...' must match piece by piece."""
    if not quote:
        return False
    pieces = [normalise(p) for p in _ELLIPSIS.split(quote) if p.strip()]
    if sum(len(p) for p in pieces) < MIN_QUOTE_CHARS or not any(c.isalnum() for c in quote):
        return False
    return any(_pieces_in_order(pieces, normalise(text)) for text in texts)


def _pieces_in_order(pieces: list[str], haystack: str) -> bool:
    start = 0
    for piece in pieces:
        at = haystack.find(piece, start)
        if at < 0:
            return False
        start = at + len(piece)
    return True


def answer_texts(turns: Iterable[TurnRecord]) -> list[str]:
    """Everything the candidate submitted on these turns, prose and code, as the evaluator read it."""
    texts: list[str] = []
    for turn in turns:
        text, code = turn.answer_text or "", turn.answer_code or ""
        texts.extend(t for t in (text, code) if t.strip())
        if text.strip() and code.strip():
            texts.append(f"{text}\n```python\n{code}\n```")  # the scorer's own concatenation
    return texts
