"""Follow-ups and hints: probe one missed rubric point at a time, never stating it."""

from __future__ import annotations

from collections.abc import Sequence

from evaluators.base import Evaluation, Verdict
from knowledge.schema import FollowUp, Question

MAX_FOLLOW_UPS = 2
MAX_HINTS = 2
GOOD_ENOUGH = 4.5  # above this a follow-up would only waste the candidate's time


def choose_follow_up(
    question: Question, evaluation: Evaluation, *, score: float, asked: int, probed: list[str],
    hinted: Sequence[str] = (),
) -> FollowUp | None:
    """The probe for the heaviest point still missing, if the answer merits one: first a point a hidden check
    found missing in the code (the run is the surest evidence of a gap), asked with its own probe or, lacking
    one, about the failed check. `score` is the answer's own (for a code task, its code and words together),
    not the rubric's alone. A probe already given as a hint on this question (`hinted`: the hints' texts, which
    quote their probe) is not asked again."""
    if asked >= MAX_FOLLOW_UPS or evaluation.gate or score >= GOOD_ENOUGH:
        return None
    missing = sorted(
        (p for p in evaluation.points if p.verdict is not Verdict.COVERED and p.point_id not in probed),
        key=lambda p: (not p.checks, -p.weight, p.point_id),
    )
    for point in missing:
        for follow_up in question.follow_ups:
            if follow_up.point == point.point_id and not any(follow_up.prompt in h for h in hinted):
                return follow_up
        if point.checks and question.code is not None:
            return FollowUp(point=point.point_id, prompt=_about_failed_check(question, point.checks[0]))
    return None


def _about_failed_check(question: Question, check_name: str) -> str:
    """A probe about a failed hidden check, as an interviewer who ran the code would put it: what failed, not
    why (the candidate finds the cause)."""
    assert question.code is not None
    check = next(c for c in question.code.checks if c.name == check_name)
    return (f"Your code failed one of my checks: {check.description.rstrip('.')}. "
            "What in your code causes that, and how would you fix it?")


def hint_for(
    question: Question, *, evaluation: Evaluation | None, hints_used: int, target: str | None = None,
    hints_on_turn: int = 0,
) -> str | None:
    """A nudge toward an uncovered point, each hint toward another one, heaviest first: its probe question,
    else its topic in a few words. On a follow-up (`target`: the point it probes, whose probe is already on
    screen) the one hint is that point's topic."""
    if hints_used >= MAX_HINTS:
        return None
    if target is not None:
        return None if hints_on_turn else _about(target)
    covered = {p.point_id for p in evaluation.points if p.verdict is Verdict.COVERED} if evaluation else set()
    open_points = [p for p in sorted(question.rubric, key=lambda p: -p.weight) if p.id not in covered]
    if hints_used >= len(open_points):
        return None
    point = open_points[hints_used]
    probe = next((f.prompt for f in question.follow_ups if f.point == point.id), None)
    return f"Think about this: {probe}" if probe else _about(point.id)


def _about(point_id: str) -> str:
    return f"A complete answer also says something about {point_id.replace('-', ' ')}."
