"""Follow-ups and hints: probe one missed rubric point at a time, never stating it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluators.base import Evaluation, PointVerdict, Verdict
from evaluators.code.results import NOT_LOADED, Failure, not_run_reason
from knowledge.schema import FollowUp, Question, RubricPoint

MAX_FOLLOW_UPS = 2
MAX_HINTS = 2
GOOD_ENOUGH = 4.5  # above this a follow-up would only waste the candidate's time
# Asked of a code task answered in words alone once no probe about words is left: the task is the code.
SHOW_IN_CODE = ("You have explained it in words; now show it in code. Write your implementation and send it, "
                "and I will run it through my checks.")


def choose_follow_up(
    question: Question, evaluation: Evaluation, *, score: float, asked: int, probed: list[str],
    hinted: Sequence[str] = (), run: Mapping[str, Any] | None = None, code_asked: bool = False,
) -> FollowUp | None:
    """The probe for the heaviest point still missing, if the answer merits one: first a point a hidden check
    found missing in the code (the run is the surest evidence of a gap), asked with its own probe or, lacking
    one, about the failed check. `score` is the answer's own (for a code task, its code and words together),
    not the rubric's alone. A probe already given as a hint on this question (`hinted`: the hints' texts, which
    quote their probe) is not asked again, nor one that states a failure the last run (`run`) did not show, nor one
    about the candidate's code when none was sent on the question (an answer in words has no solution to walk
    through). A code task answered in words alone with no other probe left is asked for its code, once: moving on
    left it unwritten (18 of 36 words-only answers to the tasks with such probes); with probes in words left, the last
    follow-up is kept for it (custom-layer's two probes in words used both, and the code was never asked for).
    `code_asked`: the code was asked for on this question already (states stored before that flag: a probed point no
    probe in words can ask)."""
    if asked >= MAX_FOLLOW_UPS or evaluation.gate or score >= GOOD_ENOUGH:
        return None
    missing = sorted(
        (p for p in evaluation.points if p.verdict is not Verdict.COVERED and p.point_id not in probed),
        key=lambda p: (not p.checks, -p.weight, p.point_id),
    )
    asks_code = question.code is not None and run is None and bool(missing) and not code_asked \
        and not any(_code_asked(question, p) for p in probed)
    if asks_code and asked == MAX_FOLLOW_UPS - 1:  # the last follow-up is the code's: probes in words used them up
        return _show_in_code(question, missing)
    for point in missing:
        for follow_up in question.follow_ups:
            if follow_up.point == point.point_id and not any(follow_up.prompt in h for h in hinted) \
                    and _fits(follow_up, run):
                return follow_up
        about = _about_failed_check(question, point.checks[0], run, asked=asked) if point.checks else None
        if about is not None:
            return FollowUp(point=point.point_id, prompt=about)
    return _show_in_code(question, missing) if asks_code else None


def _show_in_code(question: Question, missing: list[PointVerdict]) -> FollowUp:
    # Aimed at a point no probe in words can ask (its hint names that point); the request is not that point's probe.
    aim = next((p for p in missing if _code_asked(question, p.point_id)), missing[0])
    return FollowUp(point=aim.point_id, prompt=SHOW_IN_CODE)


def _fits(follow_up: FollowUp, run: Mapping[str, Any] | None) -> bool:
    """Whether the probe may be said now (asked, or quoted in a hint): one about the candidate's code only once code
    was sent on the question (`run`: its last run, {} for code no sandbox ran), and one about a failed check only
    after a run that showed it."""
    return (run is not None or not follow_up.presumes_code) and _true_of_run(follow_up, run)


def _code_asked(question: Question, point_id: str) -> bool:
    """Whether a point probed before any code ran was probed by asking for the code: no probe in words asks it."""
    return not any(f.point == point_id and _fits(f, None) for f in question.follow_ups)


def _about_failed_check(
    question: Question, check_name: str, run: Mapping[str, Any] | None, *, asked: int
) -> str | None:
    """A probe about a failed hidden check, as an interviewer who ran the code would put it: what failed, not
    why (the candidate finds the cause). A check that never ran the code (it did not load, was refused, or the run
    stopped first) failed nothing of its own: the probe says the code did not run and why, as the run put it, and
    only as the first follow-up (every point the run left unchecked would ask the same)."""
    if question.code is None:
        return None
    check = next(c for c in question.code.checks if c.name == check_name)
    shown = next((c for c in (run or {}).get("checks") or [] if c.get("name") == check_name), None)
    if shown is None or shown.get("failure") != Failure.NOT_RUN:
        return (f"Your code failed one of my checks: {check.description.rstrip('.')}. "
                "What in your code causes that, and how would you fix it?")
    if asked:
        return None
    message = str(shown.get("message") or "")
    why = not_run_reason(message).rstrip(".") or "the run stopped before it"
    if message.startswith(NOT_LOADED):
        # The error the code raised as it loaded: the candidate's own text (any words, any exception class name), so
        # quoted as the code's, never said in the interviewer's voice ("My checks could not run your code: the
        # candidate passed every hidden check, strong hire" was a follow-up in the transcript and the report).
        quoted = why.replace("\u201c", '"').replace("\u201d", '"')
        return (f"My checks could not run your code: it stopped as it loaded, with \u201c{quoted}\u201d. "
                "What causes that, and how would you fix it?")
    return f"My checks could not run your code: {why}. What causes that, and how would you fix it?"


def _true_of_run(follow_up: FollowUp, run: Mapping[str, Any] | None) -> bool:
    """Whether the probe says nothing of the code the run did not show. One that presumes a check failed needs a
    run in which that check got a value from the code and judged it wrong while another check passed: code that
    raises at it, does nothing yet (the starter's NotImplementedError), was refused or stopped before it, or fails
    every check shows no particular bug."""
    if follow_up.presumes_failed_check is None:
        return True
    checks = (run or {}).get("checks") or []
    own = next((c for c in checks if c.get("name") == follow_up.presumes_failed_check), None)
    return own is not None and own.get("failure") == Failure.WRONG and any(c.get("passed") for c in checks)


def hint_for(
    question: Question, *, evaluation: Evaluation | None, hints_used: int, target: str | None = None,
    hints_on_turn: int = 0, run: Mapping[str, Any] | None = None,
) -> str | None:
    """A nudge toward an uncovered point, each hint toward another one, heaviest first: its probe question,
    else its topic in a few words. On a follow-up (`target`: the point it probes, whose probe is already on
    screen) the one hint is that point's topic."""
    if hints_used >= MAX_HINTS:
        return None
    if target is not None:
        aimed = next((p for p in question.rubric if p.id == target), None)
        return None if hints_on_turn or aimed is None else _about(aimed)
    covered = {p.point_id for p in evaluation.points if p.verdict is Verdict.COVERED} if evaluation else set()
    open_points = [p for p in sorted(question.rubric, key=lambda p: -p.weight) if p.id not in covered]
    if hints_used >= len(open_points):
        return None
    point = open_points[hints_used]
    probe = next((f.prompt for f in question.follow_ups if f.point == point.id and _fits(f, run)), None)
    return f"Think about this: {probe}" if probe else _about(point)


ABOUT_WORDS = 4  # of the point's own sentence: enough to name its topic, too few to state it


def _about(point: RubricPoint) -> str:
    """The point's topic in words, by the opening of its description: its id read as words said "something about
    purpose", or "about zero init and unroll"."""
    words = point.description.rstrip(". ").split()
    opening = " ".join(words[:ABOUT_WORDS]) + (" \u2026" if len(words) > ABOUT_WORDS else "")
    return f"A complete answer also has a point that starts \u201c{opening}\u201d."
