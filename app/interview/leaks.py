"""Whether a model's wording carries words of a model answer, however they are spelt.

A model that saw a model answer (its own question's in the context, or another's in a judge prompt on a server
that keeps what it was sent) must not slip it into a question or hint. A run of ANSWER_RUN of the answer's words
in a row is not a rewording's, and it is found as it reads: letters drawn alike are one (Cyrillic "о", a digit 0,
fullwidth letters, "ø" for "o"), digits and symbols written for letters are those letters (leetspeak:
"b4ckw4rd p@$$"), nothing between the letters counts (spaces, hyphens, dots, invisible characters:
"b-a-c-k w-a-r-d" is "backward"), and up to MAX_INSERTED other words among the run's words do not hide it (a
filler word every 7 words broke every run of 8).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.lookalike import as_read

ANSWER_RUN = 8
MAX_INSERTED = 2
_KEY = 6  # letters of a run that index it (a run has at least ANSWER_RUN)

_LETTERS = re.compile(r"[^\W_]+")
# Leetspeak's digits for the letters they are written for, in the answer and the text alike (as_read has made 0
# "o" and 1 "l" already). 1 is written for "i" as often as for "l", so the two letters are read as one.
_LEET_DIGITS = str.maketrans("23456789l", "zeasgtbgi")
# Its symbols, read as letters only in a second reading of the text: as letters, they would join a word to the
# punctuation after it ("job!"), so the first reading keeps them apart as ever.
_LEET_SYMBOLS = str.maketrans("@$!|+", "asiit")


def _words(text: str, *, symbols_as_letters: bool = False) -> list[str]:
    """The text's words as read: its runs of letters and digits ("b-a-c-k" is four, "zero_grad" two), digits
    read as the letters they stand for, and leetspeak's symbols too if asked ("p@$$" one word, else one letter)."""
    read = as_read(text)
    if symbols_as_letters:
        read = read.translate(_LEET_SYMBOLS)
    return _LETTERS.findall(read.translate(_LEET_DIGITS))


class AnswerRuns:
    """Every run of ANSWER_RUN words of some model answers, kept as its letters alone."""

    def __init__(self, answers: Iterable[str] = ()) -> None:
        self._runs: dict[str, set[str]] = {}  # first _KEY letters -> runs
        for answer in answers:
            words = _words(answer)
            for i in range(len(words) - ANSWER_RUN + 1):
                run = "".join(words[i:i + ANSWER_RUN])
                self._runs.setdefault(run[:_KEY], set()).add(run)

    def __len__(self) -> int:
        return sum(len(runs) for runs in self._runs.values())

    def in_text(self, text: str) -> set[str]:
        """The runs the text spells from the start of one of its words, up to MAX_INSERTED words among them, with
        leetspeak's symbols read as punctuation or, if it has any, as letters."""
        words, leet = _words(text), _words(text, symbols_as_letters=True)
        return self._spelt_in(words) | (self._spelt_in(leet) if leet != words else set())

    def _spelt_in(self, words: list[str]) -> set[str]:
        stream, found, offset = "".join(words), set(), 0
        for i, word in enumerate(words):
            # Runs are looked up by their first letters as written here: a filler among those hides that run, not
            # the runs of the answer that start after it.
            for run in self._runs.get(stream[offset:offset + _KEY], ()):
                if _spelt(run, words, i):
                    found.add(run)
            offset += len(word)
        return found


def _spelt(run: str, words: list[str], first: int) -> bool:
    """Whether the words from `first` on spell the run's letters, each word either going on with it or left out
    (MAX_INSERTED at most). A run may end inside a word ("the" in "then"): it is found where it is said."""
    at, left_out = 0, 0
    for word in words[first:first + len(run) + MAX_INSERTED]:  # a word spells at least one letter of the run
        if run.startswith(word, at):
            at += len(word)
        elif word.startswith(run[at:]):
            return True
        elif left_out < MAX_INSERTED and at:
            left_out += 1
            continue
        else:
            return False
        if at == len(run):
            return True
    return False
