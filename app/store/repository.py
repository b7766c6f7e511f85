"""Every read and write the app makes to the database, each write one committed transaction.

Methods return frozen records (app.store.records), never ORM objects, so nothing a caller holds
depends on a session that is already closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, NotRequired, TypedDict, Unpack

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session, selectinload

from app.errors import ChoiceOutdatedError, ConflictError, NotFoundError, no_session
from app.store.accounts import AccountRepository
from app.store.base import require_choice, require_keys
from app.store.drafts import DraftRepository
from app.store.models import (
    ANSWER_ACTIONS,
    SESSION_STATUSES,
    TURN_KINDS,
    AnswerDraft,
    CodeResult,
    Evaluation,
    InterviewSession,
    Turn,
    User,
    utcnow,
)
from app.store.records import QuestionScore, SessionRecord, TurnRecord, session_record, turn_record


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


class Repository(AccountRepository, DraftRepository):
    """The store's one entry point; safe to share between threads and to run in many processes."""

    # Sessions

    def get_session(self, session_id: str, user_id: int) -> SessionRecord | None:
        """The user's session; None when it does not exist or belongs to someone else."""
        query = select(InterviewSession).where(
            InterviewSession.id == session_id, InterviewSession.user_id == user_id
        )
        with self._reading() as session:
            row = session.scalar(query)
            return session_record(row) if row is not None else None

    def list_sessions(
        self, user_id: int, *, limit: int | None = None, after: tuple[datetime, str] | None = None
    ) -> list[SessionRecord]:
        """The user's sessions, newest first: all of them, or `limit` of them from just past the session
        `after` names by its (created_at, id). Keyed on the order itself, not an offset, so a session started
        while a client pages through neither repeats an item nor hides one."""
        query = (
            select(InterviewSession)
            .where(InterviewSession.user_id == user_id)
            .order_by(InterviewSession.created_at.desc(), InterviewSession.id)
            .limit(limit)
        )
        if after is not None:
            created_at, session_id = after
            query = query.where(or_(
                InterviewSession.created_at < created_at,
                (InterviewSession.created_at == created_at) & (InterviewSession.id > session_id),
            ))
        with self._reading() as session:
            return [session_record(row) for row in session.scalars(query)]

    def questions_in_interview(self, user_id: int) -> set[str]:
        """The questions on screen in the user's interview-mode sessions still going: an interview shows no
        rubric until it is over, so grading one of them on the side must not show it either."""
        query = select(InterviewSession).where(InterviewSession.user_id == user_id,
                                               InterviewSession.status == "active")
        with self._reading() as session:
            records = [session_record(row) for row in session.scalars(query)]
        return {str(r.state["current_question_id"]) for r in records
                if r.config.get("mode") == "interview" and r.state.get("current_question_id")}

    def save_state(
        self, session_id: str, *, state: dict[str, Any], status: str | None = None, open_turn: int | None = None
    ) -> None:
        """Replace the session's resumable state, and its status when given. With `open_turn`, only while that
        turn is still unanswered: the state was read with it open (to end the session there), and an answer to it
        stored since by another process, with the steps after it, must not be overwritten (a ConflictError)."""
        with self._writing() as session:
            row = _locked_session(session, session_id)
            if open_turn is not None and session.scalar(select(Turn.answered_at).where(Turn.id == open_turn)):
                raise ConflictError("the prompt on screen was answered meanwhile, so nothing was changed; fetch the "
                                    "session for the current prompt")
            _apply_state(row, state=state, status=status)
            if status == "completed":  # ended early: the open prompt's draft will never be sent
                session.execute(delete(AnswerDraft).where(AnswerDraft.session_id == session_id))

    def count_code_run(self, session_id: str, question_id: str) -> int:
        """One more run of a code task's hidden checks in the session; the question's count so far."""
        with self._writing() as session:
            row = _locked_session(session, session_id)
            runs = dict((row.state or {}).get("code_runs") or {})
            runs[question_id] = int(runs.get(question_id, 0)) + 1
            _apply_state(row, state={**(row.state or {}), "code_runs": runs})
            return runs[question_id]

    # Turns

    def add_turn(self, session_id: str, **turn: Unpack[NewTurn]) -> TurnRecord:
        """Append a question or follow-up to the session (`_insert_turn` says what each argument asks of it)."""
        with self._writing() as session:
            return _insert_turn(session, _locked_session(session, session_id), **turn)

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
                raise ConflictError(f"turn {turn.position} was already answered; nothing was recorded")
            # Locked after the turn, as add_hint does. A session ended (by another process) while this answer was
            # scored stays ended: the answer, stored anyway, put back the prompt the end had closed and asked on.
            if _locked_session(session, turn.session_id).status == "completed":
                raise ConflictError("the session was ended while this answer was scored; nothing was recorded")
            if hints_seen is not None and turn.hints_used != hints_seen:
                raise ConflictError(f"a hint was given on turn {turn.position} while this answer was scored, so its "
                                    "score is out of date; nothing was recorded: send the answer again")
            turn.action, turn.answer_text, turn.answer_code = action, answer_text, answer_code
            turn.answered_at = utcnow()
            turn.evaluation = _evaluation_row(evaluation)
            turn.code_result = _code_result_row(code_result)
            _apply_state(turn.session, state=state, status=status)
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

    # History across sessions

    def questions_asked(self, user_id: int) -> int:
        """How many questions (not follow-ups) the user has been asked in all their sessions: a choice made
        after reading this is current while it is unchanged (see add_turn's `user_asked`)."""
        with self._reading() as session:
            return _asked(session, user_id)

    def seen_questions(self, user_id: int) -> dict[str, datetime]:
        """Each question the user was ever asked, with when it was last asked."""
        query = (
            select(Turn.question_id, func.max(Turn.created_at))
            .join(InterviewSession, InterviewSession.id == Turn.session_id)
            .where(InterviewSession.user_id == user_id)
            .group_by(Turn.question_id)
        )
        with self._reading() as session:
            # dict(result) would read the Result as a mapping of column keys, not as rows.
            return {row[0]: row[1] for row in session.execute(query)}

    def question_scores(self, user_id: int) -> list[QuestionScore]:
        """Each question's score in each of the user's sessions, by when it was last answered, oldest first."""
        query = (
            select(Turn.topic, Turn.question_id, Evaluation.score, Turn.answered_at, Turn.session_id)
            .join(Evaluation, Evaluation.turn_id == Turn.id)
            .join(InterviewSession, InterviewSession.id == Turn.session_id)
            .where(InterviewSession.user_id == user_id)
            .order_by(Turn.answered_at, Turn.id)
        )
        with self._reading() as session:
            last: dict[tuple[str, str], QuestionScore] = {}
            for topic, question_id, value, answered_at, session_id in session.execute(query):
                assert answered_at is not None  # only answered turns have an evaluation
                score = QuestionScore(topic, question_id, value, answered_at, session_id)
                last.pop((score.session_id, score.question_id), None)  # re-inserted: ordered by the last answer
                last[score.session_id, score.question_id] = score
            return list(last.values())


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
    _apply_state(owner, state=None if state is None else {**state, "current_turn_id": row.id})
    return turn_record(row)


def _locked_session(session: Session, session_id: str) -> InterviewSession:
    # FOR UPDATE on PostgreSQL serialises writers of one interview (SQLite's BEGIN IMMEDIATE
    # already serialises all writers), so turn positions cannot collide.
    row = session.get(InterviewSession, session_id, with_for_update=True)
    if row is None:
        raise no_session(session_id)
    return row


def _asked(session: Session, user_id: int) -> int:
    query = (select(func.count()).select_from(Turn).join(InterviewSession, InterviewSession.id == Turn.session_id)
             .where(InterviewSession.user_id == user_id, Turn.kind == "question"))
    return session.scalar(query) or 0


def _asked_locked(session: Session, user_id: int) -> int:
    """`_asked`, with the user's question choices serialised until this transaction ends. SQLite's BEGIN IMMEDIATE
    already serialises every writer; PostgreSQL locks the user's row. FOR NO KEY UPDATE, so inserts that only
    reference the user (a new session, a key) do not wait on it. Every writer that locks the user has locked its
    session row first, never the other way round, so the two locks cannot deadlock."""
    session.execute(select(User.id).where(User.id == user_id).with_for_update(key_share=True))
    return _asked(session, user_id)


def _apply_state(row: InterviewSession, *, state: dict[str, Any] | None, status: str | None = None) -> None:
    if status is not None:
        require_choice(status, SESSION_STATUSES, "status")
        row.status = status
    if state is not None:
        # A step that read the state before a run was counted (an answer being scored) must not undo the count.
        stored, given = (row.state or {}).get("code_runs") or {}, state.get("code_runs") or {}
        runs = {q: max(int(stored.get(q, 0)), int(given.get(q, 0))) for q in {*stored, *given}}
        row.state = {**state, "code_runs": runs} if runs else state
    row.updated_at = utcnow()


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
