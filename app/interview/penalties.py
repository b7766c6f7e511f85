"""What hints and lateness cost on one question. Pure arithmetic, kept apart from the engine's bookkeeping.

A follow-up is scored on everything said on its question, so its raw score is not new credit: only what it
adds over the question's raw score before it is. Each charge is made once, on the turn it belongs to: a hint
on the turn it was taken, lateness on what a late answer added (a loss is never softened by lateness). A turn's
notes say what was charged on that turn only (a follow-up answered in time said "answered after the 30s limit:
score halved", the first answer's note); the question's notes say what its score has been charged in all.

Code fixed on a follow-up is not code right the first time: the candidate saw their checks fail (practice mode
shows them) or was asked about the failure (the follow-up probes the failed check's point), which is what a hint
does. A strict interviewer credits finding the bug, less than not writing it: what a resubmitted run adds counts
FIX_SHARE, like a late answer, and a worse run counts whole."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

HINT_COST = 0.5  # score points (of 5) per hint on that question
LATE_SHARE = 0.5  # what a late answer adds counts this much
FIX_SHARE = 0.5  # what code resubmitted on a follow-up adds counts this much


@dataclass(frozen=True)
class Charged:
    score: float  # before rounding and the floor at 0 (ScoredAnswer.penalised applies both)
    notes: list[str]  # what this turn was charged
    question_notes: list[str]  # what the question's score has been charged in all, this turn included


def _hints(count: int, *, follow_up: bool) -> str:
    return f"{count} hint(s) used{' on the follow-up' if follow_up else ''}: -{HINT_COST * count} points"


def charge_answer(
    raw: float, *, follow_up: bool, kept: float, raw_before: float | None, earlier_notes: list[str],
    hints_on_question: int, hints_on_turn: int, late_after_s: int | None, code_rerun: bool = False,
) -> Charged:
    """The score an answer keeps. `raw` is the scorer's score of all that was said on the question, `kept` the
    question's score before this turn (0 on a first answer) and `raw_before` its raw score, when stored (older
    sessions did not store it: the score kept stands in). `late_after_s` is the time limit this answer missed;
    `code_rerun` says a follow-up's answer ran new code."""
    before = kept if raw_before is None else raw_before
    added = raw - before if follow_up else raw
    kept = kept if follow_up else 0.0
    notes = [_hints(hints_on_turn, follow_up=follow_up)] if hints_on_turn else []
    if late_after_s:
        notes.append(f"answered after the {late_after_s}s limit: "
                     + ("what this answer added is halved" if follow_up else "score halved"))
        added = added * LATE_SHARE if added > 0 else added
    # A loss counts whole and is not called a fix: worse code on a follow-up gets no note of halving.
    if follow_up and code_rerun and added > 0:
        notes.append("code fixed on a follow-up: what the new run added is halved")
        added = added * FIX_SHARE
    # The question's notes restate its hint count whole, beside the earlier turns' other charges.
    question_notes = [n for n in earlier_notes if "hint(s) used" not in n] if follow_up else []
    question_notes += [_hints(hints_on_question, follow_up=False)] * bool(hints_on_question)
    question_notes += [n for n in notes if "hint(s) used" not in n]
    # Only this turn's hints are new: the earlier turns' were charged in the score kept.
    return Charged(kept + added - HINT_COST * hints_on_turn, notes, list(dict.fromkeys(question_notes)))


def charge_give_up(kept: float, *, earlier_notes: list[str], hints_on_turn: int) -> Charged:
    """A follow-up skipped or not known keeps the question's score, less the hints taken on that follow-up,
    which no answer has charged."""
    notes = [_hints(hints_on_turn, follow_up=True)] if hints_on_turn else []
    return Charged(kept - HINT_COST * hints_on_turn, notes, [*earlier_notes, *notes])


def question_penalties(evaluation: Mapping[str, Any]) -> list[str]:
    """What a question's score has been charged in all, as of a stored evaluation of it (before a turn's own notes
    were kept apart, its `penalties` held them all)."""
    return [str(n) for n in evaluation.get("question_penalties", evaluation.get("penalties")) or []]
