"""Raw question documents into draft bank entries, with duplicates of the bank marked."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from ingest.documents import ParsedQuestion, parse_file
from knowledge.vectorstore import QuestionStore

# Fused similarity above which a parsed question is taken to ask what a bank entry asks.
# Chosen on the seeds (see tests/test_ingest.py): true duplicates score above it.
DUPLICATE_THRESHOLD = 0.7


@dataclass(frozen=True)
class DraftCandidate:
    parsed: ParsedQuestion
    duplicate_of: str | None
    similarity: float


def classify_documents(
    store: QuestionStore,
    paths: Sequence[Path],
    *,
    on_file: Callable[[Path], None] | None = None,
) -> list[DraftCandidate]:
    """Parse every document (all must parse before anything is written) and match against the bank."""
    return match_bank(store, parse_documents(paths, on_file=on_file))


def parse_documents(paths: Sequence[Path], *, on_file: Callable[[Path], None] | None = None) -> list[ParsedQuestion]:
    """Every document's questions; the first that cannot be used is a DocumentError. Needs no search index, so a
    bad document is said before the bank is indexed."""
    parsed: list[ParsedQuestion] = []
    names = Counter(path.name for path in paths)
    for path in paths:
        # Two documents of one name (d1/notes.md, d2/notes.md) are told apart by the path given.
        parsed.extend(parse_file(path, source=path.name if names[path.name] == 1 else str(path)))
        if on_file:
            on_file(path)
    return parsed


def match_bank(store: QuestionStore, parsed: Sequence[ParsedQuestion]) -> list[DraftCandidate]:
    """Each parsed question with the bank entry it duplicates, if any."""
    candidates = []
    for item in parsed:
        hits = store.search(item.text, k=1)
        best = hits[0] if hits else None
        similarity = best.score if best else 0.0
        duplicate = best.id if best and similarity >= DUPLICATE_THRESHOLD else None
        candidates.append(DraftCandidate(parsed=item, duplicate_of=duplicate, similarity=similarity))
    return candidates


def draft_entry(candidate: DraftCandidate) -> dict[str, object]:
    """A skeleton bank entry for a curator to complete; fields that need judgement are left empty."""
    item = candidate.parsed
    return {
        "id": None,
        "question": item.text,
        "framework": None,
        "topic": item.topic,
        "difficulty": item.difficulty,
        "kind": "concept",
        "reference_answer": item.answer or None,
        "rubric": [],
        "sources": [{"seed": item.source, "ref": item.ref}],
    }


# What a curator fills in before the drafts validate; the schema's rules, in the words of the fields.
DRAFT_HEADER = """\
# Draft entries for curation. Fill in, for every entry:
#   id: a unique slug (lowercase words joined by hyphens, e.g. tensor-stride)
#   framework: pytorch, tensorflow or general
#   topic: where still null, one of frameworks, tensors, autograd, modules, training-loop, data-loading,
#          optimisation, regularisation, architectures, transfer-learning, performance-memory, distributed,
#          deployment, debugging, tensorflow-core (a document heading that names a topic has filled it in)
#   difficulty: 1, 2 or 3 (where still null)
#   reference_answer: a model answer of 40 characters or more (where still null)
#   rubric: 3 to 7 points, each {id: slug, description: the idea (10+ characters), weight: above 0 up to 5,
#           evidence: [phrasings that show the idea]}
# `sources` names the document each question came from. Put this file in a directory of its own (a question pack)
# and check it with `INTERVIEWER_BANK_DIR=<that directory> interviewer bank validate`; the project's own bank
# (knowledge/bank/) cites only its seed files, so an entry moved there drops or replaces its `sources`.
"""


def write_drafts(candidates: Sequence[DraftCandidate], out: Path) -> int:
    """Write the non-duplicates as draft YAML (atomically: a temp file renamed into place)."""
    fresh = [draft_entry(c) for c in candidates if c.duplicate_of is None]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(
        DRAFT_HEADER + yaml.safe_dump(fresh, sort_keys=False, allow_unicode=True),
        encoding="utf-8",
    )
    tmp.replace(out)
    return len(fresh)
