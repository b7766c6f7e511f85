"""Finding wrong claims in an answer: only on clear evidence, since an accusation costs the candidate.

A sentence is read as stating a known misconception only when all of these hold:
- the claim's probe (fitted on the bank's own texts to tell the claim's phrasings from the entry's true
  statements) puts it on the claim's side;
- it is close to one of the claim's phrasings of the same polarity ("X does not Y" never states "X does Y");
- it is no closer to a phrasing of the other polarity: "It is not true that X" is nearer X itself than any
  negated cue, and denies it. This left 0 of bench_scorer.py's 1,488 refuting answers accused (vs 1, below)
  and changed no blind answer's accusation. The cost is where a negation word is incidental: one
  misconceived development answer is no longer caught ("Adam is adaptive so it doesn't really need
  [warmup]" is nearest the claim "Warmup is only needed when training from scratch with SGD"; 24.4%
  caught vs 25.6%, same cut-offs), and one other loses one of its two accusations ("there's no
  difference, model(x) is just syntactic sugar ..."). Real held-out Pearson moved by at most 0.001;
- it is clearly closer to that phrasing than to any true statement of the entry (rubric points,
  reference sentences, corrections and the text after a clause break in one) of its own polarity: a
  sentence that states the point the claim contradicts is not accused;
- the answer does not state the claim's correction (corrected_claims): no sentence of it, nor the text
  either side of a clause break in one (";", ":", ", but"), is close to the correction (read whole or
  from one of its own clause breaks on) and clearly closer to it than to the claim, by the same
  cut-offs. An answer that states the truth names the claim only to reject it ("A common mistake is to
  think X. In fact, Y."; "Some believe X, but that is wrong: Y", which read whole states X).
  The correction's own clauses were added when MiniLM's graph was rebuilt (knowledge/integer_graph.py):
  its vectors moved one refuting answer's closeness to the whole of a two-clause correction from 0.7503
  to 0.7499, under the 0.75 cut-off, although the answer states the correction's first clause word for
  word. With them: 0 of the 1,488 accused (1 without), the same cut-offs chosen, 24.4% of misconceived
  development answers caught either way.
  Measured with bench_scorer.py's refuting answers (the bank's own claims in six refuting frames): 459
  of 1,488 were accused with no correction check, 11 with whole sentences only, 3 with clauses too (all
  three on one entry whose claim and correction swap the same words: "BatchNorm normalises each sample
  across its own features" and "... each feature across the samples", cosine 0.967 in MiniLM). Neither
  step changed the misconceived development answers caught or any calibration score. The corrections'
  closing clauses read as truths too (rubric_vectors.py) leave 1 of the 1,488: a negated sentence ("It is
  not true that ...") meets the one negated cue of that entry, and no negated truth. The cut-off search
  chose the same cut-offs (25.6% of misconceived development answers caught); of the bank's 2,028 claim
  and cue phrasings, the one word-swapped claim itself is no longer accused; on the blind splits one
  misconceived answer is no longer caught (its probe moved with the added truths). The check
  replaced a list of contrast markers ("rather than", "unlike", "instead of"...) that, beside it,
  changed none of those. The LLM judge clears the claims its model reports by the same check.
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
