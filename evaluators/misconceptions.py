"""Finding wrong claims in an answer: only on clear evidence, since an accusation costs the candidate.

A sentence is read as stating a known misconception only when all of these hold:
- the claim's probe (fitted on the bank's own texts to tell the claim's phrasings from the entry's true
  statements) puts it on the claim's side;
- it is close to one of the claim's phrasings of the same polarity ("X does not Y" never states "X does Y");
- it is no closer to a phrasing of the other polarity: "It is not true that X" is nearer X itself than any
  negated cue, and denies it;
- it is clearly closer to that phrasing than to any true statement of the entry (rubric points,
  reference sentences, corrections and the text after a clause break in one) of its own polarity: a
  sentence that states the point the claim contradicts is not accused;
- the answer does not state the claim's correction (corrected_claims): no sentence of it, nor the text
  either side of a clause break in one (";", ":", ", but"), is close to the correction (read whole or
  from one of its own clause breaks on) and clearly closer to it than to the claim, by the same
  cut-offs. An answer that states the truth names the claim only to reject it ("A common mistake is to
  think X. In fact, Y."; "Some believe X, but that is wrong: Y", which read whole states X).
Each condition's measured effect (bench_scorer.py's 1,488 answers that name a bank claim to refute it:
459 accused with none of the last three, 0 with all), and the clause reading tried and not kept (more
misconceived answers caught, more correct ones accused), are in bench/SCORER_FINDINGS.md. A false
accusation is the costlier error. A sentence that leans to a claim without meeting all of these is not
accused, but credits no rubric point (leaning_units). The cut-offs come from scorer_model.json, chosen on
the development answers (bench/fit_scorer.py). The LLM judge clears the claims its model reports by the same check.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from evaluators.base import DetectedMisconception, GradingTask
from evaluators.rubric_vectors import RubricVectors
from evaluators.text import Unit, clause_pieces, is_negated


def detect_misconceptions(
    task: GradingTask, rubric: RubricVectors, units: list[Unit], vectors: np.ndarray, cutoffs: dict[str, float],
    embed: Callable[[list[str]], np.ndarray],
) -> list[tuple[DetectedMisconception, int]]:
    """Each wrong claim the answer states, with the index of the unit that states it most clearly."""
    found = []
    negated = np.array([is_negated(u.text) for u in units])  # the scorer reads at least one unit
    truth_sims = (vectors @ rubric.truths.T).astype(np.float64)
    # Per unit, its closeness to the truths of its own polarity ("X does not Y" never states "X does Y").
    truth = np.where(rubric.truth_negated == negated[:, None], truth_sims, -1.0).max(axis=1)
    for m, texts, m_vecs, probe in zip(task.misconceptions, rubric.misconception_texts,
                                       rubric.misconception_vectors, rubric.misconception_probes, strict=True):
        same = np.array([is_negated(t) for t in texts]) == negated[:, None]
        # Nearest phrasing of each polarity: a sentence nearer one of the other denies the claim.
        sim, denial = (np.where(s, vectors @ m_vecs.T, -np.inf).max(axis=1).astype(np.float64) for s in (same, ~same))
        belief = (vectors @ probe[:-1] + probe[-1]).astype(np.float64)
        clear = ((belief >= cutoffs["probe"]) & (sim >= np.maximum(cutoffs["similarity"], denial))
                 & (sim - truth >= cutoffs["margin"]))
        if clear.any():
            best = int(np.where(clear, sim, -np.inf).argmax())
            found.append((DetectedMisconception(claim=m.claim, correction=m.correction, quote=units[best].text), best))
    cleared = corrected_claims(task, rubric, units, vectors, cutoffs, embed, {m.claim for m, _ in found})
    return [(m, i) for m, i in found if m.claim not in cleared]


def corrected_claims(
    task: GradingTask, rubric: RubricVectors, units: list[Unit], vectors: np.ndarray, cutoffs: dict[str, float],
    embed: Callable[[list[str]], np.ndarray], claims: set[str],
) -> set[str]:
    """Of these wrong claims, those whose correction the answer states: a sentence of it, or the text
    either side of a clause break in one, is close to the correction and clearly closer to it than to
    any phrasing of the claim (the detector's own cut-offs). The clause pieces are embedded only when
    a whole sentence does not settle it, so an answer accused of nothing costs nothing more. Either
    polarity: requiring the correction's own left more refuting answers accused (42 of the 1,488 vs 12,
    whole sentences only, counted before the frames' fix) and caught no more misconceived answers."""
    asked = [(m.claim, m_vecs, c) for m, m_vecs, c in zip(
        task.misconceptions, rubric.misconception_vectors, rubric.corrections, strict=True) if m.claim in claims]
    done = {claim for claim, m_vecs, c in asked if _states(vectors @ c.T, vectors @ m_vecs.T, cutoffs)}
    pieces = list(dict.fromkeys(p for u in units for p in clause_pieces(u.text))) if len(done) < len(asked) else []
    if pieces:
        piece_vectors = embed(pieces)
        done |= {claim for claim, m_vecs, c in asked if _states(piece_vectors @ c.T, piece_vectors @ m_vecs.T, cutoffs)}
    return done


def _states(to_correction: np.ndarray, to_claim: np.ndarray, cutoffs: dict[str, float]) -> bool:
    """Whether any of the texts states the correction (read whole or from a clause break on): close to
    it, and clearly closer to it than to any phrasing of the claim."""
    best = to_correction.max(axis=1)
    return bool(((best >= cutoffs["similarity"]) & (best - to_claim.max(axis=1) >= cutoffs["margin"])).any())


def leaning_units(
    task: GradingTask, rubric: RubricVectors, units: list[Unit], vectors: np.ndarray, cutoffs: dict[str, float],
) -> set[int]:
    """Units that read as a wrong claim without the evidence an accusation needs: close to one of the
    claim's phrasings of the same polarity (the detector's similarity cut-off, no nearer a denial),
    clearly closer to it than to its correction (the detector's margin), and closer to it than to every
    rubric point, so they state no point the claim contradicts. The scorer credits no point on them
    ("zero_grad sets all model weights to zero" was quoted as stating that the weights are untouched), but does not
    accuse them: an accusation also needs the probe and the margin over all the entry's true statements,
    which keep refuting and correct answers unaccused. MiniLM puts a true sentence on a claim's topic near
    the claim too ("zero_grad clears only the gradients; the weights stay as they are" leans to "zero_grad
    resets the model's weights to zero"); the test against the points keeps most of those credited.
    Chosen on the development answers over no test against the points and over a 0.06 margin above them;
    the figures are in bench/SCORER_FINDINGS.md."""
    if not task.misconceptions:
        return set()
    negated = np.array([is_negated(u.text) for u in units])
    to_points = np.stack([(vectors @ pv.T).max(axis=1) for pv in rubric.point_vectors], axis=1).max(axis=1)
    leaning = np.zeros(len(units), dtype=bool)
    for texts, m_vecs, c_vecs in zip(rubric.misconception_texts, rubric.misconception_vectors, rubric.corrections,
                                     strict=True):
        same = np.array([is_negated(t) for t in texts]) == negated[:, None]
        sims = vectors @ m_vecs.T
        sim, denial = (np.where(s, sims, -np.inf).max(axis=1).astype(np.float64) for s in (same, ~same))
        to_correction = (vectors @ c_vecs.T).max(axis=1)
        leaning |= ((sim >= np.maximum(cutoffs["similarity"], denial)) & (sim - to_correction >= cutoffs["margin"])
                    & (sim > to_points))
    return {int(i) for i in np.flatnonzero(leaning)}
