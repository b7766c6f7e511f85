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

from evaluators.base import (
    LLM_JUDGE,
    DetectedMisconception,
    Evaluation,
    Evaluator,
    GradingTask,
    PointVerdict,
    Verdict,
)
from evaluators.chat import LLMError, StructuredChatModel
from evaluators.feedback import compose_feedback
from evaluators.judge_batch import Stop, in_flight
from evaluators.judge_comments import contradiction
from evaluators.judge_offline import (
    MISCONCEPTION_PENALTY,
    combined_score,
    corrected,
    offline_reading,
    read_offline,
    stated,
)
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
# A missed verdict needs no quote, so nothing checks it. Where the model calls missed points the offline scorer
# reads as covered (a sentence of the answer states them) and that takes the score this far below the offline one,
# the reply is not used: a candidate expects a correct answer not to be zeroed on an unverifiable word (a reply
# calling every point missed gave the zero-grad model answer 0.0, offline 4.8, with no note). A smaller such
# disagreement keeps the model's score, which may know better than the embedder, and says so in a note with the
# offline score. An honest fake model crediting the bank's model answers scored at most 0.6 below offline.
STRONG_DISAGREEMENT = 2.0


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
        offline = offline_reading(self._fallback, task)
        verdicts, residual = read_offline(offline, verdicts, dropped + unjudged)
        charges = self._charges(task, reply, texts)
        ceiling = offline.score if offline is not None else None
        # A verdict lowered to what its quote states is the offline scorer's reading too, so it carries the offline
        # score's gap like the points read offline (a model crediting every point with the bank's model answer's
        # sentences scored 0.32 below offline on 40 questions without it, 0.12 with it).
        score, carried = combined_score(verdicts, read_offline_ids={*dropped, *unjudged, *unstated}, residual=residual,
                                        penalty=self._penalty * len(charges.wrong), ceiling=ceiling)
        denied = _denied(by_id, offline)
        if denied and offline is not None and offline.score - score >= STRONG_DISAGREEMENT:
            return self._fall_back(task, f"it called missed {len(denied)} point(s) the answer states "
                                         f"({', '.join(denied)}), {score:.1f} against the offline {offline.score:.1f}")
        notes = check_notes(dropped=dropped, unjudged=unjudged, wrong_dropped=charges.dropped, unknown=unknown,
                            unlisted=charges.unlisted, refuted=charges.refuted, unstated=unstated)
        if denied and offline is not None:
            notes.append(f"LLM judge called missed {len(denied)} point(s) the offline scorer reads as covered "
                         f"({', '.join(denied)}); offline score {offline.score:.1f}")
        notes += _score_notes(reply, score=score, carried=carried, residual=residual, unchecked=charges.unchecked,
                              ceiling=ceiling)
        # The model's prose may praise what we just dropped, or a score we did not give: keep it only when
        # every claim checked out and its own score is within a point of the verified one (a score off the
        # scale agrees with none: its prose may well say "7/10").
        own = reply.own_score
        agreed = (not dropped and not unstated and not charges.dropped and not charges.refuted
                  and own is not None and abs(own - score) < 1.0)
        feedback = self._feedback(task, reply, verdicts, charges.wrong, notes, score) if agreed else compose_feedback(
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
        notes: list[str], score: float,
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
        # Read as shown: an invisible character inside a word ("excel\u200blent") is gone by now.
        if why := contradiction(unicodedata.normalize("NFKC", comments), score, verdicts):
            notes.append(f"LLM judge: its comments {why}, so they were left out")
            return feedback
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


def _denied(by_id: dict[str, JudgedPoint], offline: Evaluation | None) -> list[str]:
    """The points the model called missed that the offline scorer reads as covered."""
    read = {p.point_id: p.verdict for p in offline.points} if offline is not None else {}
    return [i for i, v in by_id.items() if v.verdict == Verdict.MISSED.value and read.get(i) is Verdict.COVERED]


def _score_notes(
    reply: JudgeReply, *, score: float, carried: float, residual: float, unchecked: bool, ceiling: float | None
) -> list[str]:
    """How the verified score came about, where it is not simply the reply's own."""
    notes = []
    if ceiling is not None and score >= round(ceiling, 1) and (reply.own_score or 0) > score + 0.05:
        notes.append(f"LLM judge: score held at the offline score {score:.1f}, what the answer's words support "
                     "(the model's verdicts may lower it, not raise it)")
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
