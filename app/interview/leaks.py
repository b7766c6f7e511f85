"""Whether a model's wording carries words of a model answer, however they are spelt.

A model that saw a model answer (its own question's in the context, or another's in a judge prompt on a server
that keeps what it was sent) must not slip it into a question or hint. A run of ANSWER_RUN of the answer's words
in a row is not a rewording's, and it is found as it reads: letters drawn alike are one (Cyrillic "о", a digit 0,
fullwidth letters), nothing between the letters counts (spaces, hyphens, dots, invisible characters:
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


def _words(text: str) -> list[str]:
    """The text's words as read: its runs of letters and digits ("b-a-c-k" is four, "zero_grad" two)."""
    return _LETTERS.findall(as_read(text))


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
        """The runs the text spells from the start of one of its words, up to MAX_INSERTED words among them."""
        words = _words(text)
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
