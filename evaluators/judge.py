"""The optional LLM judge: a Prometheus-style rubric prompt, then every claim it makes is checked.

The model proposes verdicts with quotes; we keep only what the answer's own words support and
recompute the score from the rubric weights. Its score and praise are never taken on trust, and any
failure (timeout, HTTP error, malformed output, refusal) hands the answer to the offline scorer.
The prompt is built in judge_prompt.py, the reply checked against the answer in judge_verdicts.py,
and the offline scorer's part in the score is judge_offline.py's.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from contextvars import copy_context
from dataclasses import dataclass, field

from pydantic import ValidationError

from evaluators.base import LLM_JUDGE, DetectedMisconception, Evaluation, Evaluator, GradingTask, PointVerdict
from evaluators.chat import LLMError, StructuredChatModel
from evaluators.feedback import compose_feedback
from evaluators.judge_batch import Stop, in_flight
from evaluators.judge_offline import MISCONCEPTION_PENALTY, combined_score, corrected, read_offline, stated
from evaluators.judge_prompt import SYSTEM_PROMPT, fitted_prompt
from evaluators.judge_reply import SCORE_SCALE, JudgedPoint, JudgeReply, reply_schema
from evaluators.judge_verdicts import check_notes, known_ids, verified_misconceptions, verified_points
from evaluators.text import is_non_answer

MAX_FEEDBACK_CHARS = 2000  # the model's own comments, kept beside ours
# Calls in flight when grading a batch: enough to hide round trips, few enough for a local server
# (Ollama, llama.cpp) that queues requests anyway. A server that answers one request at a time wants 1 (the
# app's INTERVIEWER_LLM_CALLS_IN_FLIGHT): a queued call's timeout runs while it waits, and the review's batch of 4
# on SmolLM2 (llama-cpp-python, 180 s timeout) lost 2 answers to it at 4 in flight, none at 1 (183 s vs 212 s).
JUDGE_CALLS_IN_FLIGHT = 4


class LLMJudge(Evaluator):
    """Grades with a chat model, verifies its quotes, and falls back to an offline evaluator on failure."""

    def __init__(
        self, model: StructuredChatModel, fallback: Evaluator, *, misconception_penalty: float | None = None,
        reveals: Callable[[str, str], bool] | None = None, calls_in_flight: int = JUDGE_CALLS_IN_FLIGHT,
    ) -> None:
        """`reveals(comments, reference)` says whether the model's comments spell out the reference answer: the
        judge's prompt holds it, and comments shown while a follow-up on the question is still to come would
        hand the candidate its answer (the app reads it as its leak check does the model's other wordings)."""
        self._model = model
        self._fallback = fallback
        self._reveals = reveals
        self._calls_in_flight = max(1, calls_in_flight)
        self._penalty = (
            MISCONCEPTION_PENALTY if misconception_penalty is None else misconception_penalty
        )
        self.name = f"{LLM_JUDGE}:{model.name}"
        self._stop = Stop()

    def evaluate(self, task: GradingTask) -> Evaluation:
        # Empty or an explicit non-answer ("I don't know"): nothing to grade, and no call needed. A model
        # asked anyway could credit a point with the quote "I don't know", which is in the answer.
        if is_non_answer(" ".join([*task.earlier_answers, task.answer])):
            return self._fallback.evaluate(task)
        try:
            prompt, notes = fitted_prompt(task, self._model.prompt_budget)
            reply = self._model.complete_structured(system=SYSTEM_PROMPT, user=prompt, schema=reply_schema(task))
        except (LLMError, ValidationError) as exc:
            reason = exc.reason if isinstance(exc, LLMError) else "malformed output"
            return self._fall_back(task, reason)
        by_id, unknown = known_ids(task, reply.points)
        if not by_id:  # {"points": [], "score": 5}: no verdict to check, so none to keep
            return self._fall_back(task, "the reply judged none of the rubric points", notes)
        evaluation = self._verified(task, reply, by_id, unknown)
        return evaluation.model_copy(update={"notes": [*notes, *evaluation.notes]}) if notes else evaluation

    def evaluate_many(self, tasks: list[GradingTask]) -> list[Evaluation]:
        """A few model calls in flight at once: a batch of answers would otherwise wait for every
        round trip in turn (each bounded by the timeout, and falling back on its own)."""
        if len(tasks) < 2:
            return [self.evaluate(task) for task in tasks]
        # Each answer is judged in the caller's context (a thread starts with an empty one): the chat model may
        # keep state there, such as the scope that stops a step's calls once one got no reply.
        judged = [(copy_context(), task) for task in tasks]  # a context each: one thread at a time enters it
        return in_flight(lambda pair: pair[0].run(self.evaluate, pair[1]), judged, at_once=self._calls_in_flight,
                         stop=self._stop)

    def stop(self) -> None:
        """A batch or a call under way raises EvaluatorStopped at once, without its answers still queued being sent;
        so does every later one (no answer is scored offline because the server stopped)."""
        self._stop.set()
        if callable(stop := getattr(self._model, "stop", None)):  # the model's call under way, for a single answer
            stop()

    def _fall_back(self, task: GradingTask, reason: str, notes: list[str] | None = None) -> Evaluation:
        offline = self._fallback.evaluate(task)
        return offline.model_copy(
            update={
                "evaluator": f"{offline.evaluator} (fallback from {self.name})",
                "notes": [*(notes or []), *offline.notes, f"LLM judge failed: {reason}; offline score used"],
            }
        )

    def _verified(
        self, task: GradingTask, reply: JudgeReply, by_id: dict[str, JudgedPoint], unknown: int
    ) -> Evaluation:
        texts = [task.answer, *task.earlier_answers]
        verdicts, dropped = verified_points(task, by_id, texts)
        unjudged = [p.id for p in task.rubric if p.id not in by_id]
        if len(dropped) + len(unjudged) == len(task.rubric):
            # Every point would be read offline: the reply holds nothing of the answer, and its score would only
            # differ from the offline one by being summed from the verdicts (3.1 for SmolLM2 where offline gave 4.1).
            return self._fall_back(task, "no verdict of the reply quotes the answer")
        verdicts, unstated = stated(self._fallback, task, verdicts)
        verdicts, residual = read_offline(self._fallback, task, verdicts, dropped + unjudged)
        charges = self._charges(task, reply, texts)
        score, carried = combined_score(verdicts, read_offline_ids={*dropped, *unjudged}, residual=residual,
                                        penalty=self._penalty * len(charges.wrong))
        notes = check_notes(dropped=dropped, unjudged=unjudged, wrong_dropped=charges.dropped, unknown=unknown,
                            unlisted=charges.unlisted, refuted=charges.refuted, unstated=unstated)
        notes += _score_notes(reply, score=score, carried=carried, residual=residual, unchecked=charges.unchecked)
        # The model's prose may praise what we just dropped, or a score we did not give: keep it only when
        # every claim checked out and its own score is within a point of the verified one (a score off the
        # scale agrees with none: its prose may well say "7/10").
        own = reply.own_score
        agreed = (not dropped and not unstated and not charges.dropped and not charges.refuted
                  and own is not None and abs(own - score) < 1.0)
        feedback = self._feedback(task, reply, verdicts, charges.wrong, notes) if agreed else compose_feedback(
            verdicts, charges.wrong, None)
        return Evaluation(
            question_id=task.question_id,
            score=score,
            points=verdicts,
            misconceptions=charges.wrong,
            cleared=charges.cleared,
            feedback=feedback,
            model_answer=task.reference_answer,
            evaluator=self.name,
            notes=notes,
        )

    def _charges(self, task: GradingTask, reply: JudgeReply, texts: list[str]) -> Charges:
        """The reply's misconceptions that stand: listed, quoted from the answer, and not corrected by it."""
        found, dropped, unlisted = verified_misconceptions(task.misconceptions, reply.misconceptions, texts)
        refuted_claims, unchecked = corrected(self._fallback, task, found)
        wrong = [m for m in found if m.claim not in refuted_claims]
        return Charges(wrong=wrong, dropped=dropped, unlisted=unlisted, refuted=len(found) - len(wrong),
                       unchecked=unchecked, cleared=[m.claim for m in found if m.claim in refuted_claims])

    def _feedback(
        self, task: GradingTask, reply: JudgeReply, verdicts: list[PointVerdict], wrong: list[DetectedMisconception],
        notes: list[str],
    ) -> str:
        """Our feedback on the verified verdicts, then the model's own comments where they give nothing away."""
        feedback = compose_feedback(verdicts, wrong, None)
        if not reply.feedback.strip():
            return feedback
        if self._reveals and self._reveals(reply.feedback, task.reference_answer):
            notes.append("LLM judge: its comments repeated the model answer, so they were left out")
            return feedback
        # The model's text goes into notes, the database and reports: no control or bidi-override characters
        # (a NUL breaks PostgreSQL text; U+202E turns a line around).
        comments = "".join(c for c in reply.feedback if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf"))
        comments = comments.strip()
        if len(comments) > MAX_FEEDBACK_CHARS:
            comments = comments[:MAX_FEEDBACK_CHARS].rstrip() + "\u2026"
        return f"{feedback}\nInterviewer's comments: {comments}".strip()


@dataclass(frozen=True)
class Charges:
    """The misconceptions charged to the answer, and how many of the reply's were set aside, by why."""

    wrong: list[DetectedMisconception]
    dropped: int  # quote not in the answer, or denying the claim
    unlisted: int  # not among the question's misconceptions
    refuted: int  # the answer states the correction
    unchecked: bool  # whether the answer corrects them could not be read
    cleared: list[str] = field(default_factory=list)  # the claims of `refuted`


def _score_notes(reply: JudgeReply, *, score: float, carried: float, residual: float, unchecked: bool) -> list[str]:
    """How the verified score came about, where it is not simply the reply's own."""
    notes = []
    own = reply.own_score
    if abs(carried) >= 0.05:
        notes.append(f"LLM judge: {carried:+.1f} for the points read offline, the offline "
                     f"score's {residual:+.1f} beyond its points' credits in proportion to their weight")
    if unchecked:
        notes.append("LLM judge: could not check whether the answer corrects the wrong claims reported")
    if own is None:
        low, high = SCORE_SCALE
        notes.append(
            f"LLM judge's own score {reply.score:g} is off the {low}-{high} scale and was ignored; "
            f"{score:.1f} recomputed from the verified verdicts and rubric weights"
        )
    elif abs(own - score) >= 0.05:
        notes.append(
            f"LLM judge's own score {own:.1f} replaced by {score:.1f}, "
            "recomputed from the verified verdicts and rubric weights"
        )
    return notes
