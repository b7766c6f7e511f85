"""Finding wrong claims in an answer: only on clear evidence, since an accusation costs the candidate.

A sentence is read as stating a known misconception only when all of these hold:
- the claim's probe (fitted on the bank's own texts to tell the claim's phrasings from the entry's true
  statements) puts it on the claim's side;
- it is close to one of the claim's phrasings of the same polarity ("X does not Y" never states "X does Y");
- it is clearly closer to that phrasing than to any true statement of the entry (rubric points,
  reference sentences, corrections) of its own polarity: a sentence that states the point the claim
  contradicts is not accused;
- no sentence of the answer states the claim's correction (clearly closer to it than to the claim, by the
  same cut-offs): an answer that states the truth names the claim only to reject it ("A common mistake is
  to think X. In fact, Y."). Sentences are read whole, so the rest of a sentence can deny a clause ("some
  think PyTorch clears gradients for you, but it does not"). Measured with bench_scorer.py's refuting
  answers (the bank's own claims in six refuting frames): 432 of 1,488 were accused without this check,
  12 with it; the misconceived development answers caught and every calibration score are unchanged. It
  replaced a list of contrast markers ("rather than", "unlike", "instead of"...) that, beside it, changed
  none of those figures.
The cut-offs come from scorer_model.json, chosen on the development answers (bench/fit_scorer.py).
"""

from __future__ import annotations

import numpy as np

from evaluators.base import DetectedMisconception, GradingTask
from evaluators.rubric_vectors import RubricVectors
from evaluators.text import Unit, is_negated


def detect_misconceptions(
    task: GradingTask, rubric: RubricVectors, units: list[Unit], vectors: np.ndarray, cutoffs: dict[str, float]
) -> list[tuple[DetectedMisconception, int]]:
    """Each wrong claim the answer states, with the index of the unit that states it most clearly."""
    found = []
    negated = [is_negated(u.text) for u in units]
    truth_sims = vectors @ rubric.truths.T  # the scorer reads at least one unit
    corrections = truth_sims[:, len(rubric.truths) - len(task.misconceptions) :].T  # the truths end with them
    for m, texts, m_vecs, probe, correction in zip(
        task.misconceptions, rubric.misconception_texts, rubric.misconception_vectors,
        rubric.misconception_probes, corrections, strict=True,
    ):
        # Either polarity: requiring the correction's own cost more refuting answers (42 of the 1,488
        # in bench_scorer.py accused, vs 12) and caught no more misconceived development answers.
        claim_sims = vectors @ m_vecs.T  # each unit against each phrasing of the claim
        stated = (correction >= cutoffs["similarity"]) & (correction - claim_sims.max(axis=1) >= cutoffs["margin"])
        if stated.any():
            continue
        best, best_sim = -1, -1.0
        for i, negative in enumerate(negated):
            same = np.array([is_negated(t) == negative for t in texts])  # "X does not Y" never states "X does Y"
            if not same.any():
                continue
            sim = float(claim_sims[i, same].max())
            agreeing = rubric.truth_negated == negative
            truth = float(truth_sims[i, agreeing].max()) if agreeing.any() else -1.0
            belief = float(vectors[i] @ probe[:-1] + probe[-1])
            clear = belief >= cutoffs["probe"] and sim >= cutoffs["similarity"] and sim - truth >= cutoffs["margin"]
            if clear and sim > best_sim:
                best, best_sim = i, sim
        if best >= 0:
            found.append((DetectedMisconception(claim=m.claim, correction=m.correction, quote=units[best].text), best))
    return found
