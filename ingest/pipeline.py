"""Ingest the curated bank into Chroma."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from knowledge.schema import Question
from knowledge.vectorstore import QuestionStore, UpsertReport


def ingest_bank(
    store: QuestionStore, questions: Sequence[Question], *, on_embedded: Callable[[int, int], None] | None = None
) -> UpsertReport:
    """Embed new or changed entries; unchanged ones cost nothing."""
    return store.upsert(questions, on_embedded=on_embedded)
