"""Follow-ups and hints: probe one missed rubric point at a time, never stating it."""

from __future__ import annotations

from evaluators.base import Evaluation, Verdict
from knowledge.schema import FollowUp, Question

MAX_FOLLOW_UPS = 2
MAX_HINTS = 2
HINT_COST = 0.5  # score points (of 5) per hint on that question
GOOD_ENOUGH = 4.5  # above this a follow-up would only waste the candidate's time


def choose_follow_up(question: Question, evaluation: Evaluation, *, asked: int, probed: list[str]) -> FollowUp | None:
    """The probe for the heaviest point still missing, if the answer merits one."""
    if asked >= MAX_FOLLOW_UPS or evaluation.gate or evaluation.score >= GOOD_ENOUGH:
        return None
    missing = sorted(
        (p for p in evaluation.points if p.verdict is not Verdict.COVERED and p.point_id not in probed),
        key=lambda p: (-p.weight, p.point_id),
    )
    for point in missing:
        for follow_up in question.follow_ups:
            if follow_up.point == point.point_id:
                return follow_up
    return None


def hint_for(question: Question, *, evaluation: Evaluation | None, hints_used: int) -> str | None:
    """A nudge toward an uncovered point: the probe question, then the point's topic in a few words."""
    if hints_used >= MAX_HINTS:
        return None
    covered = {p.point_id for p in evaluation.points if p.verdict is Verdict.COVERED} if evaluation else set()
    open_points = [p for p in sorted(question.rubric, key=lambda p: -p.weight) if p.id not in covered]
    if not open_points:
        return None
    probes = {f.point: f.prompt for f in reversed(question.follow_ups)}
    probed = [p for p in open_points if p.id in probes]
    if hints_used == 0 and probed:
        return f"Think about this: {probes[probed[0].id]}"
    point = open_points[min(hints_used, len(open_points) - 1)]
    return f"A complete answer also says something about {point.id.replace('-', ' ')}."
