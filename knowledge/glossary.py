"""Query expansion from a curated glossary of domain synonyms (knowledge/glossary.yaml): "fp16" finds the
mixed-precision entry, "the TensorFlow counterpart of autograd" finds GradientTape, "DP or DDP" finds
DistributedDataParallel. Measured against reranking-free alternatives in bench/bench_search.py."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from knowledge.errors import BankError
from knowledge.lexical import tokenize

GLOSSARY_PATH = Path(__file__).with_name("glossary.yaml")


class Glossary:
    """Synonym groups; `expand` adds to a query the other terms of every group it mentions."""

    def __init__(self, groups: list[list[str]]) -> None:
        self._groups = [[(term, tuple(tokenize(term))) for term in group] for group in groups]

    def related_terms(self, query: str) -> list[str]:
        """Terms of the groups the query mentions, that the query does not already contain."""
        tokens = tokenize(query)
        added: list[str] = []
        for group in self._groups:
            present = [term for term, parts in group if parts and _contains(tokens, parts)]
            if present:
                added.extend(term for term, _ in group if term not in present and term not in added)
        return added

    def expand(self, query: str) -> str:
        added = self.related_terms(query)
        return f"{query} ({', '.join(added)})" if added else query


def _contains(tokens: list[str], parts: tuple[str, ...]) -> bool:
    n = len(parts)
    return any(tuple(tokens[i : i + n]) == parts for i in range(len(tokens) - n + 1))


@lru_cache(maxsize=2)
def load_glossary(path: Path = GLOSSARY_PATH) -> Glossary:
    try:
        groups = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise BankError(f"{path}: cannot read the search glossary: {exc}") from exc
    if not isinstance(groups, list) or not all(
        isinstance(g, list) and all(isinstance(t, str) for t in g) for g in groups
    ):
        raise BankError(f"{path}: expected a list of synonym groups (lists of strings)")
    return Glossary(groups)
