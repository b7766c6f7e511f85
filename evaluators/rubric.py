"""The offline rubric scorer: deterministic, no LLM, every credit backed by a quoted sentence."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from evaluators.base import DetectedMisconception, Evaluation, Evaluator, GradingTask, PointVerdict, Verdict
from evaluators.feedback import compose_feedback
from evaluators.misconceptions import MisconceptionDetector
from evaluators.rubric_vectors import RubricVectors, misconception_probes, same_polarity
from evaluators.text import (
    Unit,
    content_words,
    is_evasive,
    is_statement,
    says_nothing_new,
    spell_out_code,
    split_units,
)
from evaluators.thresholds import Thresholds
from knowledge.embeddings import Embedder

UNIT_CACHE_SIZE = 20_000  # ~30 MB of 384-d float32 vectors


@dataclass
class _Support:
    value: float = 0.0
    unit: Unit | None = None


class RubricScorer(Evaluator):
    """Sentence-level semantic match against each rubric point, with lexical and structural signals."""

    name = "offline-rubric"

    def __init__(
        self, embedder: Embedder, thresholds: Thresholds | None = None, cache_size: int = 512,
        rubric_embedder: Embedder | None = None,
    ) -> None:
        self._embedder = embedder
        # Rubric texts may come from a store on disk (knowledge/stored_vectors.py); answers never do.
        self._rubric_embedder = rubric_embedder or embedder
        self.t = thresholds or Thresholds()
        self._detector = MisconceptionDetector(self.t)
        self._cache: OrderedDict[str, RubricVectors] = OrderedDict()
        self._unit_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # the API scores from several threads
        self._cache_size = cache_size

    def evaluate(self, task: GradingTask) -> Evaluation:
        return self.evaluate_many([task])[0]

    def evaluate_many(self, tasks: list[GradingTask]) -> list[Evaluation]:
        """Score many answers with one embedding batch for all their sentences (fast for bulk grading)."""
        unit_lists = [self._units(task) for task in tasks]
        vectors = self._unit_vectors([u.normalised for units in unit_lists for u in units])
        results, start = [], 0
        for task, units in zip(tasks, unit_lists, strict=True):
            results.append(self._score(task, units, vectors[start : start + len(units)]))
            start += len(units)
        return results

    def warm(self, tasks: list[GradingTask]) -> None:
        """Embed rubrics ahead of time (a server does this at start-up, off the request path)."""
        for task in tasks:
            self._rubric_vectors(task)

    def _unit_vectors(self, texts: list[str]) -> np.ndarray:
        """Sentence vectors, cached: follow-up turns re-read earlier answers, which costs nothing twice."""
        if not texts:
            return np.zeros((0, self._embedder.dimensions), dtype=np.float32)
        with self._lock:
            known = {t: self._unit_cache[t] for t in dict.fromkeys(texts) if t in self._unit_cache}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            fresh = dict(zip(missing, self._embedder.embed_batch(missing), strict=True))
            known.update(fresh)
            with self._lock:
                self._unit_cache.update(fresh)
                while len(self._unit_cache) > UNIT_CACHE_SIZE:
                    self._unit_cache.popitem(last=False)
        return np.stack([known[t] for t in texts])

    def _units(self, task: GradingTask) -> list[Unit]:
        if is_evasive(task.answer) and not task.earlier_answers:
            return []
        return [u for text in [*task.earlier_answers, task.answer] for u in split_units(text)]

    def _score(self, task: GradingTask, units: list[Unit], vectors: np.ndarray) -> Evaluation:
        gate = self._gate(task, units)
        rubric = self._rubric_vectors(task)
        if gate:
            return self._result(task, self._verdicts(task, [_Support()] * len(task.rubric)), [], gate)
        wrong, wrong_units, wrongness = self._detector.detect(task, rubric, units, vectors)
        supports = self._supports(rubric, units, vectors, exclude=_overlapping(units, wrong_units),
                                  wrongness=wrongness, question_words=content_words(task.question))
        verdicts = self._verdicts(task, supports)
        # Not one point even partly addressed (faint resemblance only): the answer is about something
        # else, and a strict interviewer gives it nothing rather than crumbs of credit.
        if all(v.verdict is Verdict.MISSED for v in verdicts) and not wrong:
            gate = "off-topic"
        return self._result(task, verdicts, wrong, gate)

    def _gate(self, task: GradingTask, units: list[Unit]) -> str | None:
        if not task.answer.strip() and not task.earlier_answers:
            return "empty"
        if not units:
            return "evasive" if task.answer.strip() else "empty"
        if sum(len(content_words(u.text)) for u in units) < 3:
            return "too-short"
        return None

    def _supports(
        self, rubric: RubricVectors, units: list[Unit], vectors: np.ndarray, exclude: set[int],
        wrongness: np.ndarray, question_words: frozenset[str],
    ) -> list[_Support]:
        values = np.zeros((len(units), len(rubric.point_texts)))
        for p, (texts, point_vecs, terms) in enumerate(
            zip(rubric.point_texts, rubric.point_vectors, rubric.point_terms, strict=True)
        ):
            sims = vectors @ point_vecs.T if len(units) else np.zeros((0, len(texts)))
            key_terms = terms - question_words  # echoing the question's own words is not evidence
            for i, unit in enumerate(units):
                if i in exclude:
                    continue
                # "X does not Y" only weakly supports "X does Y": the best phrasing is chosen after
                # that discount, so a negated phrasing ("isn't declared upfront, it is recorded...")
                # cannot shadow a plain one that the sentence agrees with.
                polarity = self._polarity_factors(unit, texts)
                j = int(np.argmax(sims[i] * polarity))
                # A sentence that reads at least as much like a known wrong claim earns nothing.
                if wrongness[i] >= self.t.suspicion_floor and wrongness[i] >= sims[i, j] - self.t.truth_margin:
                    continue
                value = float(sims[i, j]) + self._lexical(unit, key_terms)
                if not is_statement(unit):
                    value *= self.t.non_statement_factor
                if says_nothing_new(unit, question_words):
                    value *= self.t.echo_factor
                values[i, p] = value * polarity[j]
        return self._assign(units, values)

    def _assign(self, units: list[Unit], values: np.ndarray) -> list[_Support]:
        """Each point takes its best sentence, but a sentence already used for another point counts
        for less each time: one vague remark ("gradients flow back from the loss") must not collect
        credit on three rubric points, as a strict interviewer would not allow it. Points with the
        clearest evidence choose first; a sentence's clauses are units of their own, so a sentence
        that makes several points can still earn them clause by clause. (Exempting clear matches
        from the discount was tried: worse on every calibration split.)"""
        supports = [_Support() for _ in range(values.shape[1])]
        if not len(units):
            return supports
        uses = np.zeros(len(units))
        for p in sorted(range(values.shape[1]), key=lambda p: -values[:, p].max()):
            discounted = values[:, p] * self.t.reuse_factor**uses
            i = int(np.argmax(discounted))
            if discounted[i] > 0:
                supports[p] = _Support(float(discounted[i]), units[i])
                uses[i] += 1
        return supports

    def _polarity_factors(self, unit: Unit, texts: list[str]) -> np.ndarray:
        return np.where(same_polarity(unit, texts), 1.0, self.t.polarity_factor)

    def _lexical(self, unit: Unit, terms: set[str]) -> float:
        shared = len(content_words(unit.text) & terms)
        # The embedding model reads a code line poorly, so the key terms it shares weigh more.
        factor = self.t.code_lexical_factor if unit.is_code else 1.0
        return factor * self.t.lexical_bonus * min(shared, 3) / 3

    def _verdicts(self, task: GradingTask, supports: list[_Support]) -> list[PointVerdict]:
        out = []
        span = self.t.credit_full - self.t.credit_floor
        for point, support in zip(task.rubric, supports, strict=True):
            credit = float(np.clip((support.value - self.t.credit_floor) / span, 0.0, 1.0))
            if support.value >= self.t.covered:
                verdict = Verdict.COVERED
            elif support.value >= self.t.partial:
                verdict = Verdict.PARTIAL
            else:
                verdict, credit = Verdict.MISSED, min(credit, 0.25)
            quote = support.unit.text if support.unit else None
            out.append(PointVerdict.judged(point, verdict, round(credit, 3), quote))
        return out

    def _result(
        self, task: GradingTask, verdicts: list[PointVerdict], wrong: list[DetectedMisconception], gate: str | None
    ) -> Evaluation:
        total = sum(p.weight for p in verdicts)
        earned = 0.0 if gate else 5 * sum(p.weight * p.credit for p in verdicts) / total
        score = max(0.0, earned - self.t.misconception_penalty * len(wrong))
        if gate:
            verdicts = [p.model_copy(update={"verdict": Verdict.MISSED, "credit": 0.0, "evidence": None})
                        for p in verdicts]
        return Evaluation(
            question_id=task.question_id,
            score=round(score, 1),
            points=verdicts,
            misconceptions=wrong,
            feedback=compose_feedback(verdicts, wrong, gate),
            model_answer=task.reference_answer,
            evaluator=self.name,
            gate=gate,
        )

    def _rubric_vectors(self, task: GradingTask) -> RubricVectors:
        key = _rubric_key(task)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        point_texts = [[p.description, *p.evidence] for p in task.rubric]
        if self.t.reference_sentences:
            self._add_reference_sentences(task, point_texts)
        m_texts = [[m.claim, *m.cues] for m in task.misconceptions]
        # The reference answer's prose sentences train the probes only (the truth in a candidate's
        # register); one batch embeds everything, as a batch of similar lengths runs faster.
        truth_sentences = _prose(task.reference_answer) if m_texts else []
        flat = [t for group in point_texts + m_texts for t in group] + truth_sentences
        vecs = self._rubric_embedder.embed_batch([spell_out_code(t) for t in flat])
        groups, start = [], 0
        for group in point_texts + m_texts:
            groups.append(vecs[start : start + len(group)])
            start += len(group)
        point_vectors, m_vectors = groups[: len(point_texts)], groups[len(point_texts) :]
        truths = np.vstack([*point_vectors, vecs[start:]])
        value = RubricVectors(
            point_texts=point_texts,
            point_vectors=point_vectors,
            point_terms=[set().union(*(content_words(t) for t in texts)) for texts in point_texts],
            misconception_texts=m_texts,
            misconception_vectors=m_vectors,
            misconception_probes=misconception_probes(m_vectors, truths, self.t.probe_ridge),
        )
        with self._lock:
            self._cache[key] = value
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return value

    def _add_reference_sentences(self, task: GradingTask, point_texts: list[list[str]]) -> None:
        """Each prose sentence of the reference answer joins the point it states best: more ways of
        saying each idea for a paraphrase to match."""
        sentences = _prose(task.reference_answer)
        if not sentences:
            return
        embed = self._rubric_embedder.embed_batch
        sims = embed([spell_out_code(s) for s in sentences]) @ embed([spell_out_code(t[0]) for t in point_texts]).T
        for i, sentence in enumerate(sentences):
            j = int(np.argmax(sims[i]))
            if sims[i, j] >= self.t.reference_assign and sentence not in point_texts[j]:
                point_texts[j].append(sentence)


def _prose(text: str) -> list[str]:
    """The sentences and clauses of a text outside its code."""
    return [u.text for u in split_units(text) if not u.is_code]


def _rubric_key(task: GradingTask) -> str:
    blob = repr(([p.model_dump() for p in task.rubric], [m.model_dump() for m in task.misconceptions]))
    return hashlib.sha1(blob.encode()).hexdigest()


def _overlapping(units: list[Unit], flagged: set[int]) -> set[int]:
    """A flagged sentence's clauses, and the sentence around a flagged clause, earn nothing either."""
    texts = [units[i].text for i in flagged]
    return {i for i, unit in enumerate(units) if any(unit.text in t or t in unit.text for t in texts)}
