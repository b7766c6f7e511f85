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
  to think X. In fact, Y."). Nor does the accused sentence itself, read either side of a clause break
  (";", ":", ", but"): "Some believe X, but that is wrong: Y" reads as X whole.
  Measured with bench_scorer.py's refuting answers (the bank's own claims in six refuting frames): 459
  of 1,488 were accused with neither check, 11 with the first, 3 with both (all three on one entry
  whose claim and correction swap the same words: "BatchNorm normalises each sample across its own
  features" and "... each feature across the samples", cosine 0.967 in MiniLM). Neither check changed
  the misconceived development answers caught or any calibration score. The first replaced a list of
  contrast markers ("rather than", "unlike", "instead of"...) that, beside it, changed none of those.
The cut-offs come from scorer_model.json, chosen on the development answers (bench/fit_scorer.py).
Tried and not kept: accusing clauses as well as whole sentences (split at commas, ";", ":", and before
"so / because / while / whereas / but"), so a wrong claim inside a long sentence is read on its own
("view doesn't copy, ..., while reshape always makes a copy"). The cut-off search then caught 40.2% of
the misconceived development answers (vs 25.6%), and on the blind splits 19 of 58 misconceived answers
(vs 10) and 65 of 110 adversarial ones <= 1.5 (vs 57); but it accused 4 of 200 other blind answers (vs
1), among them a paraphrase graded 5 ("every head still looks at the whole sentence", scored 0.8), and
blind Pearson fell 0.832 -> 0.826. A false accusation is the costlier error.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from evaluators.base import DetectedMisconception, GradingTask
from evaluators.rubric_vectors import RubricVectors
from evaluators.text import Unit, is_negated


def detect_misconceptions(
    task: GradingTask, rubric: RubricVectors, units: list[Unit], vectors: np.ndarray, cutoffs: dict[str, float],
    embed: Callable[[list[str]], np.ndarray],
) -> list[tuple[DetectedMisconception, int]]:
    """Each wrong claim the answer states, with the index of the unit that states it most clearly."""
    found = []
    corrected = corrected_claims(task, rubric, vectors, cutoffs)
    negated = np.array([is_negated(u.text) for u in units])
    truth_sims = (vectors @ rubric.truths.T).astype(np.float64)
    # Per unit, its closeness to the truths of its own polarity ("X does not Y" never states "X does Y").
    truth = np.where(rubric.truth_negated == negated[:, None], truth_sims, -1.0).max(axis=1)
    for m, texts, m_vecs, probe, correction in zip(
        task.misconceptions, rubric.misconception_texts, rubric.misconception_vectors,
        rubric.misconception_probes, rubric.corrections, strict=True,
    ):
        if m.claim in corrected:
            continue
        same = np.array([is_negated(t) for t in texts]) == negated[:, None]
        sim = np.where(same, (vectors @ m_vecs.T).astype(np.float64), -np.inf).max(axis=1)
        clear = ((vectors @ probe[:-1] + probe[-1] >= cutoffs["probe"]) & (sim >= cutoffs["similarity"])
                 & (sim - truth >= cutoffs["margin"]))
        best = int(np.where(clear, sim, -np.inf).argmax())
        if clear.any() and not _corrected_within(units[best].text, correction, m_vecs, cutoffs, embed):
            found.append((DetectedMisconception(claim=m.claim, correction=m.correction, quote=units[best].text), best))
    return found


def corrected_claims(
        task: GradingTask, rubric: RubricVectors, vectors: np.ndarray, cutoffs: dict[str, float]) -> set[str]:
    """The wrong claims whose correction some unit of the answer states. Either polarity: requiring the
    correction's own cost more refuting answers (42 of the 1,488 in bench_scorer.py accused, vs 12,
    before the clause check) and caught no more misconceived development answers."""
    return {m.claim for m, m_vecs, correction in zip(
        task.misconceptions, rubric.misconception_vectors, rubric.corrections, strict=True,
    ) if _states(vectors @ correction, vectors @ m_vecs.T, cutoffs)}


def _states(to_correction: np.ndarray, to_claim: np.ndarray, cutoffs: dict[str, float]) -> bool:
    """Whether any of the texts states the correction: close to it, and clearly closer to it than to any
    phrasing of the claim."""
    return bool(((to_correction >= cutoffs["similarity"])
                 & (to_correction - to_claim.max(axis=1) >= cutoffs["margin"])).any())


_CLAUSE_BREAK = re.compile(r"\s*[;:]\s+|,\s+(?=but\b)")


def _corrected_within(sentence: str, correction: np.ndarray, claim: np.ndarray, cutoffs: dict[str, float],
                      embed: Callable[[list[str]], np.ndarray]) -> bool:
    """Whether the text before or after a clause break of the sentence states the correction: a
    correction can share the accused sentence with the claim it rejects ("Some believe X, but that is
    wrong: Y"). Read only for a sentence about to be accused, so it costs nothing otherwise."""
    clauses = _CLAUSE_BREAK.split(sentence)
    pieces = [piece for k in range(1, len(clauses)) for piece in (" ".join(clauses[:k]), " ".join(clauses[k:]))]
    return bool(pieces) and _states((vectors := embed(pieces)) @ correction, vectors @ claim.T, cutoffs)
