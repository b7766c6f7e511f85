"""Builds the long-lived components from settings, once per process."""

from __future__ import annotations

from functools import lru_cache

from app.config import Settings, get_settings
from knowledge.embeddings import Embedder, get_embedder
from knowledge.vectorstore import QuestionStore, open_store


def embedder_for(settings: Settings) -> Embedder:
    return get_embedder(settings.embedder)


def store_for(settings: Settings) -> QuestionStore:
    return open_store(
        data_dir=str(settings.data_dir),
        host=settings.chroma_host,
        port=settings.chroma_port,
        base_name=settings.chroma_collection,
        embedder=embedder_for(settings),
    )


@lru_cache
def get_store() -> QuestionStore:
    """The process's question store (Chroma clients are meant to be reused)."""
    return store_for(get_settings())
