"""Finding a quote in the candidate's answer: the model's evidence counts only as the answer's own words.

Case, whitespace, Unicode forms and typographic quotes do not count; whole words do, in order, and an
elided quote ("A ... B") may skip no negation.
"""

from __future__ import annotations

import re
import unicodedata

MIN_QUOTE_CHARS = 4  # "x" occurs in most answers; a quote, and each piece of an elided one, must say something

_TYPOGRAPHIC = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-", "\u2212": "-",
     "\u00a0": " "}
)
# Words an elided quote must not skip: "I would ... subclass" out of "I would never subclass" says the opposite.
_NEGATION = re.compile(r"\b(?:not|never|no|none|nor|cannot|without)\b|n't\b")
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|\u2026)\s*")
_EDGE_ELLIPSIS = re.compile(r"^(?:\.\.\.|\u2026)|(?:\.\.\.|\u2026)$")


def normalise(text: str) -> str:
    """Case, whitespace, Unicode forms and typographic quotes do not count when matching a quote."""
    return " ".join(unicodedata.normalize("NFKC", text).translate(_TYPOGRAPHIC).split()).casefold()


def _normalised_with_places(text: str) -> tuple[str, list[int]]:
    """normalise(text), and for each of its characters the index in NFKC(text) it came from."""
    source = unicodedata.normalize("NFKC", text)
    out: list[str] = []
    places: list[int] = []
    for i, char in enumerate(source.translate(_TYPOGRAPHIC)):
        if char.isspace():
            if out and out[-1] != " ":
                out.append(" ")
                places.append(i)
            continue
        for folded in char.casefold():
            out.append(folded)
            places.append(i)
    while out and out[-1] == " ":
        out.pop()
        places.pop()
    return "".join(out), places


def clean_quote(quote: str) -> str:
    """Strip the wrapping a model adds around a quote: whitespace, quote marks, leading/trailing ellipses."""
    text = quote.strip()
    for _ in range(3):  # the ellipses inside are left as written: they may be code the answer has (x[..., 0])
        text = _EDGE_ELLIPSIS.sub("", text.strip().strip("\"'`\u201c\u201d\u2018\u2019").strip()).strip()
    return text


def quote_in(quote: str, texts: list[str]) -> bool:
    return find_quote(quote, texts) is not None


def find_quote(quote: str, texts: list[str]) -> str | None:
    """The answer's own words the quote stands for, or None when it is not there: whole words, in order,
    each piece of a quote elided with '...' saying something, and no negation in what an ellipsis skips."""
    elided = [normalise(p) for p in _ELLIPSIS.split(quote) if p.strip()]
    # Read whole first: "..." is Python too (nn.Conv2d(16, 32, ...), x[..., 0]), and split there a quote copied
    # from code left pieces such as ")." that say nothing, and was not found.
    readings = [[normalise(quote)], elided] if len(elided) > 1 else [elided]
    for pieces in readings:
        if not pieces or any(len(p) < MIN_QUOTE_CHARS or not any(c.isalnum() for c in p) for p in pieces):
            continue
        for text in texts:
            haystack, places = _normalised_with_places(text)
            span = _pieces_at(haystack, pieces)
            if span is not None:
                source = unicodedata.normalize("NFKC", text)
                return source[places[span[0]] : places[span[1] - 1] + 1]
    return None


def _pieces_at(haystack: str, pieces: list[str]) -> tuple[int, int] | None:
    """Where the pieces occur in order, each on word boundaries, with no negation skipped between them."""
    first, start = None, 0
    for piece in pieces:
        at = _word_find(haystack, piece, start)
        if at is None or (first is not None and _NEGATION.search(haystack[start:at])):
            return None
        first = at if first is None else first
        start = at + len(piece)
    assert first is not None
    return first, start


def _word_find(haystack: str, piece: str, start: int) -> int | None:
    at = haystack.find(piece, start)
    while at >= 0:
        end = at + len(piece)
        before_ok = not piece[0].isalnum() or at == 0 or not haystack[at - 1].isalnum()
        after_ok = not piece[-1].isalnum() or end == len(haystack) or not haystack[end].isalnum()
        if before_ok and after_ok:
            return at
        at = haystack.find(piece, at + 1)
    return None
