"""A question's texts and their vectors, as the scorer and the misconception detector read them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluators.base import GradingTask
from evaluators.signals import content_pieces
from evaluators.text import clause_pieces, is_negated, split_units, without_question_words
from knowledge.embeddings import Embedder


@dataclass(frozen=True)
class RubricVectors:
    point_vectors: list[np.ndarray]  # per rubric point: its description, then its evidence phrasings
    # Every point text, reference sentence, then each correction and its closing clauses: the entry's
    # true statements.
    truths: np.ndarray
    corrections: list[np.ndarray]  # per wrong claim, its correction's vector, then its closing clauses'
    truth_negated: np.ndarray  # per truth, whether it is phrased negatively
    reference_pieces: np.ndarray  # its content word pieces, each read in its sentence (signals.alignment)
    demoted_pieces: np.ndarray  # the same of its words the question does not use (text.without_question_words)
    misconception_texts: list[list[str]]  # per wrong claim: the claim, then its cues
    misconception_vectors: list[np.ndarray]
    # Per wrong claim, a linear probe (384 weights and a bias) fitted to tell its phrasings from the
    # entry's true statements: see misconception_probes().
    misconception_probes: list[np.ndarray]

    @classmethod
    def build_many(cls, tasks: list[GradingTask], embedder: Embedder, ridge: float) -> list[RubricVectors]:
        """Every task's reference answer read in one model pass (its sentences' vectors and word pieces,
        and the pieces of its question-demoted words), then the rest of each task's texts in one batch
        (a batch of similar texts runs faster than many small ones)."""
        units = [split_units(t.reference_answer) for t in tasks]
        texts = [[u.text for u in us] + [without_question_words(t.reference_answer, t.question)]
                 for t, us in zip(tasks, units, strict=True)]
        vectors, tokens = embedder.read([x for ts in texts for x in ts])
        out, start = [], 0
        for task, us, ts in zip(tasks, units, texts, strict=True):
            prose = vectors[start : start + len(us)][[not u.is_code for u in us]]
            pieces = [content_pieces(t) for t in tokens[start : start + len(ts)]]
            start += len(ts)
            point_texts = [[p.description, *p.evidence] for p in task.rubric]
            m_texts = [[m.claim, *m.cues] for m in task.misconceptions]
            # A correction is read whole and from each clause break on ("That is LayerNorm; BatchNorm
            # normalises each feature..." states the second clause). The text before a break is left out:
            # it can concede ("That works, but ..."); with both sides, misconceptions.py's counts are the same.
            corrections = [[m.correction, *clause_pieces(m.correction)[1::2]] for m in task.misconceptions]
            groups = [*point_texts, *m_texts, *corrections]
            vecs = embedder.embed_batch([t for group in groups for t in group])
            split = np.split(vecs, np.cumsum([len(group) for group in groups])[:-1])
            k, j = len(point_texts), len(point_texts) + len(m_texts)
            point_vectors, m_vectors, correction_vectors = split[:k], split[k:j], split[j:]
            truths = np.vstack([*point_vectors, prose.reshape(-1, vecs.shape[1]), *correction_vectors])
            sentences = [u.text for u in us if not u.is_code] + [t for c in corrections for t in c]
            out.append(cls(
                point_vectors=point_vectors,
                truths=truths,
                corrections=correction_vectors,
                truth_negated=np.array([is_negated(t) for g in [*point_texts, sentences] for t in g], dtype=bool),
                reference_pieces=np.vstack(pieces[:-1]) if len(pieces) > 1 else pieces[-1][:0],
                demoted_pieces=pieces[-1],
                misconception_texts=m_texts,
                misconception_vectors=m_vectors,
                misconception_probes=misconception_probes(m_vectors, truths, ridge),
            ))
        return out

def misconception_probes(wrong: list[np.ndarray], truths: np.ndarray, ridge: float) -> list[np.ndarray]:
    """For each wrong claim, weights w (with a bias last) so that [v, 1] @ w is near +1 for its phrasings
    and near -1 for the entry's true statements: ridge regression, both sides weighted equally.

    Nearest-phrasing similarity treats every dimension alike, so a true sentence on a wrong claim's
    topic can sit as close to the claim as to the truth; a probe fitted on the bank's own texts (never
    on graded answers) leans on the dimensions that separate the two sides."""
    # Solved in the dual, (n x n) for the n texts rather than (385 x 385): the same weights, since
    # (X'SX + rI)^-1 X'S y = X'S^1/2 (S^1/2 XX' S^1/2 + rI)^-1 S^1/2 y, at about a tenth of the cost.
    truths = np.hstack([truths, np.ones((len(truths), 1))]).astype(np.float64)  # a bias column
    probes = []
    for claim_vectors in wrong:
        x = np.vstack([np.hstack([claim_vectors, np.ones((len(claim_vectors), 1))]), truths])
        n = len(claim_vectors)
        y = np.r_[np.ones(n), -np.ones(len(truths))]
        root = np.sqrt(np.r_[np.full(n, 0.5 / n), np.full(len(truths), 0.5 / len(truths))])
        dual = np.linalg.solve(root[:, None] * (x @ x.T) * root[None, :] + ridge * np.eye(len(x)), root * y)
        probes.append((x.T @ (root * dual)).astype(np.float32))
    return probes
