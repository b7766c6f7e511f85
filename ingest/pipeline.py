"""Ingest the curated bank into Chroma."""

from __future__ import annotations

from collections.abc import Sequence

from knowledge.schema import Question
from knowledge.vectorstore import QuestionStore, UpsertReport


def ingest_bank(store: QuestionStore, questions: Sequence[Question]) -> UpsertReport:
    """Embed new or changed entries; unchanged ones cost nothing."""
    return store.upsert(questions)
