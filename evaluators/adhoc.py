"""Ad-hoc questions (a user's own pack): derive rubric points from a reference answer alone."""

from __future__ import annotations

import re

from evaluators.base import GradingTask
from evaluators.text import content_words, split_units
from knowledge.schema import RubricPoint

MAX_POINTS = 7


def derive_rubric(reference_answer: str) -> list[RubricPoint]:
    """Each informative claim of the reference becomes one equally weighted key point. Every sentence
    as a point, with no minimum of content words, no cap and no dropping of contained sentences, gained
    nothing on the train sources (leave-one-source-out gain over cosine +0.154 vs +0.155) and lost on the
    held-out splits (refitted: SciEntsBank unseen questions 0.463 vs 0.508, unseen domains 0.517 vs 0.527,
    SAF-EN unseen questions 0.532 vs 0.554; both under the earlier per-source weighting), so these rules stay.
    Each claim weighted by its content words that the question does not use (1-5), so a claim that echoes
    the question counts less: leave-one-source-out +0.162 vs +0.162 (SAF-EN 0.376 vs 0.373, SciEntsBank
    0.470 vs 0.472); equal weights stay."""
    claims: list[str] = []
    for unit in split_units(reference_answer):
        text = unit.text.strip()
        if unit.is_code or len(content_words(text)) < 3 or any(text in c or c in text for c in claims):
            continue
        claims.append(text.rstrip(";:, "))  # a sentence split at ";" keeps no dangling separator
    if not claims:
        claims = [" ".join(reference_answer.split())]
    # Of the first fourteen claims, the seven with the most content words, numbered as the reference orders them.
    kept = set(sorted(claims[: MAX_POINTS * 2], key=lambda c: -len(content_words(c)))[:MAX_POINTS])
    return [
        RubricPoint(
            id=f"claim-{i + 1}",
            description=claim if len(claim) >= 10 else f"Expected answer: {claim}",
            weight=1.0,
            evidence=[claim],
        )
        for i, claim in enumerate(c for c in claims if c in kept)
    ]


def adhoc_task(*, question: str, reference_answer: str, answer: str) -> GradingTask:
    if not re.search(r"\w", reference_answer or ""):
        # "..." or "-" was told it was empty: it is not, it has nothing to grade against.
        what = "has no words to grade against" if (reference_answer or "").strip() else "is empty"
        raise ValueError(f"reference_answer {what}: give the answer you expect")
    return GradingTask(
        question=question,
        reference_answer=reference_answer,
        rubric=derive_rubric(reference_answer),
        answer=answer,
    )
