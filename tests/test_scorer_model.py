"""The scorer's fitted model and the real graded sets it is fitted on."""

from __future__ import annotations

import json

import pytest

from bench.grading_data import DATASETS, real_sets
from evaluators.signals import MODEL_PATH, SIGNALS


def test_the_model_was_fitted_on_real_teacher_graded_answers():
    fitted_on = json.loads(MODEL_PATH.read_text(encoding="utf-8"))["fitted_on"]
    assert {"semeval-beetle", "semeval-scientsbank", "saf-en"} <= set(fitted_on)
    assert sum(n for source, n in fitted_on.items() if source != "calibration") > 10 * fitted_on["calibration"]


def test_real_sets_load_with_their_official_splits():
    if not DATASETS.exists():
        pytest.skip("../shared/datasets is absent")
    rows = real_sets()
    splits = {(r["source"], r["split"]) for r in rows}
    assert ("semeval-scientsbank", "test_unseen_domains") in splits and ("saf-en", "test_unseen_questions") in splits
    assert all(0.0 <= r["target"] <= 1.0 and r["references"] and r["answer"] is not None for r in rows)
    assert len(SIGNALS) <= 8  # few parameters: the point of the design


def test_alignment_credits_words_by_their_reading_and_an_empty_reference_leaves_nothing_to_miss():
    from evaluators.signals import alignment, content_pieces
    from knowledge.embeddings import get_embedder

    embedder = get_embedder("minilm")
    reference, paraphrase, unrelated = (content_pieces(t) for t in embedder.read([
        "Dropout randomly zeroes activations during training.",
        "While training, it switches off random neurons.",
        "The learning rate sets the step size.",
    ])[1])
    assert alignment(reference, paraphrase) > alignment(reference, unrelated) + 0.05
    assert alignment(reference, reference) == pytest.approx(1.0, abs=1e-5)
    assert alignment(reference[:0], unrelated) == 1.0  # every reference word was in the question
    assert alignment(reference, unrelated[:0]) == 0.0


def test_a_point_earns_credit_exactly_when_it_is_not_missed():
    """The verdict and the credit come from one closeness: a point called missed carries no credit, and a
    partial or covered one carries some (the fitted scale's cut-offs, with and without the one-phrasing
    offset)."""
    import numpy as np

    from evaluators.base import Verdict
    from evaluators.signals import fitted_model

    points = fitted_model().points
    assert points.floor < points.covered < points.full
    for support in np.arange(0.0, 1.0, 0.005):
        for phrasings in (1, 3):
            verdict, credit = points.read(float(support), phrasings)
            assert (credit > 0) == (verdict is not Verdict.MISSED), (support, phrasings, verdict, credit)
