"""Unsent answer drafts: what the candidate is writing for the open prompt, saved as they write it."""

from __future__ import annotations

from sqlalchemy import select

from app.errors import ConflictError, no_session
from app.store.base import RepositoryBase
from app.store.models import AnswerDraft, InterviewSession, Turn, utcnow
from app.store.records import DraftRecord, draft_record


class DraftRepository(RepositoryBase):
    """A session's one draft, for its open prompt only."""

    def save_draft(self, session_id: str, *, user_id: int, turn: int, text: str | None,
                   code: str | None) -> DraftRecord:
        """Keep the draft for turn `turn` of the user's session, replacing the one before. A NotFoundError for a
        session that is not the user's; a ConflictError when `turn` is not the open prompt (a tab left behind
        must not put its draft over the prompt the session has moved on to)."""
        with self._writing() as session:
            owner = session.get(InterviewSession, session_id)
            if owner is None or owner.user_id != user_id:
                raise no_session(session_id)
            # The turn row locked as record_answer locks it: an answer and a draft of it are recorded one after the
            # other, so the answer's commit, which deletes the draft, cannot be followed by the draft's.
            current = session.get(Turn, owner.state.get("current_turn_id") or -1, with_for_update=True)
            # Then the session, read again, as record_answer locks it after the turn: an end (by another process)
            # committed since it was read above deleted the drafts there were, and this one, stored after it on the
            # completed session, would never be read or deleted.
            session.get(InterviewSession, session_id, with_for_update=True, populate_existing=True)
            if owner.status != "active" or current is None or current.answered_at is not None:
                raise ConflictError("this session has no prompt waiting for an answer, so there is no draft to keep")
            if current.position != turn:
                where = (f"moved on from turn {turn} to turn {current.position}" if turn < current.position
                         else f"has not asked turn {turn}: its open prompt is turn {current.position}")
                raise ConflictError(f"this session {where}; the draft was not kept: fetch the session for the "
                                    "current prompt")
            row = session.get(AnswerDraft, session_id) or AnswerDraft(session_id=session_id)
            row.turn, row.text, row.code, row.updated_at = turn, text, code, utcnow()
            session.add(row)
            session.flush()
            return draft_record(row)

    def draft(self, session_id: str, *, turn: int) -> DraftRecord | None:
        """The session's draft when it was written for turn `turn` (the open prompt's), else None."""
        query = select(AnswerDraft).where(AnswerDraft.session_id == session_id, AnswerDraft.turn == turn)
        with self._reading() as session:
            row = session.scalar(query)
            return None if row is None else draft_record(row)
