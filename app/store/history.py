"""A user's history across all their sessions: what they were asked, and how they scored."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.store.base import RepositoryBase
from app.store.models import Evaluation, InterviewSession, Turn
from app.store.records import QuestionScore


class HistoryRepository(RepositoryBase):
    """What a user was asked and scored, across every session they had."""

    def questions_asked(self, user_id: int) -> int:
        """How many questions (not follow-ups) the user has been asked in all their sessions: a choice made
        after reading this is current while it is unchanged (see add_turn's `user_asked`)."""
        with self._reading() as session:
            return asked_count(session, user_id)

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


def asked_count(session: Session, user_id: int) -> int:
    """How many questions (not follow-ups) the user was asked in all their sessions, read in `session`."""
    query = (select(func.count()).select_from(Turn).join(InterviewSession, InterviewSession.id == Turn.session_id)
             .where(InterviewSession.user_id == user_id, Turn.kind == "question"))
    return session.scalar(query) or 0
