"""Typed evaluation results and the evaluator seam. A score always comes with its evidence."""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import StrEnum

from pydantic import BaseModel, Field

from knowledge.schema import Misconception, Question, RubricPoint


class Verdict(StrEnum):
    COVERED = "covered"
    PARTIAL = "partial"
    MISSED = "missed"


class PointVerdict(BaseModel):
    point_id: str
    description: str
    weight: float
    verdict: Verdict
    credit: float = Field(ge=0, le=1)
    evidence: str | None = None  # quoted verbatim from the answer; None when missed
    # A point a hidden check verifies is judged from the run: the checks that judged it, and `evidence` says
    # what they found instead of quoting the answer.
    checks: list[str] = Field(default_factory=list)
    # The quote is a line of the answer's code, not of its words (a session reads the code in a fence beside the
    # words): it is said to be what the code has, never "you said".
    from_code: bool = False
    # On a point a failed check missed: the candidate's sentence that states it, which the run overrules (the point
    # counts once code that does it passes), so a follow-up answered right in words is not met with a bare "missed".
    words: str | None = None
    # A point missed in the words of a code answer whose code score is full (every check passed, and every point the
    # question asks for in words was said): words add to a code score but never take from it (README, "How a code
    # answer is scored"), so it cost nothing; it is still worth saying. Never a point marked `asked_in_words`.
    beyond_score: bool = False

    @classmethod
    def judged(cls, point: RubricPoint, verdict: Verdict, credit: float, evidence: str | None) -> PointVerdict:
        """A verdict on one rubric point; a missed point never carries a quote."""
        return cls(
            point_id=point.id, description=point.description, weight=point.weight, verdict=verdict,
            credit=credit, evidence=evidence if verdict is not Verdict.MISSED else None,
        )


class DetectedMisconception(BaseModel):
    claim: str
    correction: str
    quote: str  # the candidate's words that state it
    from_code: bool = False  # the quote is a line of the answer's code: "your code has", never "you said"


# How the LLM judge names its evaluations ("llm-judge:<model>"); one that fell back offline bears the offline name.
LLM_JUDGE = "llm-judge"


class Evaluation(BaseModel):
    """The outcome of scoring one answer to one question."""

    question_id: str | None
    score: float = Field(ge=0, le=5)
    points: list[PointVerdict]
    misconceptions: list[DetectedMisconception] = Field(default_factory=list)
    feedback: str
    model_answer: str
    evaluator: str
    gate: str | None = None  # why the answer was not scored on its merits: "empty" or "non-answer"
    notes: list[str] = Field(default_factory=list)  # e.g. "LLM judge failed: timeout; offline score used"
    # The misconceptions this evaluation judged and found corrected by the answers (the LLM judge's, which lists
    # only what it finds: a claim it leaves out was not necessarily read as corrected, see app/reports/questions.py).
    cleared: list[str] = Field(default_factory=list)

    @property
    def missed_points(self) -> list[PointVerdict]:
        return [p for p in self.points if p.verdict is not Verdict.COVERED]


class GradingTask(BaseModel):
    """What an evaluator needs: the question, its rubric, and the answers given so far."""

    question_id: str | None = None
    question: str
    reference_answer: str
    rubric: list[RubricPoint]
    misconceptions: list[Misconception] = Field(default_factory=list)
    answer: str
    earlier_answers: list[str] = Field(default_factory=list)  # follow-up turns add evidence

    @classmethod
    def from_question(cls, question: Question, answer: str, earlier: list[str] | None = None) -> GradingTask:
        return cls(
            question_id=question.id,
            question=question.question,
            reference_answer=question.reference_answer,
            rubric=list(question.rubric),
            misconceptions=list(question.misconceptions),
            answer=answer,
            earlier_answers=earlier or [],
        )


class EvaluatorStopped(Exception):
    """The evaluator was told to stop (its process is stopping) before the answers asked of it were all scored."""


class Evaluator(ABC):
    name: str = "evaluator"

    def evaluate(self, task: GradingTask) -> Evaluation:
        """Score one answer against its rubric."""
        return self.evaluate_many([task])[0]

    @abstractmethod
    def evaluate_many(self, tasks: list[GradingTask]) -> list[Evaluation]:
        """Score several answers; an evaluator that batches its work (one embedding pass, several
        model calls in flight) does it here."""

    def stop(self) -> None:
        """Give up what is under way and queued, for good: the process is stopping. A batch waiting on it raises
        EvaluatorStopped. An evaluator whose work ends in moments (the offline scorer) has nothing to give up."""
        return None

    def corrected_claims(self, task: GradingTask) -> set[str]:
        """The listed wrong claims whose correction the answer states, so it names them only to reject
        them (the LLM judge does not charge those); an evaluator that cannot tell returns none."""
        return set()
