"""What a session is configured with, what it remembers between turns, and what it shows."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from knowledge.schema import Framework, Question, Topic


class Mode(StrEnum):
    PRACTICE = "practice"  # feedback after every answer
    INTERVIEW = "interview"  # feedback only in the final report


def scores_withheld(session: Any) -> bool:
    """An interview-mode session still going (a stored session: its `config` dict and `status`): its scores, feedback
    and report are kept from the candidate, and so is anything read from them (a later session's review notes and
    starting level among them). Stated here, where the engine reads it; app/reports/ready.py holds the refusals."""
    return session.config.get("mode") == Mode.INTERVIEW.value and session.status != "completed"


# The seed fixes the draw, not the questions for ever: a user is not asked a question again until every one in
# the chosen topics has been asked, so what they were asked before is left out of the draw. A draw that ignored
# that history would repeat questions, which the no-repeat guarantee forbids.
SEED_HELP = ("Seeds the random draw of questions: the same seed and settings draw the same questions for the same "
             "history. Questions the user was asked in earlier sessions are left out until every one in the chosen "
             "topics has been asked (no repeats), so a later session with the same seed can draw others. "
             "Empty: a fresh draw.")


class SessionConfig(BaseModel):
    """Every field is optional; defaults give a 5-question adaptive practice session."""

    model_config = ConfigDict(extra="forbid")

    frameworks: list[Framework] | None = None
    topics: list[Topic] | None = None
    difficulty: Literal[1, 2, 3, "adaptive"] = "adaptive"
    num_questions: int = Field(default=5, ge=1, le=30)
    mode: Mode = Mode.PRACTICE
    time_limit_s: int | None = Field(default=None, ge=30, le=3600)
    # A 64-bit signed whole number: what a client's integer type holds, and a bound on what every reply echoes.
    seed: int | None = Field(default=None, ge=-(2**63), le=2**63 - 1, description=SEED_HELP)

    @field_validator("frameworks", "topics")
    @classmethod
    def _non_empty(cls, value: list[Any] | None) -> list[Any] | None:
        """Each once, in the order given: a filter names a framework or topic, and naming it twice changes nothing."""
        return list(dict.fromkeys(value)) or None if value else None


class SessionState(BaseModel):
    """Everything needed to resume a session after a restart; stored as JSON with the session."""

    question_number: int = 0  # 1-based number of the current main question
    current_turn_id: int | None = None
    current_question_id: str | None = None
    follow_ups_asked: int = 0
    probed_points: list[str] = Field(default_factory=list)
    # Whether this question's code was asked for (followups.SHOW_IN_CODE). Its own flag, not a probed point: the
    # request names a point only for the hint on its turn, and read as that point's probe it could be asked again
    # (aimed at a point with a probe in words, given away as a hint) or keep that point's probe about the code from
    # being asked once the code came. False in states stored before it: followups infers it as it used to.
    code_asked: bool = False
    answers_so_far: list[str] = Field(default_factory=list)  # evidence from earlier turns on this question
    # This question's score before hint and time penalties, as of its last answer (None: not recorded, as in
    # sessions stored before it was, where the score kept stands in for it).
    raw_so_far: float | None = None
    target_difficulty: int = 2  # the session's overall level, moved by every answer
    # Each topic's own level once one of its questions is asked here (selection.level_for).
    topic_levels: dict[str, int] = Field(default_factory=dict)
    asked: list[str] = Field(default_factory=list)
    asked_topics: list[str] = Field(default_factory=list)
    question_scores: dict[str, float] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)  # e.g. LLM fallbacks, shown in the transcript
    # Notes an interview tells only once it ends, since they are read from the scores it keeps until then (the
    # level its answers reached: selection.held_until_the_end); moved into `notes` as it completes.
    held_notes: list[str] = Field(default_factory=list)
    # The notes told with each turn, by its position: a prompt shown again (a reload of the app, a step a crash cut
    # short finished by the next request) tells them again, and the transcript keeps them with their turn.
    turn_notes: dict[int, list[str]] = Field(default_factory=dict)
    # Per code task, how often the candidate ran its hidden checks before answering (Run checks): the report shows
    # it, since each run tells the candidate which checks fail. Counted by the repository's count_code_run.
    code_runs: dict[str, int] = Field(default_factory=dict)
    _told: int = PrivateAttr(default=0)  # how many of `notes` the candidate had been shown when it was loaded

    def model_post_init(self, context: Any, /) -> None:
        self._told = len(self.notes)

    def note(self, *notes: str | None) -> None:
        """Keep what the candidate is to be told, each once a session (a repeat would be told again otherwise)."""
        for note in notes:
            if note and note not in self.notes:
                self.notes.append(note)

    def note_wording(self, where: str, note: str | None) -> None:
        """A wording's fallback note, naming the prompt it concerns ("Q2 follow-up: LLM phrasing ...; template used"):
        said bare, a report listed it at its top with no word of what was affected. The same failure is still told
        once a session, under the prompt it first hit."""
        if note and not any(told == note or told.endswith(f": {note}") for told in self.notes):
            self.notes.append(f"{where}: {note}")

    def release_held_notes(self) -> None:
        """At the session's end: what was held until then is told (and kept for the report)."""
        self.note(*self.held_notes)
        self.held_notes = []

    @property
    def new_notes(self) -> list[str]:
        """The notes this step added: they go with the turn it asks (`turn_notes`), so the candidate reads them
        then."""
        return self.notes[self._told:]


class AskedPoint(BaseModel):
    id: str
    description: str
    weight: float = 1.0


class AskedQuestion(BaseModel):
    """A bank entry as the candidate was asked it and judged against it, stored with the question's turn: reports
    read this copy, so a pack edited later does not rewrite what earlier sessions were asked and scored on."""

    model_config = ConfigDict(frozen=True)

    question: str
    reference_answer: str
    rubric: list[AskedPoint]

    @classmethod
    def of(cls, question: Question) -> AskedQuestion:
        return cls(question=question.question, reference_answer=question.reference_answer,
                   rubric=[AskedPoint(id=p.id, description=p.description, weight=p.weight) for p in question.rubric])


class PromptKind(StrEnum):
    QUESTION = "question"
    FOLLOW_UP = "follow_up"


class Prompt(BaseModel):
    turn: int = Field(description="The prompt's place in the transcript; send it back with the action taken on "
                      "it, and a retried or doubled request is refused (409) rather than applied to a later prompt")
    kind: PromptKind
    question_id: str
    text: str
    topic: str
    difficulty: int
    number: int  # question k of n
    total: int
    code_contract: str | None = None
    starter_code: str | None = None
    time_limit_s: int | None = None
    asked_at: datetime | None = Field(default=None, description="When it was asked: a time limit runs from here")
    hints: list[str] = Field(default_factory=list, description="The hints given on this prompt so far, in order")
    notes: list[str] = Field(default_factory=list, description="What the candidate is told as this prompt is "
                             "asked: fewer questions than asked for, a level other than the one asked for, a topic "
                             "back for review, an LLM wording that fell back to the template")


class TurnOutcome(BaseModel):
    """What the candidate sees after an action: feedback (practice mode) and what comes next."""

    status: Literal["active", "completed"]
    evaluation: dict[str, Any] | None = None
    code_result: dict[str, Any] | None = None
    prompt: Prompt | None = None
    message: str | None = None  # hint text, or why nothing was scored
    # What this step noted with no prompt to carry it (the session ended: early, or with a wording of its last
    # feedback that fell back); a next prompt carries its own in `notes`.
    notes: list[str] = Field(default_factory=list)
