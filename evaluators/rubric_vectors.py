"""A rubric's texts and their vectors, as the scorer and the misconception detector read them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from evaluators.text import Unit, is_negated


@dataclass(frozen=True)
class RubricVectors:
    point_texts: list[list[str]]
    point_vectors: list[np.ndarray]
    point_terms: list[set[str]]
    misconception_texts: list[list[str]]
    misconception_vectors: list[np.ndarray]
    # Per wrong claim, a linear probe (384 weights and a bias) fitted to tell its phrasings from the
    # entry's true statements: see misconception_probes().
    misconception_probes: list[np.ndarray]
    # Every term any correct rubric text uses: read for each sentence near a wrong claim, so built once.
    truth_terms: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "truth_terms", frozenset().union(*self.point_terms))


def same_polarity(unit: Unit, texts: list[str]) -> np.ndarray:
    """Per text: whether it is negated exactly when the unit is ("X does Y" vs "X does not Y")."""
    negated = is_negated(unit.text)
    return np.array([is_negated(t) == negated for t in texts], dtype=bool)


def misconception_probes(wrong: list[np.ndarray], truths: np.ndarray, ridge: float) -> list[np.ndarray]:
    """For each wrong claim, weights w (with a bias last) so that [v, 1] @ w is near +1 for its phrasings
    and near -1 for the entry's true statements: ridge regression, both sides weighted equally.

    Nearest-phrasing similarity treats every dimension alike, so "a softmax so the outputs are
    probabilities for CrossEntropyLoss" sits as close to "CrossEntropyLoss applies log-softmax itself"
    as to the wrong claim; a probe fitted on the bank's own texts (never on graded answers) leans on the
    dimensions that separate the two sides."""
    # Solved in the dual, (n x n) for the n texts rather than (385 x 385): the same weights, since
    # (X'SX + rI)^-1 X'S y = X'S^1/2 (S^1/2 XX' S^1/2 + rI)^-1 S^1/2 y, at about a tenth of the cost (the
    # whole bank's probes took ~0.45 s of each grading run; a bank has ~75 true texts per question).
    truths = _with_bias(truths)
    truth_gram = truths @ truths.T  # shared by every claim of the entry
    probes = []
    for claim_vectors in wrong:
        claims = _with_bias(claim_vectors)
        x = np.vstack([claims, truths])
        gram = np.block([[claims @ claims.T, claims @ truths.T], [truths @ claims.T, truth_gram]])
        y = np.r_[np.ones(len(claims)), -np.ones(len(truths))]
        root = np.sqrt(np.r_[np.full(len(claims), 0.5 / len(claims)), np.full(len(truths), 0.5 / len(truths))])
        dual = np.linalg.solve(root[:, None] * gram * root[None, :] + ridge * np.eye(len(x)), root * y)
        probes.append((x.T @ (root * dual)).astype(np.float32))
    return probes


def _with_bias(vectors: np.ndarray) -> np.ndarray:
    return np.hstack([vectors, np.ones((len(vectors), 1))]).astype(np.float64)
