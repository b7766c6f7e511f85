"""What a scored answer becomes before it is recorded and shown: hints and lateness charged, the bank entries
near what it missed attached, the feedback in spoken words, and the outcome the candidate sees."""

from __future__ import annotations

import dataclasses
from typing import Any

from app.interview.models import Mode, Prompt, PromptKind, SessionConfig, SessionState, TurnOutcome
from app.interview.penalties import HINT_COST, charge_answer, charge_give_up, question_penalties
from app.interview.phrasing import Phraser
from app.interview.scoring import ScoredAnswer
from app.interview.selection import QuestionSelector
from app.interview.turns import SessionTurns, late
from knowledge.schema import Question


def charged(
    scored: ScoredAnswer, *, state: SessionState, config: SessionConfig, turn: Any, turns: SessionTurns
) -> ScoredAnswer:
    """Hints and lateness, charged once along the question's turns (`penalties.charge_answer`)."""
    follow_up = turn.kind == PromptKind.FOLLOW_UP
    earlier = turns.last_evaluation_dict(turn.session_id, turn.question_id) if follow_up else None
    limit = config.time_limit_s
    answered_late = late(turn.created_at, limit)
    charge = charge_answer(
        scored.score, follow_up=follow_up, kept=state.question_scores.get(turn.question_id, 0.0),
        raw_before=state.raw_so_far, earlier_notes=question_penalties(earlier or {}),
        hints_on_question=turns.hints_on_question(turn.session_id, turn.question_id),
        hints_on_turn=turn.hints_used, late_after_s=limit if answered_late else None,
        # Code first sent on a follow-up (asked for after an answer in words) fixes no run the candidate saw fail.
        code_rerun=bool(scored.code_result) and turns.last_code_result(turn.session_id, turn.question_id) is not None,
    )
    state.raw_so_far = scored.score
    return scored.penalised(charge.score, charge.notes, charge.question_notes)


def follow_up_given_up(earlier: dict[str, Any], *, action: str, hints_on_turn: int) -> ScoredAnswer:
    """A follow-up skipped or not known: the earlier answers' score stands, less the follow-up's own hints."""
    charge = charge_give_up(float(earlier["score"]), earlier_notes=question_penalties(earlier),
                            hints_on_turn=hints_on_turn)
    # The hints taken on the follow-up cost points though it was given up: said where the score is (review s50).
    cost = f", less {HINT_COST * hints_on_turn} points for the {hints_on_turn} hint(s) taken on this follow-up" \
        if hints_on_turn else ""
    scored = ScoredAnswer(score=float(earlier["score"]), evaluation={
        **earlier, "follow_up": action, "penalties": [],
        "feedback": f"Follow-up {'skipped' if action == 'skip' else 'not known'}; the score of your "
                    f"earlier answer stands{cost}. {earlier.get('feedback', '')}".strip(),
    })
    return scored.penalised(charge.score, charge.notes, charge.question_notes)


def with_related(selector: QuestionSelector, question: Question, scored: ScoredAnswer) -> ScoredAnswer:
    """Attach bank entries about the points missed, for the explanation and the study plan."""
    if scored.rubric is None or not scored.rubric.missed_points:
        return scored
    missed = [p.description for p in scored.rubric.missed_points]
    related = selector.related(question.id, question.question, missed)
    return dataclasses.replace(scored, evaluation={**scored.evaluation, "related": related})


def spoken(
    phraser: Phraser, question: Question, scored: ScoredAnswer, state: SessionState, config: SessionConfig
) -> ScoredAnswer:
    """In practice mode with an LLM, the feedback also comes in conversational words."""
    if config.mode is not Mode.PRACTICE or not scored.evaluation.get("feedback"):
        return scored
    words = phraser.feedback(question, scored.evaluation["feedback"])
    if words is None:
        return scored
    state.note_wording(f"Q{state.question_number} feedback", words.note)
    if words.note:
        return scored
    return dataclasses.replace(scored, evaluation={**scored.evaluation, "feedback_spoken": words.text})


def shown_while_asked(evaluation: dict[str, Any], question_id: str | None, pending: Prompt | None) -> dict[str, Any]:
    """An evaluation as shown while the prompt `pending` waits: the model answer is withheld until its question
    closes, since a follow-up on the question would be answered from it (custom-loss's explained why
    log(1 - sigmoid(200)) is -inf, and its follow-up asked just that)."""
    if pending is None or pending.question_id != question_id or not evaluation.get("model_answer"):
        return evaluation
    return {**evaluation, "model_answer": None}


def outcome(config: SessionConfig, scored: ScoredAnswer, prompt: Prompt | None, state: SessionState) -> TurnOutcome:
    """What the candidate sees after an action: the evaluation in practice mode only, and what comes next (or,
    once the session is over, what this step noted, which no next prompt is there to tell)."""
    practice = config.mode is Mode.PRACTICE
    question_id = scored.evaluation.get("question_id")
    return TurnOutcome(
        status="active" if prompt else "completed",
        evaluation=shown_while_asked(scored.evaluation, question_id, prompt) if practice else None,
        code_result=scored.code_result if practice else None,
        prompt=prompt,
        message=scored.message,
        notes=[] if prompt else state.new_notes,
    )
