"""The offline rubric scorer: deterministic, no LLM, every credited point backed by a quoted sentence.

The score comes from a model fitted on teacher-graded answers (evaluators/signals.py); the per-point
verdicts and quotes explain it. Only an empty answer or an explicit non-answer ("I don't know") is
scored 0 without the model: short, vague or off-topic answers are scored on their merits.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from evaluators.base import DetectedMisconception, Evaluation, Evaluator, GradingTask, PointVerdict, Verdict
from evaluators.feedback import compose_feedback
from evaluators.misconceptions import corrected_claims, detect_misconceptions
from evaluators.rubric_vectors import RubricVectors
from evaluators.signals import ScoreModel, alignment, content_pieces, fitted_model, stem_recall
from evaluators.text import Unit, content_words, is_non_answer, split_units, without_question_words
from knowledge.embeddings import Embedder

WARM_CHUNK = 8  # questions per model pass when warming
TEXT_CACHE_SIZE = 5_000  # sentences: ~60 MB with their word pieces (~15 per sentence, float16)
PROBE_RIDGE = 0.0005  # how far each misconception probe is held from fitting its few phrasings exactly

TextReading = tuple[np.ndarray, np.ndarray]  # a text's vector, and its content word pieces
# An answer's units and their vectors; the word pieces of its sentences and of its words the question
# does not use (signals.alignment).
Reading = tuple[list[Unit], np.ndarray, np.ndarray, np.ndarray]


class RubricScorer(Evaluator):
    """Sentence-level semantic match against each rubric point; the score from the fitted model."""

    name = "offline-rubric"

    def __init__(self, embedder: Embedder, model: ScoreModel | None = None, cache_size: int = 512,
                 rubric_embedder: Embedder | None = None) -> None:
        # numpy's BLAS on one thread, process-wide: the scorer's products are small, and OpenBLAS's idle
        # threads spin for a while after each one, taking the cores from the embedding runners that come
        # next (measured on 2 cores: one answer scored at p50 20.9 ms with two BLAS threads, 12.3 with one).
        threadpool_limits(1, user_api="blas")
        self._embedder = embedder
        # Rubric texts may come from a store on disk (knowledge/stored_vectors.py); answers never do.
        self._rubric_embedder = rubric_embedder or embedder
        self.model = model or fitted_model()
        self._cache: OrderedDict[str, RubricVectors] = OrderedDict()
        self._text_cache: OrderedDict[str, TextReading] = OrderedDict()
        self._lock = threading.Lock()  # the API scores from several threads
        self._cache_size = cache_size

    def evaluate_many(self, tasks: list[GradingTask]) -> list[Evaluation]:
        """Score many answers with one embedding batch for all their sentences (fast for bulk grading)."""
        rubrics, readings = self._rubrics(tasks), self._read(tasks)
        return [self._score(*args) for args in zip(tasks, rubrics, readings, strict=True)]

    def signals_many(self, tasks: list[GradingTask]) -> list[tuple[dict[str, float], list[float]] | None]:
        """Per answer (None for a non-answer), the model's inputs and each rubric point's closeness to its
        best supporting sentence (one stating a wrong claim supports nothing): what bench/fit_scorer.py
        fits the score and the verdicts' offset on."""
        read = [self._signals(task, rubric, *reading) if reading else None
                for task, rubric, reading in zip(tasks, self._rubrics(tasks), self._read(tasks), strict=True)]
        return [(r[0], [support for support, _ in r[1]]) if r else None for r in read]

    def corrected_claims(self, task: GradingTask) -> set[str]:
        (rubric,), (reading,) = self._rubrics([task]), self._read([task])
        return corrected_claims(task, rubric, *reading[:2], self.model.wrong, self._embedder.embed_batch,
                                {m.claim for m in task.misconceptions}) if reading else set()

    def warm(self, tasks: list[GradingTask]) -> None:
        """Embed rubrics ahead of time (a server does this at start-up, off the request path), a few
        questions per model pass: a request that arrives meanwhile is not queued behind the whole bank."""
        for start in range(0, len(tasks), WARM_CHUNK):
            self._rubrics(tasks[start : start + WARM_CHUNK])

    def _read(self, tasks: list[GradingTask]) -> list[Reading | None]:
        """Per answer, what is read from it (None for a non-answer)."""
        texts = [[*task.earlier_answers, task.answer] for task in tasks]
        unit_lists = [[] if is_non_answer(" ".join(t))
                      else [u for text in t for u in split_units(text)] for t, task in zip(texts, tasks, strict=True)]
        demoted = [without_question_words(" ".join(t), task.question) for t, task in zip(texts, tasks, strict=True)]
        read = self._read_texts([u.text for units in unit_lists for u in units] + demoted)
        return [
            (units, np.stack([read[u.text][0] for u in units]), np.vstack([read[u.text][1] for u in units]),
             read[bag][1]) if units else None
            for units, bag in zip(unit_lists, demoted, strict=True)
        ]

    def _read_texts(self, texts: list[str]) -> dict[str, TextReading]:
        """Each text's vector and word pieces, cached: follow-up turns re-read earlier answers, which
        costs nothing twice."""

        def read(missing: list[str]) -> list[TextReading]:
            vectors, tokens = self._embedder.read(missing)
            return list(zip(vectors, [content_pieces(w).astype(np.float16) for w in tokens], strict=True))

        return dict(zip(texts, self._cached(self._text_cache, TEXT_CACHE_SIZE, texts, read), strict=True))

    def _score(self, task: GradingTask, rubric: RubricVectors, reading: Reading | None) -> Evaluation:
        if reading is None:
            said = any(t.strip() for t in [task.answer, *task.earlier_answers])
            gate: str | None = "non-answer" if said else "empty"
            wrong: list[DetectedMisconception] = []
            verdicts, score = [PointVerdict.judged(p, Verdict.MISSED, 0.0, None) for p in task.rubric], 0.0
            content_share: float | None = None
        else:
            values, supports, wrong = self._signals(task, rubric, *reading)
            verdicts = [PointVerdict.judged(point, *self.model.points.read(support, len(point.evidence)), quote)
                        for point, (support, quote) in zip(task.rubric, supports, strict=True)]
            gate, score, content_share = None, 5 * self.model.share(values), values["stem_recall"]
        score = round(score, 1)  # the model's share is 0-1
        feedback = compose_feedback(verdicts, wrong, gate, score=score, content_share=content_share)
        return Evaluation(
            question_id=task.question_id, score=score, points=verdicts, misconceptions=wrong, feedback=feedback,
            model_answer=task.reference_answer, evaluator=self.name, gate=gate,
        )

    def _signals(
        self, task: GradingTask, rubric: RubricVectors, units: list[Unit], vectors: np.ndarray, pieces: np.ndarray,
        demoted: np.ndarray,
    ) -> tuple[dict[str, float], list[tuple[float, str | None]], list[DetectedMisconception]]:
        found = detect_misconceptions(task, rubric, units, vectors, self.model.wrong, self._embedder.embed_batch)
        supports = _supports(rubric, units, vectors, {i for _, i in found})
        answer_terms = content_words(" ".join(u.text for u in units))  # fence marks and imports left out
        weights = np.array([p.weight for p in task.rubric]) / sum(p.weight for p in task.rubric)
        values = {
            "coverage": float(weights @ [s for s, _ in supports]),
            "alignment": alignment(rubric.reference_pieces, pieces),
            "demoted_alignment": alignment(rubric.demoted_pieces, demoted),
            "stem_recall": stem_recall(answer_terms, task.reference_answer, task.question),
            "wrong": float(len(found)),
        }
        return values, supports, [m for m, _ in found]

    def _rubrics(self, tasks: list[GradingTask]) -> list[RubricVectors]:
        """Each task's rubric vectors, cached; the missing ones built together (one model pass)."""
        keys = [_rubric_key(task) for task in tasks]
        by_key = dict(zip(keys, tasks, strict=True))

        def build(missing: list[str]) -> list[RubricVectors]:
            return RubricVectors.build_many([by_key[k] for k in missing], self._rubric_embedder, PROBE_RIDGE)

        return self._cached(self._cache, self._cache_size, keys, build)

    def _cached(self, cache: OrderedDict, size: int, keys: list[str], build: Callable[[list[str]], list]) -> list:
        """Each key's value from the cache, the missing ones built in one call outside the lock (a model
        pass must not hold up other threads' cache hits); the oldest dropped beyond `size`."""
        with self._lock:
            known = {k: cache[k] for k in keys if k in cache}
        missing = [k for k in dict.fromkeys(keys) if k not in known]
        if missing:
            known.update(zip(missing, build(missing), strict=True))
            with self._lock:
                cache.update({k: known[k] for k in missing})
                while len(cache) > size:
                    cache.popitem(last=False)
        return [known[k] for k in keys]


def _supports(
    rubric: RubricVectors, units: list[Unit], vectors: np.ndarray, wrong_units: set[int]
) -> list[tuple[float, str | None]]:
    """Per point, how closely its best supporting sentence states it, and that sentence. A sentence
    supports only the point it states best, so a quote credited to a point is about that point (a
    sentence on in-place ops is no evidence for a point on out-of-place ops); a sentence that states a
    wrong claim supports nothing. Beside the graders' per-point verdicts (bench_scorer.py, the blind
    splits), credited-or-not macro-F1 is 0.790 so, 0.644 with every sentence supporting every point
    (128 missed points credited, vs 31) and 0.745 with each supporting its two best; the price is a
    sentence that states two points: most fully stated points called missed share their sentence. Letting
    a sentence also support any other point it states at a closeness of 0.64-0.80 did not pay it back
    (blind credited-or-not 0.781-0.793, stated points called missed 41-46 of 258). The
    score gains by the rule too: coverage read without it, leave-one-source-out +0.149 vs +0.162 (SAF-EN 0.360
    vs 0.373, ours 0.780 vs 0.819)."""
    sims = np.stack([(vectors @ pv.T).max(axis=1) for pv in rubric.point_vectors], axis=1)
    owned = sims.argmax(axis=1)[:, None] == np.arange(sims.shape[1])
    owned[list(wrong_units)] = False
    held = np.where(owned, sims, -np.inf)
    best = held.argmax(axis=0)
    return [(float(held[i, p]), units[i].text) if owned[i, p] else (0.0, None) for p, i in enumerate(best)]


def _rubric_key(task: GradingTask) -> str:
    """What a rubric is built from: the answers are left out."""
    return task.model_dump_json(include={"question", "reference_answer", "rubric", "misconceptions"})
