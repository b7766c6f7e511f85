"""Finding wrong claims in an answer: sentences that state a known misconception, or negate a rubric point."""

from __future__ import annotations

import numpy as np

from evaluators.base import DetectedMisconception, GradingTask
from evaluators.rubric_vectors import RubricVectors, same_polarity
from evaluators.text import Unit, content_words, is_contrastive, is_negated, is_statement, order_contradicts
from evaluators.thresholds import Thresholds
from knowledge.schema import Misconception


class MisconceptionDetector:
    """Quotes each wrong claim an answer makes; the scorer docks points for them and excludes their
    sentences from credit."""

    def __init__(self, thresholds: Thresholds) -> None:
        self.t = thresholds

    def detect(
        self, task: GradingTask, rubric: RubricVectors, units: list[Unit], vectors: np.ndarray
    ) -> tuple[list[DetectedMisconception], set[int], np.ndarray]:
        """The wrong claims found (one quote each), the indexes of the units that state them, and per
        unit how closely it resembles any wrong claim (the scorer withholds credit from the suspicious)."""
        found: list[DetectedMisconception] = []
        flagged: set[int] = set()
        wrongness = np.zeros(len(units))
        for m, m_texts, m_vecs, probe in zip(
            task.misconceptions, rubric.misconception_texts, rubric.misconception_vectors,
            rubric.misconception_probes, strict=True,
        ):
            all_sims = vectors @ m_vecs.T if len(units) else np.zeros((0, len(m_texts)))
            # A sentence that denies the wrong claim ("p is not the keep probability") is right, and
            # so is one that names it only to contrast it ("adds into .grad rather than replacing it");
            # the clause before the contrast is its own unit and is still read.
            for i, unit in enumerate(units):
                if is_contrastive(unit.text):
                    all_sims[i, :] = 0.0
                else:
                    all_sims[i, ~same_polarity(unit, m_texts)] = 0.0
                    # "zero_grad before backward" is not "backward, then zero_grad": embeddings barely
                    # see the order, so a phrasing that sequences the same steps the other way is not it.
                    for j in np.flatnonzero(all_sims[i] >= self.t.suspicion_floor):
                        if order_contradicts(unit.text, m_texts[j]):
                            all_sims[i, j] = 0.0
            sims = all_sims.max(axis=1) if len(units) else np.zeros(0)
            wrongness = np.maximum(wrongness, sims)
            for i in np.argsort(-sims):
                if sims[i] < self.t.suspicion_floor:
                    break
                if self._states(units[i], vectors[i], m, m_texts, all_sims[i], rubric, probe):
                    found.append(DetectedMisconception(claim=m.claim, correction=m.correction, quote=units[i].text))
                    flagged.add(int(i))
                    break
        for i, unit in enumerate(units):
            contradicted = self._contradicts(unit, vectors[i], rubric, task)
            if i not in flagged and contradicted:
                found.append(contradicted)
                flagged.add(i)
        return found, flagged, wrongness

    def _states(
        self, unit: Unit, vector: np.ndarray, m: Misconception, m_texts: list[str], sims: np.ndarray,
        rubric: RubricVectors, probe: np.ndarray,
    ) -> bool:
        """Whether this sentence, already somewhat like the wrong claim, states it.

        Two judgments decide: which side of the truth the sentence is on, and whether it uses the wrong
        claim's own words. The claim's probe (misconception_probes) judges the side when it is sure;
        otherwise similarity does: close enough to a phrasing, not closer to a true statement, and not
        scored by the probe as the truth."""
        sim = float(sims.max())
        if not is_statement(unit):
            return False
        if unit.is_code and not _states_cue_in_code(unit, m.cues):
            return False
        belief = float(vector @ probe[:-1] + probe[-1])
        sure = belief >= self.t.probe_sure
        if not sure:
            if sim < self.t.misconception and not _restates(unit, m_texts, sims, self.t):
                return False
            if self._closer_to_truth(unit, vector, rubric, sim):
                return False
            if belief < self.t.probe_veto:
                return False
        # Only the phrasings nearly as close as the nearest say what the sentence says: with a loose
        # band, a far phrasing's new vocabulary could undo a detection.
        floor = max(self.t.suspicion_floor if sure else self.t.misconception, sim - self.t.wording_band)
        near = [t for t, s in zip(m_texts, sims, strict=True) if s >= floor]
        return sim >= self.t.misconception_sure or _uses_wrong_words(unit, near, rubric)

    def _closer_to_truth(self, unit: Unit, vector: np.ndarray, rubric: RubricVectors, m_sim: float) -> bool:
        """A sentence nearer to a correct rubric statement (same polarity) is not the misconception."""
        for texts, point_vecs in zip(rubric.point_texts, rubric.point_vectors, strict=True):
            close = point_vecs @ vector >= m_sim - self.t.truth_margin
            if np.any(close & same_polarity(unit, texts)):
                return True
        return False

    def _contradicts(
        self, unit: Unit, vector: np.ndarray, rubric: RubricVectors, task: GradingTask
    ) -> DetectedMisconception | None:
        """'zero_grad does not reset gradients': a negated near-copy of a true rubric statement.

        Only the candidate's negation counts: rubric texts often carry a contrastive 'not' clause."""
        if not is_negated(unit.text):
            return None
        for point, texts, point_vecs in zip(task.rubric, rubric.point_texts, rubric.point_vectors, strict=True):
            sims = np.where([is_negated(t) for t in texts], -1.0, point_vecs @ vector)  # plain statements only
            j = int(np.argmax(sims))
            near_copy = content_words(unit.text) <= content_words(texts[j]) | {"not", "never", "no"}
            if sims[j] >= self.t.contradiction and near_copy:
                return DetectedMisconception(
                    claim=f"Contradicts: {point.description}", correction=point.description, quote=unit.text
                )
        return None


def _restates(unit: Unit, m_texts: list[str], sims: np.ndarray, t: Thresholds) -> bool:
    """A statement made only of a wrong phrasing's own words (three or more), and still resembling it,
    says that phrasing: "There's no need to divide the loss" is only 0.67 like "no need to divide the
    loss by accumulation steps", because the phrasing's extra words dilute its embedding."""
    terms = _plain_terms(unit.text)
    return len(terms) >= 3 and any(
        sim >= t.suspicion_floor and terms <= _plain_terms(text) for text, sim in zip(m_texts, sims, strict=True)
    )


def _plain_terms(text: str) -> frozenset[str]:
    """Content words without the negations: polarity is checked on its own ('don't need' = 'no need')."""
    return frozenset(w for w in content_words(text) if not is_negated(w))


def _states_cue_in_code(unit: Unit, cues: list[str]) -> bool:
    """Code lines look alike to embeddings; a code line states a wrong claim only if it has a cue's terms."""
    terms = content_words(unit.text)
    return any(content_words(cue) and content_words(cue) <= terms for cue in cues)


def _uses_wrong_words(unit: Unit, m_texts: list[str], rubric: RubricVectors) -> bool:
    """Embeddings blur 'adds into .grad' and 'overwrites .grad'; the words that only the wrong claim
    uses ('overwrites', 'copy', 'aliases') decide. Only the phrasings the sentence is near count: with
    many cues per claim, their pooled vocabulary would let almost any sentence qualify. With no such
    words, similarity alone decides."""
    distinctive = set().union(*(content_words(t) for t in m_texts)) - rubric.truth_terms
    return not distinctive or bool(content_words(unit.text) & distinctive)
