"""Rubric vectors stored on disk: same vectors, no re-embedding across runs, never a hard failure."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evaluators.base import GradingTask
from evaluators.rubric import RubricScorer
from knowledge.embeddings import HashingEmbedder
from knowledge.loader import bank_index
from knowledge.stored_vectors import StoredEmbedder


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, remembering every text it was asked to embed."""

    def __init__(self, name: str = "hashing-256") -> None:
        self.name = name
        self.asked: list[str] = []

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.asked.extend(texts)
        return super().embed_batch(texts)


TEXTS = ["zero_grad resets gradients", "backward adds into .grad", "zero_grad resets gradients", "eval mode"]


def test_a_second_run_reads_the_vectors_instead_of_embedding_them(tmp_path: Path) -> None:
    first = CountingEmbedder()
    stored = StoredEmbedder(first, tmp_path / "vectors.sqlite3").embed_batch(TEXTS)
    assert np.array_equal(stored, first.embed_batch(TEXTS))
    assert sorted(set(first.asked)) == sorted(set(TEXTS))

    later = CountingEmbedder()  # a new process: nothing in memory, the file is all it has
    again = StoredEmbedder(later, tmp_path / "vectors.sqlite3").embed_batch([*TEXTS, "a new rubric point"])
    assert np.array_equal(again[: len(TEXTS)], stored)
    assert later.asked == ["a new rubric point"]


def test_vectors_of_another_model_are_never_reused(tmp_path: Path) -> None:
    StoredEmbedder(CountingEmbedder("model-a"), tmp_path / "v.sqlite3").embed_batch(TEXTS)
    other = CountingEmbedder("model-b")
    StoredEmbedder(other, tmp_path / "v.sqlite3").embed_batch(TEXTS)
    assert sorted(set(other.asked)) == sorted(set(TEXTS))


def test_a_store_that_cannot_be_opened_only_costs_speed(tmp_path: Path, caplog) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the store's folder should be")
    inner = CountingEmbedder()
    with caplog.at_level(logging.WARNING):
        got = StoredEmbedder(inner, blocker / "vectors.sqlite3").embed_batch(TEXTS)
    assert np.array_equal(got, inner.embed_batch(TEXTS))
    assert "stored rubric vectors unavailable" in caplog.text


def test_the_scorer_gives_the_same_evaluation_with_stored_rubric_vectors(tmp_path: Path) -> None:
    question = bank_index()["zero-grad"]
    answer = "zero_grad clears the .grad of every parameter, because backward adds into it rather than replacing it."
    task = GradingTask.from_question(question, answer)
    plain = RubricScorer(HashingEmbedder()).evaluate(task)
    for _ in range(2):  # the first run writes the store, the second reads it
        embedder = CountingEmbedder()
        scorer = RubricScorer(embedder, rubric_embedder=StoredEmbedder(embedder, tmp_path / "v.sqlite3"))
        assert scorer.evaluate(task) == plain
    rubric_texts = {t for p in question.rubric for t in [p.description, *p.evidence]}
    assert embedder.asked and not set(embedder.asked) & rubric_texts  # the rubric's vectors came from the store


def test_word_pieces_are_stored_beside_the_vectors(tmp_path: Path) -> None:
    first = CountingEmbedder()
    texts = ["backward adds into .grad, so clear it", "eval mode"]
    vectors, pieces = StoredEmbedder(first, tmp_path / "vectors.sqlite3").read(texts)
    assert [p.words for p in pieces] == [["backward", "adds", "into", "grad", "so", "clear", "it"], ["eval", "mode"]]
    later = CountingEmbedder()
    again, read_back = StoredEmbedder(later, tmp_path / "vectors.sqlite3").read(texts[::-1])
    assert later.asked == []  # neither the texts nor their words were embedded again
    assert np.array_equal(again, vectors[::-1])
    assert [p.words for p in read_back] == [p.words for p in pieces[::-1]]
    assert all(np.array_equal(a.vectors, b.vectors) for a, b in zip(read_back, pieces[::-1], strict=True))
