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

from evaluators.base import Verdict
from evaluators.text import FUNCTION_WORDS, content_words
from knowledge.embeddings import Tokens

MODEL_PATH = Path(__file__).with_name("scorer_model.json")

# Each signal's sign in the model is fixed by what it means (bench/fit_scorer.py): more likeness to the
# reference never lowers a score, a wrong claim never raises it. The signals were chosen by
# leave-one-source-out on the train rows; the candidates that gained nothing there or on the held-out
# splits (some forty, among them a fine-tuned and a larger embedder, numbers, antonyms, a language model's
# likelihood), each with its figures, are listed in bench/SCORER_FINDINGS.md so none is tried again blind.
SIGNALS = (
    "coverage",  # weighted mean closeness of each rubric point's best supporting sentence
    # Word-by-word alignment (BERTScore's recall): each content word piece of the reference, as read in
    # its sentence, meets its closest word piece of the answer, as read in the answer's sentence; the
    # mean of those closenesses. It credits a paraphrase word by word where a pooled vector blurs it.
    "alignment",
    # The same on the two texts' content words that the question does not use ("question demoting", as
    # in the short-answer grading literature): every answer on the topic echoes the question's words.
    "demoted_alignment",
    "stem_recall",  # share of the reference's words, cut to five letters, the answer uses (question's removed)
    "wrong",  # wrong claims stated (bank entries list their known misconceptions)
)
NEGATIVE = frozenset({"wrong"})


@dataclass(frozen=True)
class PointScale:
    """How a point's best supporting sentence becomes credit and a verdict (cosine similarity). The score
    does not read them: coverage is the raw closeness. A sentence above `floor` earns part of the point
    (verdict partial), at or above `covered` the point is covered, and its credit grows to the whole point
    at `full`. The cut-offs were chosen on this team's answers to bank points, each read against its
    description and several phrasings (its closeness is the best of them). Beside the graders' per-point
    verdicts of the later development answers (bench_scorer.py), `covered` anywhere from 0.54 to 0.70
    agrees within noise (3-way macro-F1 0.530-0.556), and so does the floor from 0.30 to 0.48 (credited or
    not 0.768-0.776); a separate partial cut-off above the floor (0.57) called more stated points missed
    (blind credited-or-not macro-F1 0.742 vs 0.790). A point with one phrasing, as an ad-hoc reference's
    claims are, meets fewer chances to match: before the cut-offs its closeness is raised by
    `single_phrasing_offset`, fitted on teachers' labels of answers to one-claim references
    (bench/fit_scorer.py)."""

    floor: float  # below this a sentence earns nothing
    full: float  # at or above this it earns the whole point
    covered: float
    single_phrasing_offset: float

    def read(self, support: float, phrasings: int) -> tuple[Verdict, float]:
        """A point's verdict and credit (0-1, to three places) from its best sentence's closeness."""
        if phrasings == 1:
            support += self.single_phrasing_offset
        credit = round(float(np.clip((support - self.floor) / (self.full - self.floor), 0.0, 1.0)), 3)
        return (Verdict.COVERED if support >= self.covered else Verdict.PARTIAL if credit else Verdict.MISSED), credit


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
        arrays = {name: np.array(data[name]) for name in ("mean", "scale", "weights")}
        return cls(signals=tuple(data["signals"]), bias=float(data["bias"]), points=PointScale(**data["points"]),
                   wrong=dict(data["wrong"]), **arrays)


@cache
def fitted_model() -> ScoreModel:
    return ScoreModel.from_dict(json.loads(MODEL_PATH.read_text(encoding="utf-8")))


def content_pieces(tokens: Tokens) -> np.ndarray:
    """The vectors of a text's word pieces that are not function words ("the", "is", "of")."""
    keep = [k for k, piece in enumerate(tokens.words) if piece.lstrip("#") not in FUNCTION_WORDS]
    return tokens.vectors[keep]


def alignment(reference: np.ndarray, answer: np.ndarray) -> float:
    """Mean over the reference's word pieces of the closest answer piece's cosine. A reference with no
    pieces (every word of it is in the question) leaves nothing to miss: 1. Chosen over 0 on principle,
    as leave-one-source-out could not tell them apart (0.5516 vs 0.5515); on held-out rows, where 198 of
    the 20k reference readings are empty, SciEntsBank UQ read 0.504 vs 0.450."""
    if not len(reference):
        return 1.0
    if not len(answer):
        return 0.0
    return float((reference.astype(np.float32) @ answer.astype(np.float32).T).max(axis=1).mean())


def stem_recall(answer: frozenset[str], reference: str, question: str) -> float:
    """The share of the reference's content words (`answer`: the answer's, already read from its units)
    the answer uses, each cut to its first five letters
    ('connected' meets 'connection'), leaving out the question's own: echoing the question is not evidence
    of knowing the answer. A reference with no words beyond the question's (1% of the train readings) reads
    0; reading it as 1, nothing to miss, as `alignment` does: LOSO +0.161 vs +0.163, and with the shipped
    model every held-out split fell or held (SciEntsBank UA 0.502 vs 0.510, Beetle UA 0.581 vs 0.585)."""
    said, ref, asked = ({w[:5] for w in terms} for terms in (answer, content_words(reference), content_words(question)))
    ref -= asked
    return len(ref & said) / len(ref) if ref else 0.0
