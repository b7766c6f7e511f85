"""Text-level helpers for ingest.documents: fences, difficulty tags, headings, question shape.

Everything here is a pure function of strings, so each rule can be tested on its own and the
line walker in ingest.documents stays a small state machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LEVELS = {
    "easy": 1, "beginner": 1, "basic": 1,
    "medium": 2, "intermediate": 2,
    "hard": 3, "advanced": 3, "expert": 3,
}  # fmt: skip
FRAMEWORKS = ("pytorch", "tensorflow", "keras", "jax")

# An emoji (symbols/dingbats or the emoji planes) directly before a level word, e.g. "🔥 Hard".
# The level word must not run on into lowercase letters, yet may run into "Answer:" ("HardAnswer:").
_EMOJI = r"[\u2190-\u2bff\U0001f000-\U0001faff]\ufe0f?"
_LEVEL_WORD = r"(?P<level>[Ee]asy|[Mm]edium|[Hh]ard|[Bb]eginner|[Ii]ntermediate|[Aa]dvanced)(?![a-z])"
# In running text a tag must end its line or run into "Answer", so "✅ Beginner-friendly" in a table
# is not taken for one.
TAG_RE = re.compile(rf"{_EMOJI}\s*{_LEVEL_WORD}(?=[ \t]*(?:\n|$|Answer\b))")
_TAG_END_RE = re.compile(rf"\s*{_EMOJI}\s*{_LEVEL_WORD}\s*$")
# An emoji alone at the end of a question is a tag when it is one of a known scheme: the seeds' own
# (⚡ Easy, 📊 Medium, 🔥 Hard, written there with the word) and the traffic lights cards use bare.
BARE_TAG_LEVELS = {"\U0001f7e2": 1, "\U0001f7e1": 2, "\U0001f534": 3, "\u26a1": 1, "\U0001f4ca": 2, "\U0001f525": 3}
_BARE_TAG_END_RE = re.compile(rf"\s*(?P<emoji>[{''.join(BARE_TAG_LEVELS)}])\ufe0f?\s*$")

# "12. What", "12) What", "• 7.", "Q3: What", and the dotless "3 How does" of seed 001.
NUMBERED_RE = re.compile(
    r"^(?:[•*·▪◦‣–-]\s*)?(?:Q(?:uestion)?\s*)?(?P<num>\d{1,3})(?:[.):](?=\s|$)\s*|\s+|$)(?P<rest>.*)$"
)
ANSWER_RE = re.compile(r"^\s*(?:\*\*)?(?:answer|ans|a)\s*\d*\s*(?:\*\*)?\s*:\s*(?:\*\*)?\s*", re.IGNORECASE)
# "Q: ..." / "Question: ..." with no number, as notes and flash cards are written (answers after "A:"); the
# question may wait on the next line ("Q:" alone), and its answer may follow on the same line ("? A: ...").
QA_QUESTION_RE = re.compile(r"^(?:[-*•]\s*)?(?:Q|Question)\s*[:)]\s*(?P<rest>.*)$", re.IGNORECASE)
QA_SAME_LINE_ANSWER_RE = re.compile(r"(?<=[?？])\s+A\s*:\s*")
MD_HEADING_RE = re.compile(r"^(?P<marks>#{1,6})\s+(?P<body>.*?)\s*#*\s*$")
RULE_RE = re.compile(r"^(?:-{3,}|\*{3,}|_{3,})$")
FENCE_RE = re.compile(r"^\s*(?P<mark>`{3,}|~{3,})")
QUOTED_TASK_RE = re.compile(r"^[-•*·]\s*[“\"‘'](?P<task>.+?)[”\"’']\s*$")
# A question wrapped across lines continues with a lowercase word or a lone "?"/")" (seed 003).
WRAP_RE = re.compile(r"^[a-z?)\]]")

_QUESTION_STARTS = frozenset(
    "what why how when where which who whose whom is are was were can could do does did should would "
    "will may might explain describe define compare contrast implement write build design create show "
    "give list name discuss difference differences distinguish walk tell outline illustrate demonstrate "
    "derive identify summarize summarise suppose given assume consider debug optimize optimise prove "
    "elaborate justify propose sketch".split()
)
_SMALL_WORDS = frozenset(
    "a an the and or nor but of in on at to for by with from into via vs versus as per".split()
)
_SKIP_RE = re.compile(
    r"\b(?:tips?|faqs?|frequently asked|resources?|who\b.*\bfor|mistakes?|conclusions?|final thoughts"
    r"|summary|cheat ?sheet|further reading|references|table of contents|about the author)\b"
)
_REAL_RE = re.compile(
    r"\breal(?:[- ]world)?[- ]interviews?\b|\binterview experiences?\b|\bactual interviews?\b"
)
_VERSUS_RE = re.compile(r"\b(?:vs\.?|versus)(?:\s|$)")
_PICK_RE = re.compile(r"\b(?:which|pick|choose|better)\b")
_QUESTIONS_RE = re.compile(r"\bquestions?\b|\binterviews?\b|\bq\s*[&/]\s*a\b")


@dataclass(frozen=True)
class Heading:
    """A heading that changes how what follows is read.

    kind: "questions" (numbered questions follow), "skip" (tips, FAQs, resources...), "comparison"
    (the heading is itself a question), "real" (quoted tasks follow) or "neutral" (a markdown heading
    that ends the current answer but says nothing about the section).
    """

    kind: str
    slug: str | None = None
    difficulty: int | None = None


def strip_markup(text: str) -> str:
    """Drop HTML tags, bold markers, backticks and link targets: the words are what count.

    "__" is left alone: in PyTorch text it is far more often __init__ or __len__ than bold."""
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return text.replace("**", "").replace("`", "")


def clean_question(raw: str) -> tuple[str, int | None]:
    """One-line question text and the difficulty of a trailing emoji tag (the tag is removed)."""
    text = " ".join(strip_markup(raw).split())
    difficulty = None
    tag = _TAG_END_RE.search(text)
    if tag:
        difficulty = LEVELS[tag["level"].lower()]
        text = text[: tag.start()]
    elif bare := _BARE_TAG_END_RE.search(text):
        difficulty = BARE_TAG_LEVELS[bare["emoji"]]
        text = text[: bare.start()]
    # Wrapping leaves "torch.nn.Module ?"; only punctuation that ends a word is pulled back.
    text = re.sub(r"\s+([?!.,;:])(?=\s|$)", r"\1", text).strip()
    if len(text) > 1 and text[0] in '“"' and text[-1] in '”"':
        text = text[1:-1].strip()
    return text, difficulty


def is_question_like(text: str) -> bool:
    """A question ends with "?" (or a full-width "？") or opens with an interrogative or a task verb
    ("Explain", "Implement")."""
    if text.endswith(("?", "\uff1f")):
        return True
    first = re.match(r"[A-Za-z]+", text)
    return first is not None and first.group(0).lower() in _QUESTION_STARTS


def is_complete(text: str) -> bool:
    """Whether a question line already ends its sentence (so the next line cannot continue it)."""
    return text.endswith(("?", ".", "!", ":", "\uff1f"))


_DANGLING = _SMALL_WORDS | frozenset("is are was were does do did can should would will between".split())


def continues_question(question: str, line: str) -> bool:
    """Whether `line` is the rest of a question wrapped across lines ("Explain model.train()" /
    "vs model.eval()"): it opens in lowercase or with "?", or the question stops on a word like "is"."""
    if len(line) > 80 or line[0] in "-•*>|#":
        return False
    words = question.split()
    if WRAP_RE.match(line):
        return True
    # After a dangling word, a line that is a sentence of its own ("It disables tracking.") is the answer.
    return bool(words) and words[-1].lower() in _DANGLING and not line.endswith((".", "!"))


def _first_alpha(word: str) -> str:
    return next((c for c in word if c.isalpha()), "")


def looks_like_title(text: str) -> bool:
    """A plain-text heading: short, Title Case, no sentence punctuation, not a list item or table row."""
    text = text.strip()
    if not text or len(text) > 100 or text[-1] in ".:;,!" or "|" in text or text[0] in "-•*>":
        return False
    words = [w for w in text.split() if _first_alpha(w)]
    if not words or len(words) > 14 or not _first_alpha(words[0]).isupper():
        return False
    key = [w for w in words[1:] if re.sub(r"\W", "", w.lower()) not in _SMALL_WORDS]
    capitalised = sum(1 for w in key if _first_alpha(w).isupper())
    return not key or capitalised / len(key) >= 0.8


def section_slug(text: str) -> tuple[str | None, int | None]:
    """Slug "level-framework" from a heading ("Beginner-Level PyTorch ..." -> beginner-pytorch)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    level = next((w for w in words if w in LEVELS), None)
    parts = ([level] if level else []) + [f for f in FRAMEWORKS if f in words]
    return ("-".join(parts) or None), (LEVELS[level] if level else None)


_FILLER = frozenset(
    "interview interviews question questions answer answers q a top level section part".split()
)


def title_slug(text: str) -> str | None:
    """Slug for an unlabelled title ("PyTorch Basics" -> pytorch-basics), used when numbering restarts
    under headings that name no level or framework."""
    slug, _ = section_slug(text)
    if slug:
        return slug
    words = re.findall(r"[a-z0-9]+", text.lower())
    kept = [w for w in words if w not in _FILLER and w not in _SMALL_WORDS and not w.isdigit()]
    return "-".join(kept[:6]) or None


def classify_heading(text: str, *, markdown: bool) -> Heading | None:
    """What a heading announces.

    Plain lines need a telling keyword; markdown headings are always structure."""
    low = text.lower()
    if _SKIP_RE.search(low):
        return Heading("skip")
    if _REAL_RE.search(low):
        return Heading("real", "real-interviews")
    if _VERSUS_RE.search(low) and (low.rstrip().endswith("?") or _PICK_RE.search(low)):
        return Heading("comparison", "comparison")
    slug, difficulty = section_slug(text)
    if _QUESTIONS_RE.search(low) or (markdown and difficulty):
        return Heading("questions", slug, difficulty)
    return Heading("neutral") if markdown else None


def split_fences(text: str) -> list[tuple[bool, str]]:
    """Split into (is_code, chunk). Code is never parsed for questions, with one exception:
    a fence holding nothing but one numbered question is a "question box" (seed 002 boxes every
    question that way), so it is unwrapped into text."""
    chunks: list[tuple[bool, list[str]]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        fence = FENCE_RE.match(lines[i])
        if not fence:
            _append(chunks, False, lines[i])
            i += 1
            continue
        end = _fence_end(lines, i + 1, fence["mark"])
        body = lines[i + 1 : end]
        box = _question_box(body)
        if box is not None:
            _append(chunks, False, box)
        else:
            for line in lines[i : end + 1]:
                _append(chunks, True, line)
        i = end + 1
    return [(code, "\n".join(part)) for code, part in chunks]


def _append(chunks: list[tuple[bool, list[str]]], code: bool, line: str) -> None:
    if chunks and chunks[-1][0] == code:
        chunks[-1][1].append(line)
    else:
        chunks.append((code, [line]))


def _fence_end(lines: list[str], start: int, mark: str) -> int:
    """Index of the closing fence; an unclosed fence runs to the end (and stays code)."""
    for j in range(start, len(lines)):
        if lines[j].strip().startswith(mark[0] * len(mark)) and not lines[j].strip().strip(mark[0]):
            return j
    return len(lines)


def _question_box(body: list[str]) -> str | None:
    filled = [line for line in body if line.strip()]
    if len(filled) != 1:
        return None
    match = NUMBERED_RE.match(filled[0].strip())
    if not match or not is_question_like(clean_question(match["rest"])[0]):
        return None
    return filled[0]


def reline_tagged(chunks: list[tuple[bool, str]]) -> list[tuple[bool, str]]:
    """Put every emoji-tagged question on a line of its own.

    Seed 001 jams each question number against the previous answer ("b = t.numpy()3 How does\\n
    autograd work? 🔥 HardAnswer:"). The tag reliably ends a question, and the expected next number,
    searched backwards from the tag, marks where it starts. Untagged text passes through unchanged.
    """
    expected = 1
    out = []
    for code, chunk in chunks:
        if not code:
            chunk, expected = _reline(chunk, expected)
        out.append((code, chunk))
    return out


def _reline(text: str, expected: int) -> tuple[str, int]:
    parts: list[str] = []
    pos = 0
    for tag in TAG_RE.finditer(text):
        start = _number_before(text, expected, pos, tag.start())
        if start is None and expected != 1:  # numbering may restart in a new section
            start = _number_before(text, 1, pos, tag.start())
            expected = 1 if start is not None else expected
        if start is None:
            continue
        # Questions without a tag come between tagged ones ("2. What is autograd?"): a later number at a
        # line start, after the expected one's place, is where this tagged question really starts.
        for later in range(expected + 1, expected + 10):
            found = _number_before(text, later, start, tag.start(), line_start_only=True)
            if found is not None:
                start, expected = found, later
        question = " ".join(text[start : tag.end()].split())
        parts += [text[pos:start].rstrip(" \t"), "\n", question, "\n"]
        pos = tag.end()
        expected += 1
    parts.append(text[pos:])
    return "".join(parts), expected


def _number_before(text: str, number: int, lo: int, hi: int, *, line_start_only: bool = False) -> int | None:
    """Start of `number` as a question number in text[lo:hi], nearest the tag.

    Prefer a number at a line start or glued to punctuation ("x.grad.4 What"): a number after a
    space is more likely part of the question itself ("the 3 modes"), so it is only a fallback.
    """
    window_start = max(lo, hi - 400)  # questions are short; an old match far back is answer text
    pattern = re.compile(rf"(?<![0-9A-Za-z_]){number}[.):]?(?=\s)")
    found = [m.start() for m in pattern.finditer(text, window_start, hi)]
    glued = [s for s in found if s == 0 or text[s - 1] not in " \t"]
    candidates = glued if line_start_only else glued or found
    return candidates[-1] if candidates else None
