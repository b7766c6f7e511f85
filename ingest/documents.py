"""Parse raw interview-question documents (blog posts, READMEs, cheat sheets) into candidate questions.

The documents are scraped text with inconsistent structure, so parsing is a line walker with a
few generic rules rather than one grammar: see ingest.formats for the text-level rules.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from ingest.formats import (
    ANSWER_RE,
    MD_HEADING_RE,
    NUMBERED_RE,
    QA_QUESTION_RE,
    QA_SAME_LINE_ANSWER_RE,
    QUOTED_TASK_RE,
    RULE_RE,
    Heading,
    classify_heading,
    clean_question,
    continues_question,
    is_complete,
    is_question_like,
    looks_like_title,
    reline_tagged,
    split_fences,
    strip_markup,
    title_slug,
)
from ingest.topics import heading_topic


class DocumentError(ValueError):
    """A raw document cannot be used: unreadable, not UTF-8 text, or holding no questions."""


@dataclass(frozen=True)
class ParsedQuestion:
    source: str
    section: str | None
    topic: str | None  # the bank topic the nearest heading that names one gives it
    number: int | None
    ref: str
    text: str
    difficulty: int | None
    answer: str


@dataclass
class _Draft:
    section: str | None
    topic: str | None
    number: int | None
    ordinal: int  # place among its section's unnumbered questions: the ref of a question the document does not number
    text: str
    difficulty: int | None
    indent: int
    wrapping: bool  # the question text may still continue on the next line
    title: str | None  # the nearest title line above, a fallback section name
    answer: list[str] = field(default_factory=list)


class _Walker:
    """Reads a document line by line; a question's answer runs until the next structural break."""

    def __init__(self) -> None:
        self.drafts: list[_Draft] = []
        self.current: _Draft | None = None
        self.kind = "questions"
        self.section: str | None = None
        self.level: int | None = None
        self.counts: Counter[str | None] = Counter()  # questions per section: the slugs taken
        self.unnumbered: Counter[str | None] = Counter()  # unnumbered questions per section, for their refs
        # Markdown depth of the heading that named the section (0: a plain line); a neutral heading below it names
        # a section of its own, so "# PyTorch Questions" over "## Autograd" does not name Autograd's questions.
        self.section_depth: int | None = None
        self.headings: list[tuple[int, str | None]] = []  # open headings: depth and the bank topic each names
        self.last: int | None = None
        self.heading_since_last = False
        self.section_since_last = False
        self.title: str | None = None
        self.restarted = False  # numbering restarted: refs must carry the section
        self.pending: int | None = None  # "• 7." alone on its line, question on a later one
        self.pending_mark = False  # "Q:" alone on its line, question on the next one

    def feed(self, line: str, code: bool) -> None:
        stripped = line.strip()
        if code or not stripped:
            return self._answer(line, code)
        if self.current and self.current.wrapping and self._continue(stripped):
            return None
        indent = len(line) - len(line.lstrip())
        if self.current and indent < self.current.indent:  # an outdent leaves the question's block
            self._close()
        if RULE_RE.match(stripped):
            return self._close()
        if self.pending is not None and self._take_pending(stripped, indent):
            return None
        if self.pending_mark:
            self.pending_mark = False
            return self._marked_question(strip_markup(stripped).strip(), indent)
        md = MD_HEADING_RE.match(stripped)
        body = strip_markup(md["body"] if md else stripped).strip()
        if self._numbered(body, indent) or self._marked(body, indent):
            return None
        heading = self._heading(body, markdown=bool(md))
        if heading:
            return self._on_heading(heading, body, indent, len(md["marks"]) if md else 0)
        if self.kind == "real" and self._task(stripped, indent):
            return None
        return self._answer(line, code)

    def _continue(self, stripped: str) -> bool:
        assert self.current is not None
        if not continues_question(self.current.text, stripped):
            self.current.wrapping = False
            return False
        text, difficulty = clean_question(f"{self.current.text} {stripped}")
        self.current.text = text
        self.current.difficulty = difficulty or self.current.difficulty
        self.current.wrapping = not is_complete(text) and difficulty is None
        return True

    def _accepts(self, number: int) -> bool:
        """The next number in sequence, or a restart at 1 after a heading (per-section numbering)."""
        if self.kind == "skip":
            return False
        if self.last is None or number == self.last + 1:
            return True
        return number == 1 and self.heading_since_last

    def _numbered(self, body: str, indent: int) -> bool:
        match = NUMBERED_RE.match(body)
        if not match:
            return False
        if self.current is not None and indent > self.current.indent:
            return False  # a numbered list inside the answer (its steps), not the next question
        if not self._accepts(int(match["num"])):
            return self._out_of_sequence(match["rest"], int(match["num"]), indent)
        if not match["rest"].strip():
            self._close()
            self.pending = int(match["num"])
            return True
        return self._start_if_question(match["rest"], int(match["num"]), indent)

    def _marked(self, body: str, indent: int) -> bool:
        """A question marked "Q:" without a number: a question whatever its wording, as the mark says."""
        match = QA_QUESTION_RE.match(body)
        if not match or self.kind == "skip" or (self.current is not None and indent > self.current.indent):
            return False
        if not match["rest"].strip():
            self._close()
            self.pending_mark = True
            return True
        self._marked_question(match["rest"], indent)
        return True

    def _marked_question(self, rest: str, indent: int) -> None:
        question, *answer = QA_SAME_LINE_ANSWER_RE.split(rest, maxsplit=1)
        text, difficulty = clean_question(question)
        self._start(text, None, difficulty, indent)
        assert self.current is not None
        self.current.wrapping = not answer and difficulty is None and not is_complete(text)  # "Q: ... leaf tensor"
        self.current.answer.extend(answer)

    def _out_of_sequence(self, raw: str, number: int, indent: int) -> bool:
        """A question whose number skips ahead (an item deleted from the list): taken when it plainly is
        one, a line ending in "?", rather than read as answer text with every question after it. A number
        that goes back stays answer text ("Steps: 1. Why zero the gradients? 2. ...")."""
        text, difficulty = clean_question(raw)
        if self.kind == "skip" or self.last is None or number <= self.last or not text.endswith(("?", "\uff1f")):
            return False
        self._start(text, number, difficulty, indent)
        return True

    def _take_pending(self, stripped: str, indent: int) -> bool:
        number, self.pending = self.pending, None
        return number is not None and self._start_if_question(stripped, number, indent)

    def _start_if_question(self, raw: str, number: int, indent: int) -> bool:
        text, difficulty = clean_question(raw)
        if not is_question_like(text):
            return False
        if self.last is not None and number != self.last + 1:
            self.restarted = True
            if not self.section_since_last and self.title:  # restarted under an unlabelled title
                self.section = self._unique(title_slug(self.title))
                self._drop_title_line()
        self._start(text, number, difficulty, indent)
        return True

    def _drop_title_line(self) -> None:
        """The title was kept as answer text until the restart showed it heads a new section."""
        previous = self.current or (self.drafts[-1] if self.drafts else None)
        if previous is None:
            return
        while previous.answer and not previous.answer[-1].strip():
            previous.answer.pop()
        if previous.answer and strip_markup(previous.answer[-1]).strip() == self.title:
            previous.answer.pop()

    def _heading(self, body: str, *, markdown: bool) -> Heading | None:
        if not markdown and (NUMBERED_RE.match(body) or not looks_like_title(body)):
            return None
        heading = classify_heading(body, markdown=markdown)
        self.title = body  # names the section if numbering restarts under a heading without a slug
        if heading is None:
            self.heading_since_last = True  # an unlabelled title may still head a renumbered block
        return heading

    def _on_heading(self, heading: Heading, body: str, indent: int, depth: int) -> None:
        self._close()
        self.pending = None
        self.heading_since_last = True
        self._open(depth, heading_topic(body))
        if heading.kind == "neutral":
            if self.section_depth is not None and depth > self.section_depth:  # "## Autograd" under the title
                self.section = self._unique(title_slug(body))
                self.section_since_last = True
            return
        self.kind = heading.kind
        if heading.kind == "skip":
            return
        # Several "X vs Y?" headings share one comparison section; other sections must not merge.
        self.section = heading.slug if heading.kind != "questions" else self._unique(heading.slug)
        self.section_since_last = True
        self.section_depth = depth
        self.level = heading.difficulty
        if heading.kind == "comparison":  # "PyTorch vs TensorFlow – Which One Should You Pick?"
            self._start(clean_question(body)[0], None, None, indent)

    def _open(self, depth: int, topic: str | None) -> None:
        """A heading closes those at its depth or deeper (a plain line, depth 0, closes all)."""
        while self.headings and self.headings[-1][0] >= depth:
            self.headings.pop()
        self.headings.append((depth, topic))

    def _topic(self) -> str | None:
        """The nearest open heading that names a topic: "### Hooks" under "## Autograd" is still autograd."""
        return next((topic for _, topic in reversed(self.headings) if topic), None)

    def _unique(self, slug: str | None, taken: Collection[str | None] | None = None) -> str | None:
        """A slug reused by a later section gets a suffix, so refs stay unique."""
        taken = self.counts if taken is None else taken
        if slug is None or slug not in taken:
            return slug
        n = 2
        while f"{slug}-{n}" in taken:
            n += 1
        return f"{slug}-{n}"

    def _task(self, stripped: str, indent: int) -> bool:
        match = QUOTED_TASK_RE.match(stripped)
        if match:
            self._start(clean_question(match["task"])[0], None, None, indent)
        return bool(match)

    def _start(self, text: str, number: int | None, difficulty: int | None, indent: int) -> None:
        self._close()
        self.counts[self.section] += 1
        if number is None:
            self.unnumbered[self.section] += 1
        wrapping = number is not None and difficulty is None and not is_complete(text)
        level = difficulty or self.level
        ordinal = self.unnumbered[self.section] if number is None else 0
        self.current = _Draft(
            self.section, self._topic(), number, ordinal, text, level, indent, wrapping, self.title
        )
        self.section_since_last = False
        if number is not None:
            self.last, self.heading_since_last = number, False

    def _answer(self, line: str, code: bool) -> None:
        if self.current is None:
            return
        self.current.wrapping = False
        self.current.answer.append(line if code else ANSWER_RE.sub("", line, count=1))

    def _close(self) -> None:
        if self.current is not None:
            self.drafts.append(self.current)
            self.current = None

    def finish(self) -> list[_Draft]:
        """Close the last question; once numbering restarted, blocks without a slug take their title's."""
        self._close()
        if self.restarted:
            for draft in self.drafts:
                if draft.section is None and draft.number is not None and draft.title:
                    draft.section = title_slug(draft.title)
            self._part_unnumbered()
        return self.drafts

    def _part_unnumbered(self) -> None:
        """Refs carry sections here, so "Q:" cards after the Data list would be refs data#1, data#2 like the
        list's own items: a section's unnumbered questions are named as a block of their own (data-2)."""
        listed = {d.section for d in self.drafts if d.number is not None and d.section}
        taken = {d.section for d in self.drafts} | set(self.counts)
        blocks: dict[str, str | None] = {}
        for draft in self.drafts:
            if draft.number is None and draft.section in listed:
                assert draft.section is not None
                if draft.section not in blocks:
                    blocks[draft.section] = self._unique(draft.section, taken)
                    taken.add(blocks[draft.section])
                draft.section = blocks[draft.section]


def _answer_text(lines: list[str]) -> str:
    text = textwrap.dedent("\n".join(line.rstrip() for line in lines)).strip()
    return re.sub(r"\n{3,}", "\n\n", text)


def _ref(draft: _Draft, sectioned: bool) -> str:
    if draft.number is None:
        return f"{draft.section or 'item'}#{draft.ordinal}"
    if sectioned and draft.section:
        return f"{draft.section}#{draft.number}"
    return f"#{draft.number}"


def parse_document(text: str, *, source: str) -> list[ParsedQuestion]:
    """Candidate questions of one raw document, in document order; [] when there are none."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    walker = _Walker()
    for code, chunk in reline_tagged(split_fences(text)):
        for line in chunk.split("\n"):
            walker.feed(line.expandtabs(4), code)
    drafts = walker.finish()
    return [
        ParsedQuestion(
            source=source,
            section=d.section,
            topic=d.topic,
            number=d.number,
            ref=_ref(d, walker.restarted),
            text=d.text,
            difficulty=d.difficulty,
            answer=_answer_text(d.answer),
        )
        for d in drafts
        if d.text
    ]


def parse_file(path: Path, *, source: str | None = None) -> list[ParsedQuestion]:
    """Parse one document file; DocumentError (one line) when it cannot be read or holds no questions. Its
    questions name the file by `source`, its file name unless given."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read file ({exc.strerror or exc})") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from exc
    if "\x00" in text:
        raise DocumentError(f"{path}: binary file, not a text document")
    questions = parse_document(text, source=source or path.name)
    if not questions:
        raise DocumentError(f"{path}: no questions found")
    return questions
