"""A grader's own standard, learned from a few answers they graded to the same question.

Graders differ in strictness and questions in what a typical answer earns, in ways no reference answer
shows: fitted on the same signals, SAF-EN's graders sit ~2.4 logits above Beetle's (bench/fit_scorer.py's
level per source). Given some answers to a question with the grader's own grades, the question gets one
shift of the score's logit, fitted to those grades under a normal prior centred on no shift: a few
examples move it a little, many move it more. Any evaluator's score can be shifted this way. The
per-point verdicts are left alone: they say what an answer states, not how strict its grader is.

PRIOR_SD was chosen on the train splits alone (`bench/fit_scorer.py --prior-sd`, three draws per
source): five graded answers per question, the question's other answers scored with the fitted shift,
their Pearson gain over the scorer alone, averaged over Beetle, SciEntsBank and SAF-EN: sd 0.25
+0.015, 0.5 +0.048, 0.75 +0.071, 1.0 +0.079, 1.5 +0.072, 2.0 +0.059, 3.0 +0.038. bench/bench_real.py
reports the held-out effect on the unseen-answers splits, whose questions have graded train answers.
Tried and not kept: the examples graded full marks also read as reference answers (an example's own
answer left out of its references while the shift is learned). On the train splits, set up as above
(three draws), Pearson with the shift alone vs with both: Beetle 0.582 vs 0.582, SciEntsBank 0.572 vs
0.589, SAF-EN 0.499 vs 0.488 (scratch exref_train.py); and the feedback would quote points of another
candidate's answer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PRIOR_SD = 1.0  # logits
EDGE = 0.01  # scores of 0 and 5 read as 1% and 99% of full marks, so any shift can still move them


def _logit(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    share = np.clip(np.asarray(scores, dtype=float) / 5, EDGE, 1 - EDGE)
    return np.log(share / (1 - share))


def learn_shift(scores: Sequence[float], shares: Sequence[float], prior_sd: float = PRIOR_SD) -> float:
    """The logit shift that best fits the grader's grades (`shares`: shares of full marks, 0-1) of
    answers the scorer gave `scores` (0-5); 0 with no examples. The penalised log-likelihood is
    concave in the shift, so Newton's method finds its one maximum in a few steps."""
    if not len(scores):
        return 0.0
    z, y = _logit(scores), np.asarray(shares, dtype=float)
    shift = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-(z + shift)))
        gradient = float((p - y).sum()) + shift / prior_sd**2
        curvature = float((p * (1 - p)).sum()) + 1 / prior_sd**2
        step = gradient / curvature
        shift -= step
        if abs(step) < 1e-6:
            break
    return shift


def apply_shift(score: float, shift: float) -> float:
    """The score (0-5, to one place) as a grader with this shift would give it."""
    return round(float(5 / (1 + np.exp(-(_logit([score])[0] + shift)))), 1)
