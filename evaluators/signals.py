"""What the offline score is computed from: a few signals that transfer across subjects, and the model
fitted on teacher-graded answers (bench/fit_scorer.py) that turns them into a 0-5 score.

The signals compare the answer with the reference answer and its rubric points; none is a verdict on
its own. The model is a logistic regression on them, fitted on real students' answers graded by their
teachers (SemEval-2013 Beetle + SciEntsBank, SAF-EN) plus this project's own development answers; its
parameters live in scorer_model.json beside this file and are never refitted by the tests.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

MODEL_PATH = Path(__file__).with_name("scorer_model.json")

# Each signal's sign in the model is fixed by what it means (bench/fit_scorer.py): more likeness to the
# reference never lowers a score, a wrong claim never raises it. Candidates the fitted model gave no
# weight (the best single match, sentence-level recall of the reference, the closest single sentence,
# the coverage ramp, the whole answer's cosine with the reference and with the question, the mean best
# match of the answer's sentences, the share of the answer's words found in the reference once `demoted`
# came in) were dropped, and so were length and sentence count: they gained within noise on held-out
# sources, and a padded answer gained by them. Signals were chosen by leave-one-source-out on the train
# rows: `demoted` raised the mean gain over plain cosine from +0.130 to +0.145, on all three real sources.
SIGNALS = (
    "coverage",  # weighted mean closeness of each rubric point's best supporting sentence
    "lex_recall",  # share of the reference's content words the answer uses (question's words removed)
    "stem_recall",  # the same on words cut to five letters ("connected" meets "connection")
    "wrong",  # wrong claims stated (bank entries list their known misconceptions)
    # Cosine of the answer's and the reference's content words that the question does not use
    # ("question demoting", as in the short-answer grading literature): plain cosine credits echoing
    # the question, which every answer on the topic does.
    "demoted",
)
NEGATIVE = frozenset({"wrong"})


@dataclass(frozen=True)
class PointScale:
    """How a point's best supporting sentence becomes credit and a verdict (cosine similarity)."""

    floor: float  # below this a sentence earns nothing
    full: float  # at or above this it earns the whole point
    covered: float
    partial: float

    def credit(self, support: float) -> float:
        return float(np.clip((support - self.floor) / (self.full - self.floor), 0.0, 1.0))


@dataclass(frozen=True)
class ScoreModel:
    """Logistic regression on standardised signals: score = 5 * sigmoid(w . z + b)."""

    signals: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    points: PointScale
    wrong: dict[str, float]  # the misconception detector's cut-offs (evaluators/misconceptions.py)

    def share(self, values: dict[str, float]) -> float:
        """The answer's expected share of full marks, 0-1."""
        x = np.array([values[name] for name in self.signals])
        z = float(((x - self.mean) / self.scale) @ self.weights + self.bias)
        return 1.0 / (1.0 + math.exp(-z))

    @classmethod
    def from_dict(cls, data: dict) -> ScoreModel:
        return cls(
            signals=tuple(data["signals"]), mean=np.array(data["mean"]), scale=np.array(data["scale"]),
            weights=np.array(data["weights"]), bias=float(data["bias"]), points=PointScale(**data["points"]),
            wrong=dict(data["wrong"]),
        )


@cache
def fitted_model() -> ScoreModel:
    return ScoreModel.from_dict(json.loads(MODEL_PATH.read_text(encoding="utf-8")))


def lexical_overlap(answer: frozenset[str], reference: frozenset[str], question: frozenset[str]) -> float:
    """The share of the reference's content words the answer uses, leaving out the question's own:
    echoing the question is not evidence of knowing the answer."""
    ref = reference - question
    return len(ref & answer) / len(ref) if ref else 0.0


def stems(terms: frozenset[str]) -> frozenset[str]:
    """Words cut to their first five letters: 'connected' meets 'connection', 'scatters' meets 'scattering'."""
    return frozenset(w[:5] for w in terms)
