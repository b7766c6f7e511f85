"""Shared fixtures: isolated data directories, settings, and the real embedded store."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import get_settings
from app.llm_breaker import forget_breakers

REPO = Path(__file__).resolve().parents[1]
SEEDS = REPO.parent / "shared" / "seeds"
SCIENTSBANK = REPO.parent / "shared" / "datasets" / "scientsbank" / "scientsbank.csv"


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test gets its own data directory, freshly read settings and LLM breakers."""
    for key in list(os.environ):
        if key.startswith("INTERVIEWER_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("INTERVIEWER_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    forget_breakers()  # a server one test left unanswered must not be skipped in the next (its port reused)
    yield
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def bank():
    from app.config import Settings
    from knowledge.loader import load_bank

    return load_bank(Settings().bank_dir)


@pytest.fixture(scope="session")
def embedder():
    from knowledge.embeddings import get_embedder

    return get_embedder("minilm")


@pytest.fixture(scope="session")
def ingested_store(tmp_path_factory: pytest.TempPathFactory, bank, embedder):
    """The whole bank embedded once into an on-disk Chroma for the session."""
    from knowledge.vectorstore import open_store

    store = open_store(data_dir=str(tmp_path_factory.mktemp("chroma")), embedder=embedder)
    store.upsert(bank)
    return store


@pytest.fixture(scope="module")
def relu(bank):
    """The custom-autograd ReLU entry, which the judge and LLM-server tests grade against."""
    return next(q for q in bank if q.id == "relu-autograd-function")


@pytest.fixture(scope="module")
def offline(embedder):
    """The offline scorer the LLM judge falls back to."""
    from evaluators.rubric import RubricScorer

    return RubricScorer(embedder)
