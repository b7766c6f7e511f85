"""The benchmark's agreement figures and their intervals."""

from __future__ import annotations

import numpy as np
import pytest

from bench.scorer_metrics import adversarial_share, grade_pearson, pearson, question_bootstrap


def _answers(questions: int, noise: float, seed: int = 1) -> tuple[list[dict], list[float]]:
    rng = np.random.default_rng(seed)
    rows, predicted = [], []
    for q in range(questions):
        for grade in (0.0, 1.0, 2.5, 4.0, 5.0):
            rows.append({"question_id": f"q{q}", "grade": grade, "kind": "misconceived" if grade == 0 else "strong"})
            predicted.append(grade + rng.normal(0, noise))
    return rows, predicted


def test_the_interval_surrounds_the_figure_and_is_repeatable():
    rows, predicted = _answers(12, noise=1.2)
    low, high = question_bootstrap(rows, predicted, grade_pearson)
    assert low < grade_pearson(rows, predicted) < high
    assert (low, high) == question_bootstrap(rows, predicted, grade_pearson)


def test_fewer_questions_give_a_wider_interval():
    few = question_bootstrap(*_answers(5, noise=1.2), grade_pearson)
    many = question_bootstrap(*_answers(60, noise=1.2), grade_pearson)
    assert few[1] - few[0] > many[1] - many[0]


def test_questions_are_resampled_whole():
    # One question the scorer reads backwards: resampling whole questions must sometimes leave it out
    # and sometimes take it twice, so the interval is wide; a perfect scorer has no spread at all.
    rows, predicted = _answers(8, noise=0.0)
    assert question_bootstrap(rows, predicted, grade_pearson) == pytest.approx((1.0, 1.0))
    flipped = [5.0 - p if r["question_id"] == "q0" else p for r, p in zip(rows, predicted, strict=True)]
    low, high = question_bootstrap(rows, flipped, grade_pearson)
    assert high == pytest.approx(1.0) and low < pearson([r["grade"] for r in rows], flipped) - 0.1


def test_adversarial_share_counts_only_adversarial_answers():
    rows = [{"kind": "misconceived"}, {"kind": "stuffed"}, {"kind": "strong"}, {"kind": "evasive"}]
    assert adversarial_share(rows, [1.5, 2.0, 5.0, 0.0]) == pytest.approx(2 / 3)
    assert np.isnan(adversarial_share(rows[2:3], [5.0]))
