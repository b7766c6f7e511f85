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
accusation is the costlier error. The cut-offs come from scorer_model.json, chosen on the development
answers (bench/fit_scorer.py). The LLM judge clears the claims its model reports by the same check.
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
