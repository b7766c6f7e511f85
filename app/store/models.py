"""The tables: users, API keys, interview sessions, their turns, each turn's scores, and unsent drafts.

Migrations (app/store/migrations) create these tables; the models here are what the code reads and
writes. A test compares the two so they cannot drift apart.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

SESSION_STATUSES = ("active", "completed")
TURN_KINDS = ("question", "follow_up")
ANSWER_ACTIONS = ("answer", "skip", "dont_know")
# What each action did to its turn, as a refusal of a later action on it says: a skip that won a race with an
# answer on one prompt was reported to the answer as "answered already".
ACTION_DONE = {"answer": "answered", "skip": "skipped", "dont_know": "answered \u201cI don't know\u201d"}


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_session_id() -> str:
    return uuid.uuid4().hex


def _one_of(column: str, allowed: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in allowed)})"


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes on every backend.

    SQLite has no time zone type and hands back naive values; PostgreSQL's timestamptz hands back
    values in the connection's zone. Normalising here means callers always compare like with like.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; use datetime.now(UTC)")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    # Named constraints let later migrations alter or drop them by name on every backend.
    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(table_name)s_%(column_0_N_name)s",
            "uq": "uq_%(table_name)s_%(column_0_N_name)s",
            "ck": "ck_%(table_name)s_%(constraint_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )
    type_annotation_map = {datetime: UTCDateTime, dict[str, Any]: JSON}


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    # The name as it is drawn (app.lookalike.skeleton), unique: two names drawn alike ("learner", "leɑrner") cannot
    # both be stored, however many processes make them at once. NULL only on a name that 0006 found drawn as an
    # older one: both were kept, and the older one's skeleton refuses every new look-alike of the two.
    name_skeleton: Mapped[str | None] = mapped_column(Text, unique=True, index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ApiKey(Base):
    __tablename__ = "api_keys"
    __table_args__ = (UniqueConstraint("user_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    # sha256 hex of the key: a stolen database does not yield working keys.
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(8), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None]


class InterviewSession(Base):
    __tablename__ = "sessions"
    __table_args__ = (CheckConstraint(_one_of("status", SESSION_STATUSES), name="status"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_session_id)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    config: Mapped[dict[str, Any]]
    # The engine's resumable state: after a crash a new process continues from exactly this.
    state: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(16), default="active")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)

    turns: Mapped[list[Turn]] = relationship(
        back_populates="session", order_by="Turn.position", passive_deletes=True
    )


class Turn(Base):
    __tablename__ = "turns"
    __table_args__ = (
        UniqueConstraint("session_id", "position"),
        CheckConstraint(_one_of("kind", TURN_KINDS), name="kind"),
        CheckConstraint(f"action IS NULL OR {_one_of('action', ANSWER_ACTIONS)}", name="action"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    position: Mapped[int]
    question_id: Mapped[str] = mapped_column(String(200), index=True)
    topic: Mapped[str] = mapped_column(String(100))
    difficulty: Mapped[int]
    kind: Mapped[str] = mapped_column(String(16))
    prompt: Mapped[str] = mapped_column(Text)
    target_point: Mapped[str | None] = mapped_column(Text)
    action: Mapped[str | None] = mapped_column(String(16))
    answer_text: Mapped[str | None] = mapped_column(Text)
    answer_code: Mapped[str | None] = mapped_column(Text)
    hints_used: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # On a question's first turn: the bank entry as it was asked and judged (text, reference answer, rubric), so
    # its report stays what it was when the pack is edited later. None on follow-ups and on rows from before 0002.
    bank_entry: Mapped[dict[str, Any] | None]
    # The hints shown on this turn, in order: a page reloaded shows them again and the report quotes them. NULL
    # on rows from before 0003, which kept only the count.
    hints: Mapped[list[str] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    answered_at: Mapped[datetime | None]

    session: Mapped[InterviewSession] = relationship(back_populates="turns")
    evaluation: Mapped[Evaluation | None] = relationship(back_populates="turn", passive_deletes=True)
    code_result: Mapped[CodeResult | None] = relationship(back_populates="turn", passive_deletes=True)


class Evaluation(Base):
    __tablename__ = "evaluations"

    id: Mapped[int] = mapped_column(primary_key=True)
    turn_id: Mapped[int] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"), unique=True)
    score: Mapped[float] = mapped_column(Float)
    evaluator: Mapped[str] = mapped_column(String(100))
    payload: Mapped[dict[str, Any]]

    turn: Mapped[Turn] = relationship(back_populates="evaluation")


class CodeResult(Base):
    __tablename__ = "code_results"

    id: Mapped[int] = mapped_column(primary_key=True)
    turn_id: Mapped[int] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"), unique=True)
    status: Mapped[str] = mapped_column(String(32))
    score: Mapped[float] = mapped_column(Float)
    payload: Mapped[dict[str, Any]]

    turn: Mapped[Turn] = relationship(back_populates="code_result")


class AnswerDraft(Base):
    """What the candidate has written for the session's open prompt and not sent yet: kept so that a reload, a
    closed tab or a crash of the app does not lose it. One per session; recording the answer deletes it."""

    __tablename__ = "answer_drafts"

    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True)
    turn: Mapped[int]  # the position of the turn it was written for: a draft of an earlier prompt is never shown
    text: Mapped[str | None] = mapped_column(Text)
    code: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
