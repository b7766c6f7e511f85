"""The stored bank held in memory for ranking: every entry's vector, metadata and BM25 terms.

A curated bank is hundreds of entries, so an exact cosine over all of them is one matrix product
(~0.1 ms), quicker than an approximate Chroma query, and BM25 can fuse over every entry instead of
a pool the embedding chose: a pool of 20 left out entries that BM25 ranked first. Chroma stays the
store of record; this is read from it once per process and again after each upsert."""

from __future__ import annotations

from typing import Any

import numpy as np

from knowledge.lexical import BM25Index


class RankingIndex:
    def __init__(self, *, ids: list[str], vectors: Any, metadatas: list[dict[str, Any]], documents: list[str]) -> None:
        self.ids = ids
        self.metadatas = metadatas
        self.vectors = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1) if ids else np.zeros((0, 0))
        self.lexical = BM25Index(dict(zip(ids, documents, strict=True)))

    def cosines(self, vector: Any) -> np.ndarray:
        """Cosine of the (unit) query vector with every entry (stored vectors are unit length)."""
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        return self.vectors @ np.asarray(vector, dtype=np.float32)

    def matching(self, where: dict[str, Any] | None) -> list[int]:
        """Positions of the entries a `build_where` filter admits (None admits all)."""
        return [i for i, meta in enumerate(self.metadatas) if where is None or _admits(where, meta)]


def _admits(where: dict[str, Any], meta: dict[str, Any]) -> bool:
    if "$and" in where:
        return all(_admits(clause, meta) for clause in where["$and"])
    ((name, wanted),) = where.items()
    if isinstance(wanted, dict):
        return meta.get(name) in wanted["$in"]
    return bool(meta.get(name) == wanted)
