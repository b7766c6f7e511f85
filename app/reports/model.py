"""The report's data model: everything a renderer shows, computed once from what the session stored.

Renderers only format these fields; no renderer scores, averages or judges anything itself, so the
JSON, Markdown, HTML and PDF forms of one report cannot disagree.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

StudyReason = Literal["low_score", "nothing_in_full", "checks_not_run", "penalties"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class CoveredPoint(_Frozen):
    """A rubric point the candidate stated, in full (`covered`) or in part (`partial`), with the candidate's own
    words that show it, or one their code showed by passing the hidden checks that verify it (`by_run`: then
    `quote` names those checks), or a line of their code that reads like it (`from_code`)."""

    point_id: str
    description: str
    verdict: Literal["covered", "partial"]
    quote: str
    by_run: bool = False
    from_code: bool = False


class MissedPoint(_Frozen):
    point_id: str
    description: str
    verdict: Literal["missed"] = "missed"
    words: str | None = None  # the candidate's sentence stating a point a failed check missed (the run decides it)


class MisconceptionNote(_Frozen):
    number: int = 0  # the question's number in the report, under which the candidate's words and the correction are
    question_id: str
    topic: str
    claim: str
    correction: str
    quote: str  # the candidate's words that state the wrong claim
    from_code: bool = False  # or a line of their code


class FailedCheck(_Frozen):
    name: str
    message: str | None = None


class Exchange(_Frozen):
    """One prompt of a question and what the candidate did with it, in their own words: the transcript an
    instructor checks a grade against."""

    kind: Literal["question", "follow_up"]
    prompt: str  # as it was put to the candidate
    action: str | None = None  # answer, skip or dont_know; None where the session ended before a reply
    answer: str | None = None
    code: str | None = None


class QuestionEntry(_Frozen):
    """One main question and its follow-ups, judged by the last answer given to it."""

    number: int
    question_id: str
    question: str
    topic: str
    difficulty: int
    score: float | None  # None when nothing was submitted for it
    answered: bool  # the candidate answered it (a skip or "I don't know" scores 0 and is not an answer)
    skipped: bool = False
    dont_know: bool = False
    follow_ups: int = 0
    # The last follow-up was on screen when the session ended: not answered, and no wrong answer either (the score
    # of the earlier answer stands).
    follow_up_unanswered: bool = False
    # The session is still going (a practice report read midway) and the question's last prompt is the one on screen,
    # not answered yet: neither the question nor its follow-up is one the session ended on.
    on_screen: bool = False
    hints_used: int = 0
    hints: list[str] = Field(default_factory=list)  # their texts, where stored (sessions before that have a count)
    gate: str | None = None  # why the final answer was not scored on its merits
    # Each rubric point is in one of these lists: stated in full, stated in part (with the sentence that earned it),
    # or not stated (a partial point was in both `covered` and `missed`), or `worth_saying` (below). A question not
    # answered (score None: shown when the session ended) has none of its points judged, so all are empty.
    covered: list[CoveredPoint] = Field(default_factory=list)
    partial: list[CoveredPoint] = Field(default_factory=list)
    missed: list[MissedPoint] = Field(default_factory=list)
    # Not stated either, on a code task whose code score is full: words add to a code score but never take from it,
    # so these cost nothing and are no gap; an interviewer still wants to hear them. A point the question asks for
    # in words (`asked_in_words` in the bank) counts in the code score: unsaid, it is in `missed`.
    worth_saying: list[MissedPoint] = Field(default_factory=list)
    misconceptions: list[MisconceptionNote] = Field(default_factory=list)
    penalties: list[str] = Field(default_factory=list)
    # How the scoring went where it did not go as configured: an LLM judge's reply replaced by the offline
    # score, or verdicts of its dropped (the evaluations' own notes).
    scoring_notes: list[str] = Field(default_factory=list)
    # Which evaluator scored the latest answer: "llm judge (MODEL)", "offline rubric scorer", or "offline rubric scorer
    # (LLM judge failed: WHY)"; None where no answer was judged (a skip, or nothing sent).
    scored_by: str | None = None
    contract: str | None = None  # a code task's contract, as asked: what the code must do for its hidden checks
    code_status: str | None = None
    code_checks_passed: int | None = None
    code_checks_total: int | None = None
    failed_checks: list[FailedCheck] = Field(default_factory=list)  # by the latest run
    first_run_failed: list[FailedCheck] = Field(default_factory=list)  # by the first, when code was sent again
    code_runs: int = 0  # times the candidate ran the hidden checks (Run checks) before answering
    feedback: str | None = None
    transcript: list[Exchange] = Field(default_factory=list)
    # The reference answer, once the session is completed (an interview's candidate sees no answer before).
    model_answer: str | None = None

    @property
    def checks_not_run(self) -> bool:
        """A code task answered without its hidden checks running (no code sent, or no runner on the server): its
        score stands on the words alone."""
        return self.contract is not None and self.answered and self.code_checks_total is None

    @property
    def first_run_fixed(self) -> list[FailedCheck]:
        """The checks the first run failed that the latest passes: code fixed on a follow-up, at a penalty."""
        failing = {c.name for c in self.failed_checks}
        return [c for c in self.first_run_failed if c.name not in failing]

    @property
    def all_stated(self) -> bool:
        """Nothing is left to state or fix: no check failing, no wrong claim, no point missed or partly stated."""
        return not (self.failed_checks or self.misconceptions or self.missed or self.partial)

    @property
    def code_sent(self) -> bool:
        return any(exchange.code for exchange in self.transcript)


class TopicScore(_Frozen):
    topic: str
    score: float  # mean of the final scores of the topic's answered questions
    questions: int
    missed: int = 0  # rubric points of those questions not stated
    partial: int = 0  # ... and stated in part
    gaps_in: list[int] = Field(default_factory=list)  # the numbers of the questions that list them


class Strength(_Frozen):
    """A question answered well: scored at least the study plan's bar, with rubric points stated in full, and, for a
    code task, its code run against the hidden checks. Its points and the candidate's words that earned them are
    listed under the question, once."""

    number: int
    question_id: str
    question: str
    topic: str
    score: float
    covered: int  # rubric points stated in full
    points: int  # rubric points of the question
    by_run: int = 0  # of the covered ones, those the code's run showed (the hidden checks that verify them passed)


class GapPoint(_Frozen):
    """A point not yet covered, filed under its topic for API clients; the documents list it under its question."""

    question_id: str
    point_id: str
    description: str
    verdict: Literal["partial", "missed"]


class TopicGaps(_Frozen):
    topic: str
    score: float | None
    points: list[GapPoint]


class StudyLink(_Frozen):
    id: str
    question: str
    topic: str


class StudyItem(_Frozen):
    """A question not answered well, what it lacked, and which bank entries to work through next. Every scored
    question is either a strength or a study item."""

    number: int  # the question's number in the report, where its gaps are listed
    question_id: str
    question: str
    topic: str
    score: float
    # Why it is here: it scored under the bar; or under it with nothing left to state, for its penalties (hints, code
    # fixed on a follow-up, lateness); or at the bar with no point stated in full; or it is a code task whose hidden
    # checks never ran (the score stands on words). Items of reports before this field read "low_score".
    reason: StudyReason = "low_score"
    # Its failed checks (and those its first run failed), its wrong claims, the points it missed, and for `penalties`
    # what they charged (the documents point to its question instead, where "Work on" counts each kind).
    focus: list[str]
    next: list[StudyLink]


class Report(_Frozen):
    session_id: str
    user_id: int
    status: str
    mode: str
    created_at: datetime
    updated_at: datetime
    config: dict[str, Any]
    overall_score: float | None  # mean of the scored questions' final scores, 0-5 (a skip scores 0)
    questions_answered: int  # answered, not skipped or "I don't know"
    questions: list[QuestionEntry]
    topics: list[TopicScore]
    strengths: list[Strength]
    gaps: list[TopicGaps]
    misconceptions: list[MisconceptionNote]
    study_plan: list[StudyItem]
    notes: list[str] = Field(default_factory=list)
    # An LLM judge scored, or was asked to score, some answer of the session: the documents then say beside each score
    # which evaluator gave it. Offline-only sessions leave it unsaid (every score has the one source there).
    llm_judged: bool = False

    def question(self, number: int) -> QuestionEntry:
        """The question of that number (1-based, as the report numbers them)."""
        return self.questions[number - 1]

    @property
    def empty(self) -> bool:
        """No question was answered, skipped or given up: there is nothing to score, praise or study. A session
        of skips alone is not empty: each scores 0 and goes into the study plan, in every format."""
        return all(q.score is None for q in self.questions)
