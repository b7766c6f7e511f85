"""A small BM25 index: the lexical half of hybrid retrieval over ~100-1000 short documents."""

from __future__ import annotations

import math
import re
from collections import Counter

_TOKEN = re.compile(r"[a-z0-9_]+")
# Words that carry no meaning for matching interview questions.
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it its me of on or so that the "
    "their this to use used using we what when where which why with you your".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens; `zero_grad()` also yields `zero` and `grad` so both spellings match."""
    tokens = []
    for token in _TOKEN.findall(text.lower()):
        if token in STOPWORDS:
            continue
        tokens.append(_stem(token))
        if "_" in token:
            tokens.extend(part for part in token.split("_") if part and part not in STOPWORDS)
    return tokens


def _stem(token: str) -> str:
    """Fold plurals ('GANs', 'tensors', 'losses') onto the singular; enough for short questions."""
    if len(token) > 4 and token.endswith("ses"):
        return token[:-2]
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


class BM25Index:
    """Okapi BM25 with scores scaled to [0, 1] per query (the best document scores 1)."""

    def __init__(self, documents: dict[str, str], *, k1: float = 1.4, b: float = 0.75) -> None:
        self._k1, self._b = k1, b
        self._docs = {doc_id: Counter(tokenize(text)) for doc_id, text in documents.items()}
        self._lengths = {doc_id: sum(c.values()) for doc_id, c in self._docs.items()}
        self._avg = sum(self._lengths.values()) / max(len(self._docs), 1)
        frequency: Counter[str] = Counter()
        for counts in self._docs.values():
            frequency.update(counts.keys())
        n = len(self._docs)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}

    def scores(self, query: str) -> dict[str, float]:
        terms = set(tokenize(query))
        raw: dict[str, float] = {}
        for doc_id, counts in self._docs.items():
            total = 0.0
            norm = self._k1 * (1 - self._b + self._b * self._lengths[doc_id] / max(self._avg, 1e-9))
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    total += self._idf[term] * tf * (self._k1 + 1) / (tf + norm)
            if total:
                raw[doc_id] = total
        best = max(raw.values(), default=0.0)
        return {doc_id: s / best for doc_id, s in raw.items()} if best else {}
