"""The LLM judge's verdicts and claims checked against the answer: credit and charges stand only on a quote
the answer holds, and on rubric points and misconceptions the question lists."""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from evaluators.base import DetectedMisconception, GradingTask, PointVerdict, Verdict
from evaluators.judge_reply import JudgedMisconception, JudgedPoint
from evaluators.quotes import clean_quote, find_quote, normalise
from evaluators.text import is_negated
from knowledge.schema import Misconception

CREDIT = {Verdict.COVERED: 1.0, Verdict.PARTIAL: 0.5, Verdict.MISSED: 0.0}
CLAIM_MATCH = 0.6  # how close a returned claim must be to a listed misconception


def known_ids(task: GradingTask, judged: list[JudgedPoint]) -> tuple[dict[str, JudgedPoint], int]:
    """The verdicts on the task's rubric points by id (case aside; a repeated id cannot earn twice), and
    how many verdicts name no rubric point."""
    ids = {p.id.casefold(): p.id for p in task.rubric}
    by_id: dict[str, JudgedPoint] = {}
    for j in judged:
        if j.point_id.casefold() in ids:
            by_id.setdefault(ids[j.point_id.casefold()], j)
    return by_id, sum(j.point_id.casefold() not in ids for j in judged)


def verified_points(
    task: GradingTask, by_id: dict[str, JudgedPoint], texts: list[str]
) -> tuple[list[PointVerdict], list[str]]:
    """One verdict per rubric point, in rubric order; credit only with a quote found in the answer, and the
    evidence kept is the answer's own words there (not the model's copy of them)."""
    out, dropped = [], []
    for point in task.rubric:
        given = by_id.get(point.id)
        verdict = Verdict(given.verdict) if given else Verdict.MISSED
        quote = find_quote(clean_quote(given.evidence_quote or ""), texts) if given else None
        if verdict is not Verdict.MISSED and quote is None:
            dropped.append(point.id)
            verdict = Verdict.MISSED
        out.append(PointVerdict.judged(point, verdict, CREDIT[verdict], quote if verdict is not Verdict.MISSED else ""))
    return out, dropped


def verified_misconceptions(
    listed: list[Misconception], judged: list[JudgedMisconception], texts: list[str]
) -> tuple[list[DetectedMisconception], int, int]:
    """Listed misconceptions whose quote is in the answer; others are counted, never penalised."""
    found: dict[str, DetectedMisconception] = {}
    dropped = unlisted = 0
    for j in judged:
        match = _match_claim(j.claim, listed)
        quote = find_quote(clean_quote(j.quote), texts)
        if match is None:
            unlisted += 1
        elif quote is None or not _same_polarity(quote, match):
            dropped += 1
        elif match.claim not in found:
            found[match.claim] = DetectedMisconception(
                claim=match.claim, correction=match.correction, quote=quote
            )
    return list(found.values()), dropped, unlisted


def _same_polarity(quote: str, claim: Misconception) -> bool:
    """A quote states a claim only in the claim's polarity: "zero_grad does not reset the weights" and "It is
    not true that ..." deny "zero_grad resets the weights". A claim stated with an incidental negation goes
    uncharged too: an answer that refutes a claim is never to be accused of it, and a missed charge costs
    less than a false one."""
    return is_negated(quote) == is_negated(claim.claim) and not _DENIAL.search(quote)


# Words that call what they stand beside untrue: "X, but that is wrong", "Myth: X", "the misconception that X".
_DENIAL = re.compile(r"\b(wrong|false|untrue|incorrect|myths?|misconceptions?|mistaken|not true)\b", re.I)


def _match_claim(claim: str, listed: list[Misconception]) -> Misconception | None:
    wanted = normalise(re.sub(r"^\s*\d+[.)]\s*", "", claim))  # "2. You call..." names the second
    best, best_ratio = None, 0.0
    for m in listed:
        have = normalise(m.claim)
        shorter, longer = sorted((wanted, have), key=len)
        # One holding the other names it ("...: the claim" quoted whole), unless it is a word or two of it.
        contained = bool(shorter) and shorter in longer and len(shorter) >= CLAIM_MATCH * len(longer)
        ratio = 1.0 if contained else SequenceMatcher(None, wanted, have).ratio()
        if ratio > best_ratio:
            best, best_ratio = m, ratio
    return best if best_ratio >= CLAIM_MATCH else None


def check_notes(
    *, dropped: list[str], unjudged: list[str], wrong_dropped: int, unknown: int, unlisted: int, refuted: int,
    unstated: list[str],
) -> list[str]:
    """What the checks set aside of the reply, one note each."""
    notes = []
    if unjudged:
        notes.append(f"LLM judge: {len(unjudged)} rubric point(s) the reply did not judge read offline "
                     f"({', '.join(unjudged)})")
    if dropped:
        notes.append(
            f"LLM judge: {len(dropped)} verdict(s) whose quote is not in the answer read offline instead "
            f"({', '.join(dropped)})"
        )
    if unstated:
        notes.append(
            f"LLM judge: {len(unstated)} verdict(s) lowered to what the quote states of the point "
            f"({', '.join(unstated)})"
        )
    if wrong_dropped:
        notes.append(f"LLM judge: {wrong_dropped} misconception(s) ignored, quote not found in the answer or "
                     "denying the claim")
    if refuted:
        notes.append(f"LLM judge: {refuted} misconception(s) ignored, the answer states the correction")
    if unknown:
        notes.append(f"LLM judge: {unknown} verdict(s) for unknown rubric point ids ignored")
    if unlisted:
        notes.append(f"LLM judge: {unlisted} claim(s) not among the known misconceptions ignored")
    return notes
