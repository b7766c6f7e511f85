"""Reading an answer: units of evidence, polarity, and whether a unit says anything at all."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*\n?(.*?)```", re.S)
# A full stop ends a sentence unless it ends "e.g." or "i.e.": "(N, H, W, C), e.g. (32, 224, 224, 3)" is one.
_SENTENCE_END = re.compile(
    r"(?<=[.!?;])(?<!\be\.g\.)(?<!\bi\.e\.)\s+(?=[A-Z0-9`(\"'])|\n\s*\n|\n\s*[-*•]\s+|\n(?=\s*\d+[.)]\s)"
)
_CLAUSE_BREAK = re.compile(
    r"[,;:]\s+|\s+[-–—]\s+"  # a spaced dash: "steps on it twice - effectively doubling the lr"
    r"|\s+(?=(?:and then|then|but|while|whereas|so that|which|never|rather than|instead of|unlike|because)\b)"
)
# An assignment or a call with arguments: code written inline in a sentence.
_CODE_STATEMENT = re.compile(r"\b[A-Za-z_][\w.]*\s*=\s*[\w(\[]|\b[A-Za-z_][\w.]*\([^()]*[\w)][^()]*\)")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NEGATIONS = frozenset(
    "not no never none nothing neither nor cannot can't don't doesn't didn't isn't aren't wasn't "
    "weren't won't wouldn't shouldn't mustn't without".split()
)
# Function words: a statement has some; a bare list of buzzwords has almost none.
FUNCTION_WORDS = frozenset(
    "a an the is are was were be been being it its this that these those to of in on for by with "
    "so then than when while because which who whose what how it's they them their you your we our "
    "and or but if as into from after before during each every all only also does do did has have "
    "had can will would should may might must there theres".split()
)
EVASIONS = (
    r"i (really )?(do ?n[o']?t|dont) know",
    r"no idea",
    r"not sure",
    r"i (have|had) no (clue|idea)",
    r"(i )?(can't|cannot) (remember|recall)",
    r"pass",
    r"skip",
    r"fine",
    r"ok(ay)?",
    r"yes",
    r"no",
    r"idk",
    r"n/?a",
    r"it depends",
    r"(hmm+|uh+|um+|well|so|i think|honestly|really|sorry)",
    r"good question",
    r"that'?s (a )?(good|great|hard|tough) question",
)
# Words that praise, hedge or fill without saying anything technical ("super useful", "it depends on
# what you want", "people use it all the time").
VAGUE_WORDS = frozenset(
    "useful important basically really thing things stuff way ways normal normally usually use used uses "
    "using just super pretty kind lot lots time times work works working need needs good better best great "
    "different same actually case cases depends depend depending want wants whatever something anything "
    "everything people often sometimes always probably maybe mostly simply very much many".split()
)
_EVASION = re.compile(r"\b(" + "|".join(EVASIONS) + r")\b", re.I)


@dataclass(frozen=True)
class Unit:
    """One sentence or code line of the answer, with the verbatim text to quote."""

    text: str  # as written, for quoting
    normalised: str  # code identifiers spelled out, for matching
    is_code: bool
    in_statement: bool = False  # a clause cut from a sentence that is itself a statement


_AXIS_NAMES = {"N": "batch", "B": "batch", "C": "channels", "H": "height", "W": "width"}
# Image layouts written as letters: "(N, H, W, C)", "NCHW", "(C, H, W)". The embedding model reads
# the letters as noise, so "comes in as (N, H, W, C)" did not resemble "batch, height, width, channels".
_LAYOUT = re.compile(r"\b(?:([NB])\s*,\s*)?([CHW])\s*,\s*([CHW])\s*,\s*([CHW])\b|\b([NB]?)(CHW|HWC)\b")


def _spell_out_layout(match: re.Match[str]) -> str:
    letters = "".join(g for g in match.groups() if g)
    if sorted(letters.lstrip("NB")) != ["C", "H", "W"]:
        return match.group(0)
    return " ".join(_AXIS_NAMES[c] for c in letters)


# Comparisons, arrows and products in code or math read as words, so "rand_like(x) < p" can meet
# "keep the entries that come out under p", "(1 - p)" can meet "one minus p" and "a @ w" can meet
# "matrix multiplication" (a leading "@" is a decorator and stays).
_OPERATORS = [
    (re.compile(r"\s*<=\s*"), " at most "),
    (re.compile(r"\s*>=\s*"), " at least "),
    (re.compile(r"\s*->\s*"), " gives "),
    (re.compile(r"\s+<\s+|(?<=[\w)])<(?=[\w(])"), " less than "),
    (re.compile(r"\s+>\s+|(?<=[\w)])>(?=[\w(])"), " greater than "),
    (re.compile(r"\b1\s*-\s*(?=[a-z]\b)"), "1 minus "),
    (re.compile(r"(?<=[\w)\]])\s*@\s*(?=[\w(])"), " matrix multiply "),
]


@lru_cache(maxsize=65536)
def spell_out_code(text: str) -> str:
    """`optimizer.zero_grad()` reads as 'optimizer zero grad' so prose evidence can match code."""
    text = _LAYOUT.sub(_spell_out_layout, text)
    for symbol, words_for in _OPERATORS:
        text = symbol.sub(words_for, text)
    text = re.sub(r"[`()\[\]{}]", " ", text)
    text = re.sub(r"(?<=[a-z0-9])\.(?=[a-z_])", " ", text)
    text = re.sub(r"(?<=[a-zA-Z0-9])_(?=[a-zA-Z0-9])", " ", text)
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return " ".join(text.split())


# A name from code: "requires_grad", "zero_grad()", "model.eval()", "nn.Module".
_IDENTIFIER = re.compile(r"\b[A-Za-z]\w*_\w+|\b[A-Za-z]\w*(?:\.[A-Za-z_]\w*)+|\b[A-Za-z]\w*(?=\()")
# "it" that stands for nothing: "it is important to ...", "it's worth noting that", "it depends".
_IT = re.compile(
    r"\b[Ii]t\b(?!(?:'s|\s+is|\s+was)(?:\s+[\w-]+){1,3}\s+(?:to|that)\b|\s+(?:depends|seems|turns out)\b)(?:'s)?"
)


# A line of code pasted without ``` fences: a statement keyword, a comment or decorator, an assignment,
# or a bare call. Answers typed into a text box often paste code that way; read as prose, a whole
# class ran together into one "sentence" that matched nothing (a from-scratch GRU cell scored 1.0
# where the grader gave 4.5).
_CODE_LINE = re.compile(
    r"^\s*(?:(?:def|class|return|for|while|if|elif|else|with|try|except|finally|import|from|raise|yield|assert)\b"
    r"|#|@\w"
    r"|[A-Za-z_][\w.\[\]]*(?:\s*,\s*[A-Za-z_][\w.\[\]]*)*\s*[-+*/@]?=(?!=)\s*\S"
    r"|[A-Za-z_][\w.]*\(.*\)\s*;?\s*$)"
)
# Inside a run of code: an indented line, a closing bracket, or a line left open by a bracket or comma.
_CODE_CONTINUATION = re.compile(r"^\s+\S|^\s*[)\]}]|[(\[{,\\]\s*$")


def _is_code_line(line: str) -> bool:
    code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else line
    return bool(_CODE_LINE.match(line)) and not re.search(r"[.!?]\s*$", code.strip())


def fence_bare_code(answer: str) -> str:
    """Runs of code lines written without fences (two or more code lines, with their indented and
    continuation lines) get fences, so they are read line by line as code."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if sum(_is_code_line(line) for line in run) >= 2:
            out.extend(["```", *run, "```"])
        else:
            out.extend(run)
        run.clear()

    fenced = False
    for line in answer.split("\n"):
        if line.strip().startswith("```"):
            flush()
            fenced = not fenced
            out.append(line)
        elif fenced:
            out.append(line)
        elif _is_code_line(line) or (run and (not line.strip() or _CODE_CONTINUATION.search(line))):
            run.append(line)
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out)


def split_units(answer: str) -> list[Unit]:
    """Sentences of the prose and meaningful lines of any code; code is read as evidence too."""
    units: list[Unit] = []
    answer = fence_bare_code(answer)
    for block in _FENCE.findall(answer):
        for line in block.splitlines():
            stripped = line.strip()
            if len(_WORD.findall(stripped)) >= 2 and not stripped.startswith(("import ", "from ")):
                units.append(Unit(stripped, spell_out_code(stripped), True))
    prose = _FENCE.sub("\n\n", answer)
    referent = None  # the last thing named in code, which a later "it" most likely means
    for piece in _SENTENCE_END.split(prose):
        sentence = " ".join(piece.split())
        if len(_WORD.findall(sentence)) >= 2:
            units.extend(_clauses(sentence, referent))
        named = _IDENTIFIER.findall(sentence)
        if named:
            referent = named[-1]
    return units


def _resolve_it(text: str, referent: str | None) -> str:
    """'you have to set it on your input data' names nothing; with the answer's last named thing in
    place of 'it' the sentence can meet the rubric's wording."""
    if referent is None:
        return text
    return _IT.sub(lambda m: referent + (" is" if m.group(0).endswith("'s") else ""), text)


def _clauses(sentence: str, referent: str | None = None) -> list[Unit]:
    """The sentence plus its clauses: a long sentence that makes several points is matched point by
    point, and a clause like ', never by calling forward' cannot flip the polarity of the rest."""
    whole = Unit(sentence, spell_out_code(_resolve_it(sentence, referent)), False)
    units = [whole]
    pieces = [p.strip(" ,;") for p in _CLAUSE_BREAK.split(sentence)]
    pieces = [p for p in pieces if len(_WORD.findall(p)) >= 3]
    if len(pieces) > 1:
        # A terse clause ("air molecules scatter short wavelengths more") has few function words
        # of its own, but it is part of a statement, not a list of buzzwords.
        units.extend(Unit(p, spell_out_code(_resolve_it(p, referent)), False, is_statement(whole)) for p in pieces)
    return units


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text.replace("'", ""))] + [
        w.lower() for w in re.findall(r"\b\w+n't\b", text)
    ]


@lru_cache(maxsize=65536)
def is_negated(text: str) -> bool:
    return any(w in NEGATIONS or w.endswith("nt") and w[:-2] + "n't" in NEGATIONS for w in words(text))


@lru_cache(maxsize=65536)
def is_statement(unit: Unit) -> bool:
    """A claim has function words or code structure; a comma-list of buzzwords has neither."""
    if unit.is_code:
        return True
    tokens = words(unit.text)
    list_like = unit.text.count(",") >= max(2, len(tokens) // 4)
    if (unit.in_statement or _CODE_STATEMENT.search(unit.text)) and not list_like:
        return True  # a statement's clause, or code written inline ("return grad_output.clamp(min=0)")
    if len(tokens) < 3:
        return False
    function_share = sum(t in FUNCTION_WORDS for t in tokens) / len(tokens)
    return function_share >= 0.12 and not (list_like and function_share < 0.2)


# "adds into .grad rather than replacing it", "unlike minimising log(1 - D)": what follows the marker
# is named in order to be rejected.
_CONTRAST = re.compile(r"\b(unlike|rather than|instead of|whereas|as opposed to|in contrast to)\b", re.I)


@lru_cache(maxsize=65536)
def is_contrastive(text: str) -> bool:
    return bool(_CONTRAST.search(text))


def says_nothing_new(unit: Unit, question_words: frozenset[str]) -> bool:
    """A sentence made only of the question's own words and vague ones ("callbacks are super useful",
    "forward is what runs when you do the forward") restates the question instead of answering it."""
    return not unit.is_code and content_words(unit.text) <= question_words | VAGUE_WORDS


def is_evasive(answer: str) -> bool:
    """'fine', 'I don't know', 'pass': no attempt at an answer."""
    left = _EVASION.sub(" ", answer)
    return len(_WORD.findall(left)) < 2 and len(answer) < 200


@lru_cache(maxsize=65536)
def content_words(text: str) -> frozenset[str]:
    """Cached: the scorer asks about the same sentences and rubric texts many times per answer."""
    return frozenset(w for w in words(spell_out_code(text)) if w not in FUNCTION_WORDS and len(w) > 2)


_TEMPORAL = frozenset({"before", "after", "between", "then", "first", "followed", "prior", "until", "once"})


@lru_cache(maxsize=65536)
def event_order(text: str) -> frozenset[tuple[str, str]]:
    """Ordered pairs (earlier, later) of the terms a sentence puts in sequence, when it speaks of
    sequence at all ("before", "after", "then"...): "call zero_grad before backward" gives
    (zero, backward), and so does "after zero_grad, run backward"; "step after backward" gives
    (backward, step). Empty for a sentence with no word of sequence. Terms used twice are left out:
    their order is ambiguous."""
    tokens = words(spell_out_code(text))
    if not _TEMPORAL & set(tokens):
        return frozenset()
    counts = Counter(tokens)
    at = {
        t: i for i, t in enumerate(tokens)
        if counts[t] == 1 and len(t) > 2 and t not in FUNCTION_WORDS and t not in _TEMPORAL
    }
    pairs = set()
    for x, i in at.items():
        for y, j in at.items():
            if i >= j:
                continue
            gap = tokens[i + 1 : j]
            # "x after y" reverses the written order; so does "before y, x" (a "before" just ahead of
            # the first), and "x between y and z" for y (not for z, after the "and").
            within = "between" in gap and "and" not in gap[gap.index("between") :]
            reversed_ = "after" in gap or within or "before" in tokens[max(0, i - 2) : i]
            pairs.add((y, x) if reversed_ else (x, y))
    return frozenset(pairs)


def order_contradicts(text: str, other: str) -> bool:
    """Both speak of sequence, and they put two shared terms in opposite orders."""
    mine, theirs = event_order(text), event_order(other)
    return any((later, earlier) in theirs for earlier, later in mine)
