"""Text as it reads, for finding a string however it is spelt: a model answer in a wording, a key in a reply."""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from anyascii import anyascii
from confusable_homoglyphs import confusables

# Letters that draw nothing (Hangul fillers): unlike the format characters they count as letters, so they
# would join a word and change it while it reads the same.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")


def as_read(text: str) -> str:
    """The text as it reads, case folded: NFKD (fullwidth, mathematical letters; an accent apart from its letter),
    then dropped: format characters (zero-width), combining marks (accents; the invisible grapheme joiner and
    variation selectors) and blank letters; every letter or digit drawn like a Latin letter (Unicode's
    confusables list, through confusable_homoglyphs: Cyrillic "о", the digits 0 and 1) made that letter; and any
    other letter or digit outside ASCII spelt in ASCII by anyascii ("ø" "o", "ł" "l", "æ" "ae", which NFKD keeps
    whole). Symbols are not spelt out: an emoji would read as a word (":grinning:")."""
    kept = (c for c in unicodedata.normalize("NFKD", text)
            if unicodedata.category(c) not in ("Cf", "Mn", "Me") and c not in _BLANK_LETTERS)
    return "".join(c if c.isascii() and not c.isdigit() else _spelt(c) for c in kept).casefold()


def disguised_letters(text: str) -> list[str]:
    """The letters of another script drawn like Latin ones, in a text that has Latin letters too ("lеarner" with a
    Cyrillic "е"): such a text reads as a Latin one it is not. A text all in one other script is left alone."""
    if not any(c.isascii() and c.isalpha() for c in text):
        return []
    return [c for c in text if c.isalpha() and not c.isascii() and _latin(c).isascii()]


# ASCII characters that Unicode's confusables list draws as other ASCII ones (its prototypes, confusables.txt): "I"
# and "1" as "l", "0" as "O", "m" as "rn". Lowercase "o" is not among them: the digit 0 stands as tall as a capital.
_ASCII_DRAWN_ALIKE = str.maketrans({"I": "l", "1": "l", "0": "O", "m": "rn"})


def skeleton(text: str) -> str:
    """The text as it is drawn, to tell whether two names look alike (Unicode's "skeleton", UTS #39): each letter or
    digit outside ASCII drawn like an ASCII one made that one, Latin letters too (dotless "ı" as "i", Latin alpha "ɑ"
    as "a", Cyrillic "р" as "p", Persian "۱" as "l"), by Unicode's confusables list, and ASCII drawn alike made one
    ("Iearner" with a capital I and "1earner" are drawn as "learner", "rnary" as "mary", "0lga" as "Olga"). Accents
    are kept (decomposed first, composed again), as is case: "José" is not drawn as "Jose", nor "Işıl" as "Isil",
    nor "Olga" as "olga". Stored beside each user name (users.name_skeleton, unique): a change to what it returns
    needs a migration that computes the column again."""
    decomposed = unicodedata.normalize("NFD", text)
    drawn = "".join(_ascii_drawn(c) if c.isalnum() and not c.isascii() else c for c in decomposed)
    return unicodedata.normalize("NFC", drawn.translate(_ASCII_DRAWN_ALIKE))


@lru_cache(maxsize=4096)
def _ascii_drawn(char: str) -> str:
    # No preferred alias: a Latin letter ("ı", "ɑ") is as confusable as a Cyrillic one here.
    found = confusables.is_confusable(char, greedy=True) or []
    ascii_ = [h["c"] for f in found for h in f["homoglyphs"] if len(h["c"]) == 1 and h["c"].isascii()
              and h["c"].isalnum()]
    return ascii_[0] if ascii_ else char


@lru_cache(maxsize=4096)
def _spelt(char: str) -> str:
    latin = _latin(char)
    return anyascii(latin) if not latin.isascii() and (latin.isalpha() or latin.isdigit()) else latin


@lru_cache(maxsize=4096)
def _latin(char: str) -> str:
    found = confusables.is_confusable(char, greedy=True, preferred_aliases=["latin"]) or []
    latin = [h["c"] for f in found for h in f["homoglyphs"] if h["c"].isascii() and h["c"].isalpha()]
    return latin[0] if latin else char
