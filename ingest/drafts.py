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
    parsed: list[ParsedQuestion] = []
    names = Counter(path.name for path in paths)
    for path in paths:
        # Two documents of one name (d1/notes.md, d2/notes.md) are told apart by the path given.
        parsed.extend(parse_file(path, source=path.name if names[path.name] == 1 else str(path)))
        if on_file:
            on_file(path)
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
        "topic": None,
        "difficulty": item.difficulty,
        "kind": "concept",
        "reference_answer": item.answer or None,
        "rubric": [],
        "sources": [{"seed": item.source, "ref": item.ref}],
    }


def write_drafts(candidates: Sequence[DraftCandidate], out: Path) -> int:
    """Write the non-duplicates as draft YAML (atomically: a temp file renamed into place)."""
    fresh = [draft_entry(c) for c in candidates if c.duplicate_of is None]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(
        "# Draft entries for curation: fill id, framework, topic, rubric, then move into knowledge/bank/.\n"
        + yaml.safe_dump(fresh, sort_keys=False, allow_unicode=True),
        encoding="utf-8",
    )
    tmp.replace(out)
    return len(fresh)
