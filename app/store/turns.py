"""The turns of a session: each question or follow-up asked, and the answer, evaluation and hints it got."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict, Unpack

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session, selectinload

from app.errors import ChoiceOutdatedError, ConflictError, NotFoundError
from app.store.base import RepositoryBase, require_choice, require_keys
from app.store.history import asked_count
from app.store.models import (
    ACTION_DONE,
    ANSWER_ACTIONS,
    TURN_KINDS,
    AnswerDraft,
    CodeResult,
    Evaluation,
    InterviewSession,
    Turn,
    User,
    utcnow,
)
from app.store.records import TurnRecord, turn_record
from app.store.sessions import apply_state, locked_session

# How a refusal names the action it refused and says how to retry: a skip told to "send the answer again" reads
# as if an answer had been lost.
_ACTION_WORDS = {
    "answer": ("this answer was scored", "send the answer again"),
    "skip": ("this skip was recorded", "skip again"),
    "dont_know": ("this \u201cI don't know\u201d was recorded", "send \u201cI don't know\u201d again"),
}


class NewTurn(TypedDict):
    """A turn to add: `_insert_turn` says what the optional fields ask of the store."""

    question_id: str
    topic: str
    difficulty: int
    kind: str
    prompt: str
    target_point: NotRequired[str | None]
    state: NotRequired[dict[str, Any] | None]
    position: NotRequired[int | None]
    user_asked: NotRequired[int | None]
    bank_entry: NotRequired[Mapping[str, Any] | None]


class TurnRepository(RepositoryBase):
    """Turns added to a session, answered, and given hints, each change one commit."""

    def add_turn(self, session_id: str, **turn: Unpack[NewTurn]) -> TurnRecord:
        """Append a question or follow-up to the session (`_insert_turn` says what each argument asks of it)."""
        with self._writing() as session:
            return _insert_turn(session, locked_session(session, session_id), **turn)

    def open_session(
        self, user_id: int, *, session_id: str, config: dict[str, Any], **first_turn: Unpack[NewTurn]
    ) -> TurnRecord:
        """A new active session for the user, stored in one commit with its first turn (add_turn's arguments).
        A session stored before its first question was chosen and worded outlived a start that failed or was
        killed there: listed in the user's history with no prompt, and refused by every action."""
        with self._writing() as session:
            if session.get(User, user_id) is None:
                raise NotFoundError(f"no user with id {user_id}")
            owner = InterviewSession(id=session_id, user_id=user_id, config=config, state={}, status="active")
            session.add(owner)
            session.flush()
            return _insert_turn(session, owner, **first_turn)

    def record_answer(
        self,
        turn_id: int,
        *,
        action: str,
        answer_text: str | None = None,
        answer_code: str | None = None,
        evaluation: Mapping[str, Any] | None = None,
        code_result: Mapping[str, Any] | None = None,
        state: dict[str, Any] | None = None,
        status: str | None = None,
        hints_seen: int | None = None,
    ) -> TurnRecord:
        """Store an answer with its evaluation and code result, all in one commit.

        Passing the engine's next `state` (and `status`) here saves it in the same commit, so a
        crash can never leave an answer stored without the session knowing it moved on. With
        `hints_seen` (the turn's hint count the score was charged for), only if no hint was given since.
        """
        require_choice(action, ANSWER_ACTIONS, "action")
        if evaluation is not None:
            require_keys(evaluation, ("score", "evaluator"), "evaluation")
        if code_result is not None:
            require_keys(code_result, ("status", "score"), "code result")
        with self._writing() as session:
            turn = session.get(Turn, turn_id, with_for_update=True)
            if turn is None:
                raise NotFoundError(f"no turn with id {turn_id}")
            if turn.answered_at is not None:
                done = ACTION_DONE.get(turn.action or "", "answered")  # a skip that won a race is not an answer
                raise ConflictError(f"turn {turn.position} was already {done}; nothing was recorded")
            # Locked after the turn, as add_hint does. A session ended (by another process) while this answer was
            # scored stays ended: the answer, stored anyway, put back the prompt the end had closed and asked on.
            taken, again = _ACTION_WORDS[action]
            if locked_session(session, turn.session_id).status == "completed":
                raise ConflictError(f"the session was ended while {taken}; nothing was recorded")
            if hints_seen is not None and turn.hints_used != hints_seen:
                raise ConflictError(f"a hint was given on turn {turn.position} while {taken}, so its score is out of "
                                    f"date; nothing was recorded: {again}")
            turn.action, turn.answer_text, turn.answer_code = action, answer_text, answer_code
            turn.answered_at = utcnow()
            turn.evaluation = _evaluation_row(evaluation)
            turn.code_result = _code_result_row(code_result)
            apply_state(turn.session, state=state, status=status)
            # The draft of this answer is sent now: a reload must show the next prompt's empty box, not it.
            session.execute(delete(AnswerDraft).where(AnswerDraft.session_id == turn.session_id))
            session.flush()
            return turn_record(turn)

    def add_hint(self, turn_id: int, *, seen: int | None = None, text: str | None = None) -> int:
        """Count one more hint on the turn, keeping its `text`; returns the turn's hint count. With `seen` (the
        count the caller chose its hint by), only if no other request gave one meanwhile: else a ConflictError,
        so two processes asked at once do not both charge for the same hint. An answered turn takes no hint: its
        score is final, so the hint could never be charged."""
        with self._writing() as session:
            # Incremented in SQL, compared in the same statement.
            change = (update(Turn).where(Turn.id == turn_id, Turn.answered_at.is_(None))
                      .values(hints_used=Turn.hints_used + 1))
            if seen is not None:
                change = change.where(Turn.hints_used == seen)
            counted = session.execute(change).rowcount  # type: ignore[attr-defined]  # a CursorResult
            count = session.scalar(select(Turn.hints_used).where(Turn.id == turn_id))
            if count is None:
                raise NotFoundError(f"no turn with id {turn_id}")
            if not counted:
                answered = session.scalar(select(Turn.answered_at).where(Turn.id == turn_id)) is not None
                raise ConflictError("this prompt was answered meanwhile; fetch the session for the current prompt"
                                    if answered else
                                    "another hint was given for this question meanwhile; ask again for the next")
            # The session locked after the turn, as record_answer does: one ended meanwhile (by another process)
            # left this prompt unanswered and unscored, so a hint on it would be charged to nothing.
            owner = select(Turn.session_id).where(Turn.id == turn_id).scalar_subquery()
            if session.scalar(select(InterviewSession.status).where(InterviewSession.id == owner)
                              .with_for_update()) == "completed":
                raise ConflictError("the session has ended, so this prompt takes no hint; start a new session or "
                                    "fetch its report")
            if text is not None:  # the row is this transaction's since the update above: no other hint interleaves
                turn = session.get(Turn, turn_id)
                assert turn is not None
                turn.hints = [*(turn.hints or ()), text]
            # The session changed: a report of it cached by its version (the app's downloads) is out of date.
            session.execute(update(InterviewSession).where(InterviewSession.id == owner).values(updated_at=utcnow()))
            return count

    def turns(self, session_id: str) -> list[TurnRecord]:
        """The session's turns in order, each with its evaluation and code result payloads."""
        query = (
            select(Turn)
            .where(Turn.session_id == session_id)
            .order_by(Turn.position)
            .options(selectinload(Turn.evaluation), selectinload(Turn.code_result))
        )
        with self._reading() as session:
            return [turn_record(row) for row in session.scalars(query)]


def _insert_turn(
    session: Session,
    owner: InterviewSession,
    *,
    question_id: str,
    topic: str,
    difficulty: int,
    kind: str,
    prompt: str,
    target_point: str | None = None,
    state: dict[str, Any] | None = None,
    position: int | None = None,
    user_asked: int | None = None,
    bank_entry: Mapping[str, Any] | None = None,
) -> TurnRecord:
    """The turn, with the engine's new state if given (its `current_turn_id` set to the new turn in the same
    commit). With `position`, only if the turn would land there: a caller that read the session before another
    request moved it on gets a ConflictError instead of adding a second next turn. With `user_asked`
    (`questions_asked` as read before the question was chosen), only if the user was asked no question since, in
    any session: else a ChoiceOutdatedError, and the caller chooses again with what it missed. `bank_entry`: what
    the bank said of the question as it is asked, kept for its report."""
    require_choice(kind, TURN_KINDS, "kind")
    # The session is locked: an end saved by another process while this prompt was chosen and worded (a step that
    # ran past the engine's resume_after_s) stays the end, not undone by a prompt it never saw.
    if owner.status == "completed":
        raise ConflictError("the session was ended meanwhile by another request: what was sent before is kept and "
                            "nothing more is asked; fetch the session or its report")
    count = session.scalar(select(func.count()).where(Turn.session_id == owner.id)) or 0
    if position is not None and count != position:
        raise ConflictError("this session moved on in another request; fetch it for the current prompt")
    if user_asked is not None and _asked_locked(session, owner.user_id) != user_asked:
        raise ChoiceOutdatedError("another session of yours was given a question at the same moment; try again")
    row = Turn(
        session_id=owner.id,
        position=count,
        question_id=question_id,
        topic=topic,
        difficulty=difficulty,
        kind=kind,
        prompt=prompt,
        target_point=target_point,
        hints_used=0,
        bank_entry=None if bank_entry is None else dict(bank_entry),
        evaluation=None,
        code_result=None,
    )
    session.add(row)
    session.flush()
    apply_state(owner, state=None if state is None else {**state, "current_turn_id": row.id})
    return turn_record(row)


def _asked_locked(session: Session, user_id: int) -> int:
    """`asked_count`, with the user's question choices serialised until this transaction ends. SQLite's BEGIN IMMEDIATE
    already serialises every writer; PostgreSQL locks the user's row. FOR NO KEY UPDATE, so inserts that only
    reference the user (a new session, a key) do not wait on it. Every writer that locks the user has locked its
    session row first, never the other way round, so the two locks cannot deadlock."""
    session.execute(select(User.id).where(User.id == user_id).with_for_update(key_share=True))
    return asked_count(session, user_id)


def _evaluation_row(evaluation: Mapping[str, Any] | None) -> Evaluation | None:
    if evaluation is None:
        return None
    # The column holds a name, clipped to fit ("offline-rubric (fallback from llm-judge:<a long model
    # path>)" can pass 100 characters, which PostgreSQL refuses); the payload keeps it whole.
    evaluator = str(evaluation["evaluator"])
    limit = Evaluation.evaluator.type.length or len(evaluator)
    if len(evaluator) > limit:
        evaluator = evaluator[: limit - 1] + "…"
    return Evaluation(score=float(evaluation["score"]), evaluator=evaluator, payload=dict(evaluation))


def _code_result_row(code_result: Mapping[str, Any] | None) -> CodeResult | None:
    if code_result is None:
        return None
    return CodeResult(
        status=str(code_result["status"]), score=float(code_result["score"]), payload=dict(code_result)
    )
