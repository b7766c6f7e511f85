"""Scoring one answer in a session: the rubric for words, the sandboxed runner for code."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from app.interview.fenced import contract_names, split_fenced
from evaluators.base import Evaluation, Evaluator, GradingTask
from evaluators.feedback import compose_feedback
from evaluators.run_points import beyond_full_run, judge_run, with_asked_words, with_run
from knowledge.schema import CodeTask, Question

# For code tasks with both code and explanation, running code weighs most; words can add to the code's
# score but never take from it (an explanation, or a follow-up answered in words, must not cost points).
CODE_SHARE = 0.75


def with_code(text: str, code: str | None) -> str:
    """An answer as the rubric reads it: the words, then the code in a fence (so it is read as code)."""
    return text if not code else f"{text}\n```python\n{code}\n```"


def handed_lines(starter: str | None) -> set[str]:
    """The lines of a task's starter code, stripped: what the candidate was handed, not wrote."""
    return {line.strip() for line in (starter or "").splitlines() if line.strip()}


def without_handed(answer: str, handed: str | None) -> str:
    """An answer as the rubric reads it: without the lines of the task's starter code (`handed`).

    The candidate was handed those lines, so they state nothing the candidate knows. Read as theirs, the starter sent
    back unchanged beside a few words earned a rubric score of 1.2 to 3.1 on the bank's 26 code tasks (0.25 of it
    added to a failed run), and its signature was quoted as partly stating a point ("def step(self, val_loss: float,
    model) -> bool:" for "monitors a validation metric")."""
    lines = handed_lines(handed)
    if not lines:
        return answer
    return "\n".join(line for line in answer.splitlines() if line.strip() not in lines)


def words_of(earlier: list[str], task: CodeTask | Mapping[str, Any] | None) -> list[str]:
    """Earlier answers to a code task as read once an answer sends new code to run: their words alone (fenced code
    out, read by split_fenced with the contract's names, so a block showing them in use stays in the words). `task`:
    the code task, or a turn's stored copy of it. The engine and the report both read them through this call: the
    report split them without the names, and so differed from what the judge had read.

    Code sent is a whole new submission: it is what runs and is judged, so the code before it is no longer the
    candidate's answer. Read on beside the fix, a wrong line it replaced was still charged (`self.best_state =
    model.state_dict()` quoted as a misconception after a fix that cloned the state and passed every check, and
    listed under "Misconceptions to unlearn" in the report); so is a point the old code's lines showed and the new
    code's do not. Words stay: a claim said in words is taken back only by saying the correction, which the detector
    reads (evaluators/misconceptions.py)."""
    names = contract_names(task)
    return [split_fenced(answer, names)[0] for answer in earlier]


def code_quotes_labelled(evaluation: Evaluation, answers: list[str]) -> Evaluation:
    """The evaluation with each quote that is a line of the code, not of the words, marked as the code's (a
    credited point's and a wrong claim's alike).

    The rubric reads the code beside the words (a line like `loss = loss / accum_steps` can show a point no check
    verifies), so a point's quote may be a code line; quoted back as "you said" it reads as words the candidate
    never wrote. Only the label changes, not what is credited. `answers` are this turn's and the earlier turns'
    answers as the rubric read them (code in fences)."""
    parts = [split_fenced(answer) for answer in answers if answer.strip()]
    codes = [_flat(code) for _, code in parts if code.strip()]
    if not codes:
        return evaluation
    words = [_flat(said) for said, _ in parts]

    def from_code(quote: str) -> bool:
        quote = _flat(quote)
        return not any(quote in said for said in words) and any(quote in code for code in codes)

    points = [p.model_copy(update={"from_code": True}) if p.evidence and not p.checks and from_code(p.evidence)
              else p for p in evaluation.points]
    wrong = [m.model_copy(update={"from_code": True}) if from_code(m.quote) else m for m in evaluation.misconceptions]
    if points == evaluation.points and wrong == evaluation.misconceptions:
        return evaluation
    return evaluation.model_copy(update={
        "points": points, "misconceptions": wrong, "feedback": compose_feedback(points, wrong, evaluation.gate)})


def _flat(text: str) -> str:
    return " ".join(text.split())


def said_after_run(text: str, code: str | None, earlier: list[str]) -> list[str]:
    """The words written after the code the run judged: none when this answer sent the code, else this follow-up's
    and those of the follow-ups since the last answer that held code (`earlier` as the rubric read them)."""
    if code:
        return []
    answers = [*earlier, text]
    ran = max((i for i, answer in enumerate(answers) if split_fenced(answer)[1].strip()), default=-1)
    return [split_fenced(answer)[0] for answer in answers[ran + 1:]]


@dataclass(frozen=True)
class ScoredAnswer:
    score: float
    evaluation: dict[str, Any]  # stored with the turn and shown in practice mode
    rubric: Evaluation | None = None  # drives follow-ups
    code_result: dict[str, Any] | None = None
    message: str | None = None

    def penalised(self, score: float, notes: list[str], question_notes: list[str]) -> ScoredAnswer:
        """The score after time-limit and hint penalties; the reasons travel with the stored evaluation: this
        turn's in `penalties`, shown with it, and the question's in all in `question_penalties`, for its report."""
        if not notes and not question_notes and score == self.score:
            return self
        score = round(max(0.0, score), 1)
        evaluation = {**self.evaluation, "score": score, "penalties": notes, "question_penalties": question_notes}
        return replace(self, score=score, evaluation=evaluation)


class AnswerScorer:
    def __init__(self, *, evaluator: Evaluator, code_runner: Any | None = None) -> None:
        """`code_runner`: the sandboxed runner, None where there is none, or a function returning either, called
        at the first code answer: the terminal's, whose warm pool takes seconds to start and which most sessions
        never use."""
        self._evaluator = evaluator
        self._runner = code_runner

    def stop(self) -> None:
        self._evaluator.stop()

    def _code_runner(self) -> Any | None:
        if self._runner is not None and not hasattr(self._runner, "check"):  # the function, not yet called
            self._runner = self._runner()
        return self._runner

    def score(
        self, question: Question, *, text: str, code: str | None, earlier: list[str],
        earlier_code: dict[str, Any] | None = None,
    ) -> ScoredAnswer:
        """Score one turn. A follow-up answered in words keeps the code result of an earlier turn."""
        code = code if code and code.strip() else None  # blank code is no code (and no fence around it)
        handed = question.code.starter if question.code else None
        answer, *read_before = (without_handed(a, handed) for a in (with_code(text, code), *earlier))
        rubric = code_quotes_labelled(
            self._evaluator.evaluate(GradingTask.from_question(question, answer, read_before)), [answer, *read_before])
        has_code = bool(question.code and code and code.strip())
        if has_code and rubric.gate:
            # Code sent is an attempt, though the rubric, reading it without the starter's lines, found nothing of
            # the candidate's own (the starter sent back): its run says what failed, and a follow-up may ask.
            rubric = rubric.model_copy(update={
                "gate": None, "feedback": compose_feedback(rubric.points, rubric.misconceptions, None)})
        evaluation = {**rubric.model_dump(mode="json"), "rubric": rubric.model_dump(mode="json")}
        if not has_code and not (question.code and earlier_code):
            # A code task answered in words alone is read as words: say so, as POST /v1/grade does.
            unrun = "no code was sent, so no hidden check ran: this answer was read as words only"
            return ScoredAnswer(score=rubric.score, evaluation=evaluation, rubric=rubric,
                                message=unrun if question.code else None)
        runner = self._code_runner() if has_code else None
        if has_code and runner is None:
            message = "code checks are unavailable on this server; your code was read as text only"
            return ScoredAnswer(score=rubric.score, evaluation=evaluation, rubric=rubric, message=message)
        code_result = earlier_code
        if runner is not None:
            code_result = _as_dict(runner.check(question.code, code, question.id))
        assert code_result is not None
        # The points the hidden checks verify are judged from the run (also on a follow-up answered in words), and
        # the run scores by those points' rubric weights; a task whose checks name no points by the checks' own.
        verdicts, share = judge_run(question, code_result)
        # The code the run judged: this turn's, or on a follow-up in words the fenced code said on the question.
        names = contract_names(question.code)
        run_code = code or split_fenced("\n".join(earlier), names)[1]
        rubric = with_run(rubric, verdicts, failing_code="" if code_result.get("status") == "passed" else run_code,
                          said_after_run=said_after_run(text, code, earlier))
        # What the question asks to be said in words counts beside the run (none asked: the run alone, as before).
        share = with_asked_words(question, rubric, share)
        if share >= 1:  # the code score is full: what the words missed beyond it did not cost a point
            rubric = beyond_full_run(rubric, {p.id for p in question.rubric if p.asked_in_words})
        evaluation = {**rubric.model_dump(mode="json"), "rubric": rubric.model_dump(mode="json")}
        code_score = 5 * share
        words = text.strip() or any(e.strip() for e in earlier)
        score = max(code_score, CODE_SHARE * code_score + (1 - CODE_SHARE) * rubric.score) if words else code_score
        score = round(score, 1)
        evaluation = {**evaluation, "score": score, "code_score": round(code_score, 1),
                      "rubric_score": rubric.score}
        return ScoredAnswer(score=score, evaluation=evaluation, rubric=rubric,
                            code_result=code_result if has_code else None)

    def zero(self, question: Question, *, reason: str) -> ScoredAnswer:
        words = {"skip": "Skipped", "dont_know": "Answered \"I don't know\""}[reason]
        evaluation = {
            "question_id": question.id, "score": 0.0, "points": [], "misconceptions": [],
            "feedback": f"{words}: scored 0. Study the model answer below.",
            "model_answer": question.reference_answer, "evaluator": "none", "gate": reason,
        }
        return ScoredAnswer(score=0.0, evaluation=evaluation)


def _as_dict(result: Any) -> dict[str, Any]:
    """The runner's JSON form: it carries the weighted `score`, which is a property on CodeResult."""
    if isinstance(result, dict):
        return result
    if hasattr(result, "to_json"):
        return {k: v for k, v in result.to_json().items() if k != "file"}
    if hasattr(result, "model_dump"):
        return dict(result.model_dump(mode="json"))
    if hasattr(result, "to_dict"):
        return dict(result.to_dict())
    import dataclasses

    return dataclasses.asdict(result)
