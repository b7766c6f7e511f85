"""Agreement metrics shared by the scorer benchmarks (no dependencies beyond numpy)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

CALIBRATION = Path(__file__).resolve().parent / "data" / "calibration.jsonl"
# Written later, blind to the scorer, on 20 questions the first set does not use. Split by question:
# "fresh-dev" may be read to understand failures, "fresh-test" is only ever scored.
FRESH = Path(__file__).resolve().parent / "data" / "calibration_fresh.jsonl"
# A third set, written blind on the 28 bank questions neither earlier set uses, two misconceived answers
# per question: "fresh2-dev" may be read, "fresh2-test" is only ever scored.
FRESH2 = Path(__file__).resolve().parent / "data" / "calibration_fresh2.jsonl"
ADVERSARIAL = ("misconceived", "stuffed", "evasive")
# "tune" and the "-dev" splits may drive a choice (bench/fit_scorer.py fits on them); "heldout" and the
# "-test" splits are only ever scored.
SPLITS = ("tune", "heldout", "fresh-dev", "fresh-test", "fresh2-dev", "fresh2-test")
BLIND = ("heldout", "fresh-test", "fresh2-test")


# The later sets' rationales grade each rubric point: "node-graph (3) half = 1.5; engine-traversal-vjp (3)
# missed"; in-between grades come in words ("mostly", "a third", "2 of 3", "named only").
_GRADED_POINT = re.compile(
    r"([a-z0-9][a-z0-9-]*) \([\d.]+\) (full|missed|missing|half|mostly|partly|barely|named only|"
    r"(?:about )?(?:a |one |two )?thirds?|(?:three )?quarters?|[\d.]+ of [\d.]+)\b"
)


def graders_verdicts(row: dict, points: Iterable[str]) -> dict[str, str]:
    """Per rubric point of the row's question (`points`, their ids), the graders' verdict from its
    rationale: covered (full), missed, or partial (any grade in between). Empty where the rationale does
    not grade point by point (the first set's); other words before a "(weight)" are prose, not points."""
    wanted, verdicts = set(points), {}
    for point, grade in _GRADED_POINT.findall(row["rationale"]):
        if point in wanted:
            verdict = "covered" if grade == "full" else "missed" if grade.startswith("miss") else "partial"
            verdicts.setdefault(point, verdict)
    return verdicts


def load_calibration(path: Path = CALIBRATION, *, fresh: bool = False) -> list[dict]:
    """The calibration answers; with fresh=True, the blind later sets are appended."""
    paths = [path, FRESH, FRESH2] if fresh else [path]
    return [
        json.loads(line) for p in paths for line in p.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def pearson(a: Sequence[float], b: Sequence[float]) -> float:
    x, y = np.asarray(a, float), np.asarray(b, float)
    if x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def _ranks(values: Sequence[float]) -> np.ndarray:
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    sorted_vals = np.asarray(values, float)[order]
    i = 0
    while i < len(values):  # average ranks over ties
        j = i
        while j + 1 < len(values) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2
        i = j + 1
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    return pearson(_ranks(a), _ranks(b))


def quadratic_kappa(a: Sequence[float], b: Sequence[float], levels: int = 11) -> float:
    """QWK on scores binned to half points (0, 0.5, ..., 5)."""
    x = np.clip(np.rint(np.asarray(a, float) * 2), 0, levels - 1).astype(int)
    y = np.clip(np.rint(np.asarray(b, float) * 2), 0, levels - 1).astype(int)
    observed = np.zeros((levels, levels))
    for i, j in zip(x, y, strict=True):
        observed[i, j] += 1
    expected = np.outer(np.bincount(x, minlength=levels), np.bincount(y, minlength=levels)) / len(x)
    weights = np.array([[(i - j) ** 2 for j in range(levels)] for i in range(levels)]) / (levels - 1) ** 2
    denominator = (weights * expected).sum()
    return float(1 - (weights * observed).sum() / denominator) if denominator else float("nan")


def mae(a: Sequence[float], b: Sequence[float]) -> float:
    return float(np.mean(np.abs(np.asarray(a, float) - np.asarray(b, float))))


def macro_f1(truth: Sequence[str], predicted: Sequence[str]) -> float:
    labels = sorted(set(truth) | set(predicted))
    scores = []
    for label in labels:
        tp = sum(t == label and p == label for t, p in zip(truth, predicted, strict=True))
        fp = sum(t != label and p == label for t, p in zip(truth, predicted, strict=True))
        fn = sum(t == label and p != label for t, p in zip(truth, predicted, strict=True))
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        scores.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    return float(np.mean(scores))


def _question_resamples(rows: Sequence[dict], rounds: int, seed: int):
    """Index lists, each drawing the rows' questions with replacement and taking every answer of each.

    Answers to one question succeed or fail together (a rubric the scorer reads badly sinks all six),
    so resampling single answers would make the spread look narrower than the evidence allows."""
    by_question: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_question.setdefault(row["question_id"], []).append(i)
    groups = list(by_question.values())
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        yield [i for g in rng.integers(len(groups), size=len(groups)) for i in groups[g]]


def question_bootstrap(
    rows: Sequence[dict], predicted: Sequence[float], statistic, *, rounds: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """A 95% interval for statistic(rows, predicted), resampling whole questions."""
    values = []
    for picked in _question_resamples(rows, rounds, seed):
        value = statistic([rows[i] for i in picked], [predicted[i] for i in picked])
        if not np.isnan(value):
            values.append(value)
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def adversarial_share(rows: Sequence[dict], predicted: Sequence[float]) -> float:
    """Share of misconceived, stuffed and evasive answers scored at most 1.5 (nan if there are none)."""
    scores = [p for r, p in zip(rows, predicted, strict=True) if r["kind"] in ADVERSARIAL]
    return sum(s <= 1.5 for s in scores) / len(scores) if scores else float("nan")


def grade_pearson(rows: Sequence[dict], predicted: Sequence[float]) -> float:
    return pearson([r["grade"] for r in rows], predicted)
