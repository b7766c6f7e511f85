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
        """Terms of the groups the query mentions, that the query does not already contain. Longest
        terms match first and use up their words: "custom autograd function" is torch.autograd.Function,
        not the autograd group's "automatic differentiation"."""
        tokens: list[str | None] = list(tokenize(query))
        terms = sorted(
            ((parts, index) for index, group in enumerate(self._groups) for _, parts in group if parts),
            key=lambda item: -len(item[0]),
        )
        mentioned: dict[int, set[tuple[str, ...]]] = {}
        for parts, index in terms:
            at = _find(tokens, parts)
            if at is not None:
                tokens[at : at + len(parts)] = [None] * len(parts)
                mentioned.setdefault(index, set()).add(parts)
        added: list[str] = []
        for index in sorted(mentioned):
            added.extend(
                term for term, parts in self._groups[index] if parts not in mentioned[index] and term not in added
            )
        return added

    def synonyms(self, term: str) -> list[str]:
        """The other terms of the group that holds `term` itself; a group whose term only contains it does not
        count ("tensorflow" is not a synonym of "tensorflow core")."""
        parts = tuple(tokenize(term))
        return [
            other for group in self._groups if any(p == parts for _, p in group) for other, p in group if p != parts
        ]

    def expand(self, query: str) -> str:
        added = self.related_terms(query)
        return f"{query} ({', '.join(added)})" if added else query


def _find(tokens: list[str | None], parts: tuple[str, ...]) -> int | None:
    n = len(parts)
    return next((i for i in range(len(tokens) - n + 1) if tuple(tokens[i : i + n]) == parts), None)


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
