"""Interview sessions: each user's list of them, and the resumable state the engine keeps in each."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from app.errors import ConflictError, no_session
from app.store.base import RepositoryBase, require_choice
from app.store.models import SESSION_STATUSES, AnswerDraft, InterviewSession, Turn, utcnow
from app.store.records import SessionRecord, session_record


class SessionRepository(RepositoryBase):
    """A user's sessions and the state each one resumes from."""

    def get_session(self, session_id: str, user_id: int) -> SessionRecord | None:
        """The user's session; None when it does not exist or belongs to someone else."""
        query = select(InterviewSession).where(
            InterviewSession.id == session_id, InterviewSession.user_id == user_id
        )
        with self._reading() as session:
            row = session.scalar(query)
            return session_record(row) if row is not None else None

    def session_ids_starting(self, prefix: str, user_id: int, limit: int) -> list[str]:
        """Up to `limit` of the user's session ids that start with `prefix` (a short id, as the app shows them)."""
        query = (
            select(InterviewSession.id)
            .where(InterviewSession.user_id == user_id, InterviewSession.id.startswith(prefix, autoescape=True))
            .order_by(InterviewSession.id)
            .limit(limit)
        )
        with self._reading() as session:
            return list(session.scalars(query))

    def list_sessions(
        self, user_id: int, *, limit: int | None = None, after: tuple[datetime, str] | None = None,
        status: str | None = None,
    ) -> list[SessionRecord]:
        """The user's sessions (of `status`, when given), newest first: all of them, or `limit` of them from just
        past the session `after` names by its (created_at, id). Keyed on the order itself, not an offset, so a
        session started while a client pages through neither repeats an item nor hides one."""
        query = (
            select(InterviewSession)
            .where(InterviewSession.user_id == user_id)
            .order_by(InterviewSession.created_at.desc(), InterviewSession.id)
            .limit(limit)
        )
        if status is not None:  # the latest session to resume, however many completed ones came after it
            query = query.where(InterviewSession.status == status)
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
        return set(self.questions_on_screen(user_id, interviews_only=True))

    def questions_on_screen(self, user_id: int, *, interviews_only: bool = False) -> dict[str, list[str]]:
        """The questions on screen in the user's sessions still going (in interview-mode ones only, if asked),
        each with the ids of the sessions showing it: a choice they keep from a session names them."""
        query = select(InterviewSession).where(InterviewSession.user_id == user_id,
                                               InterviewSession.status == "active")
        with self._reading() as session:
            records = [session_record(row) for row in session.scalars(query)]
        shown: dict[str, list[str]] = {}
        for r in records:
            if (not interviews_only or r.config.get("mode") == "interview") and r.state.get("current_question_id"):
                shown.setdefault(str(r.state["current_question_id"]), []).append(r.id)
        return shown

    def save_state(
        self, session_id: str, *, state: dict[str, Any], status: str | None = None, open_turn: int | None = None
    ) -> None:
        """Replace the session's resumable state, and its status when given. With `open_turn`, only while that
        turn is still unanswered: the state was read with it open (to end the session there), and an answer to it
        stored since by another process, with the steps after it, must not be overwritten (a ConflictError)."""
        with self._writing() as session:
            row = locked_session(session, session_id)
            if open_turn is not None and session.scalar(select(Turn.answered_at).where(Turn.id == open_turn)):
                raise ConflictError("the prompt on screen was answered meanwhile, so nothing was changed; fetch the "
                                    "session for the current prompt")
            apply_state(row, state=state, status=status)
            if status == "completed":  # ended early: the open prompt's draft will never be sent
                session.execute(delete(AnswerDraft).where(AnswerDraft.session_id == session_id))

    def count_code_run(self, session_id: str, question_id: str) -> int:
        """One more run of a code task's hidden checks in the session; the question's count so far."""
        with self._writing() as session:
            row = locked_session(session, session_id)
            runs = dict((row.state or {}).get("code_runs") or {})
            runs[question_id] = int(runs.get(question_id, 0)) + 1
            apply_state(row, state={**(row.state or {}), "code_runs": runs})
            return runs[question_id]


def locked_session(session: Session, session_id: str) -> InterviewSession:
    """The session's row, locked until the transaction ends; a NotFoundError when there is none."""
    # FOR UPDATE on PostgreSQL serialises writers of one interview (SQLite's BEGIN IMMEDIATE
    # already serialises all writers), so turn positions cannot collide.
    row = session.get(InterviewSession, session_id, with_for_update=True)
    if row is None:
        raise no_session(session_id)
    return row


def apply_state(row: InterviewSession, *, state: dict[str, Any] | None, status: str | None = None) -> None:
    """Set the session's state and status where given, keeping every code task's highest run count."""
    if status is not None:
        require_choice(status, SESSION_STATUSES, "status")
        row.status = status
    if state is not None:
        # A step that read the state before a run was counted (an answer being scored) must not undo the count.
        stored, given = (row.state or {}).get("code_runs") or {}, state.get("code_runs") or {}
        runs = {q: max(int(stored.get(q, 0)), int(given.get(q, 0))) for q in {*stored, *given}}
        row.state = {**state, "code_runs": runs} if runs else state
    row.updated_at = utcnow()
