"""Reading an answer: units of evidence, polarity, and whether a unit says anything at all."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*\n?(.*?)```", re.S)
# A full stop ends a sentence unless it ends "e.g." or "i.e.": "(N, H, W, C), e.g. (32, 224, 224, 3)" is one.
# It ends one before a capital, a digit, a quote or a bracket, or a lower-case name in code ("detach() returns",
# "requires_grad=False is", "torch.zeros"): glued to the sentence before, such a claim could not earn its own
# point. No real answer is split differently; on the team's blind answers the credited-or-not verdicts' macro-F1
# rose 0.794 -> 0.813 and fully stated points called missed fell 46 -> 37 of 258, Pearson within 0.003 (refitted).
_SENTENCE_END = re.compile(r"(?<=[.!?;])(?<!\be\.g\.)(?<!\bi\.e\.)\s+(?=[A-Z0-9`(\"']|[a-z_]\w*(?:[(=_\[]|\.[a-z_]))"
                           r"|\n\s*\n|\n\s*[-*•]\s+|\n(?=\s*\d+[.)]\s)")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Typographic apostrophes, as phones and word processors type them ("don\u2019t"), read as the plain one.
_APOSTROPHES = str.maketrans(dict.fromkeys("\u2018\u2019\u02bc", "'"))
NEGATIONS = frozenset(
    "not no never none nothing neither nor cannot can't don't doesn't didn't isn't aren't wasn't "
    "weren't won't wouldn't shouldn't mustn't without".split()
)
# Function words carry no content: left out of the lexical overlap.
FUNCTION_WORDS = frozenset(
    "a an the is are was were be been being it its this that these those to of in on for by with "
    "so then than when while because which who whose what how it's they them their you your we our "
    "and or but if as into from after before during each every all only also does do did has have "
    "had can will would should may might must there theres".split()
)


@dataclass(frozen=True)
class Unit:
    """One sentence or code line of the answer, with the verbatim text to quote."""

    text: str  # as written: what is embedded and quoted
    is_code: bool


def split_units(answer: str) -> list[Unit]:
    """Sentences of the prose and meaningful lines of any code; code is read as evidence too. Whole
    sentences only: matching clauses as well, and other places to end a sentence, gained nothing on
    held-out real answers (bench/SCORER_FINDINGS.md)."""
    units = [Unit(line, True) for block in _FENCE.findall(answer) for line in map(str.strip, block.splitlines())
             if len(_WORD.findall(line)) >= 2 and not line.startswith(("import ", "from "))]
    prose = _FENCE.sub("\n\n", answer)
    for piece in _SENTENCE_END.split(prose):
        sentence = " ".join(piece.split())
        if re.search(r"[^\W_]", sentence):  # "100" is an answer too
            units.append(Unit(sentence, False))
    return units


_CLAUSE_BREAK = re.compile(r"\s*[;:]\s+|,\s+(?=but\b)")


def clause_pieces(sentence: str) -> list[str]:
    """The text before and after each clause break ("Some believe X, but that is wrong: Y"), in that
    order per break: the pieces after a break are every second one, from the second."""
    clauses = [c for c in _CLAUSE_BREAK.split(sentence) if c.strip()]
    return [piece for k in range(1, len(clauses)) for piece in (" ".join(clauses[:k]), " ".join(clauses[k:]))]


def words(text: str) -> list[str]:
    """Its words, lower-cased, apostrophes dropped ("dont"); negated verbs also as written ("don't")."""
    text = text.translate(_APOSTROPHES)
    return [w.lower() for w in [*_WORD.findall(text.replace("'", "")), *re.findall(r"\b\w+n't\b", text)]]


@lru_cache(maxsize=65536)
def is_negated(text: str) -> bool:
    return any(w in NEGATIONS or w.endswith("nt") and w[:-2] + "n't" in NEGATIONS for w in words(text))


# Explicit non-answers: the only answers scored 0 without the model. Anything else, however short or
# vague ("fine", "yes", "George Washington"), is scored by the model. "give up", "dunno", "don't
# understand" and "tell me" were added from the train splits' answers graded 0; on the held-out splits they
# zero 8 more Beetle answers, all graded 0 (scored 0: UA 1.6% -> 2.3%, UQ 1.6% -> 2.2%), at Pearson
# -0.002 on UA (three answers far below the others graded 0) and no change elsewhere. An apostrophe may
# come as a double quote inside a word: SemEval's answers write "I don"t know" (18 train and 5 held-out
# answers, all graded 0).
_QUOTE_APOSTROPHE = re.compile(r'(?<=[^\W\d_])"(?=[^\W\d_])')
# Saying one does not know, and the phrases that only decline ("pass", "skip", "sorry").
_NON_ANSWER = re.compile(
    r"\b((i\s+)?(still\s+)?(really\s+)?(do\s*n[o']?t|dont)\s+(know|understand)|idk|dunno|(i\s+have\s+)?(absolutely\s+)?"
    r"no\s+(idea|clue)|(i\s*'?\s*a?m\s+)?(still\s+)?not\s+sure|(i\s+)?(can'?t|cannot)\s+(remember|recall))\b"
    r"|\b(pass|skip|(i\s+)?give\s+up|(just\s+)?tell(\s+me)?|n/?a|sorry|no\s+answer|(the\s+)?answer)\b", re.I)


_EMPTY_FENCE = re.compile(r"```[\w+-]*\s*```")  # a code block with nothing in it says nothing


def is_non_answer(answer: str) -> bool:
    """Empty, or only explicit non-answers ("I don't know", "pass", "no idea, sorry", "i still dont know").
    Anything said beside them is scored by the model: "I do not know why", and a hedged guess ("I'm not sure,
    maybe it is something to do with the GPU."). Until stop 54 saying one does not know in words that share
    no 5-letter stem with the reference was a non-answer too: it zeroed 10 train answers, all graded 0, and
    that guess; refitted without it, held-out Pearson moved by at most 0.002 (bench/SCORER_FINDINGS.md)."""
    plain = _EMPTY_FENCE.sub(" ", _QUOTE_APOSTROPHE.sub("'", answer.translate(_APOSTROPHES)))
    return not re.search(r"[^\W_]", _NON_ANSWER.sub(" ", plain))


@lru_cache(maxsize=65536)
def content_words(text: str) -> frozenset[str]:
    """Cached: the scorer asks about the same sentences and rubric texts many times per answer."""
    return frozenset(w for w in words(text) if w not in FUNCTION_WORDS and len(w) > 2)


def without_question_words(text: str, question: str) -> str:
    """The text's content words that the question does not use, as one sorted bag of words ("question
    demoting"): what the text says beyond echoing the question, so two texts on the same question are
    compared on that. A bag rather than the text minus those words: as good on held-out sources
    (leave-one-source-out +0.145 vs +0.143 over cosine) at ~40% fewer tokens to embed."""
    return " ".join(sorted(content_words(text) - content_words(question))) or "."
