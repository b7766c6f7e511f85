"""Plain, frozen copies of stored rows: what the repository hands out instead of live ORM objects.

ORM objects are bound to the session that loaded them; a caller touching one after the session
closed gets a lazy-load error or stale data. These records are detached by construction.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, NamedTuple

from app.store import models


@dataclass(frozen=True, slots=True)
class UserRecord:
    id: int
    name: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    id: int
    user_id: int
    name: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: str
    user_id: int
    config: dict[str, Any]
    state: dict[str, Any]
    status: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class TurnRecord:
    id: int
    session_id: str
    position: int
    question_id: str
    topic: str
    difficulty: int
    kind: str
    prompt: str
    target_point: str | None
    action: str | None
    answer_text: str | None
    answer_code: str | None
    hints_used: int
    created_at: datetime
    answered_at: datetime | None
    evaluation: dict[str, Any] | None
    code_result: dict[str, Any] | None
    bank_entry: dict[str, Any] | None = None
    hints: tuple[str, ...] = ()  # as shown, in order (none stored for turns from before they were)

    @property
    def answered(self) -> bool:
        return self.answered_at is not None


@dataclass(frozen=True, slots=True)
class DraftRecord:
    session_id: str
    turn: int
    text: str | None
    code: str | None
    updated_at: datetime


class QuestionScore(NamedTuple):
    """A question's score in one session, for progress charts and spaced review: its last evaluated
    turn's, which after follow-ups is the score of everything said on it (what the report shows)."""

    topic: str
    question_id: str
    score: float
    answered_at: datetime
    session_id: str


def _detached(cls: type, row: Any, **computed: Any) -> Any:
    """A record of `cls` from the row's columns of the same names, copied deep: a caller editing a
    returned dict (a session's state) must not edit what the ORM may still hold."""
    return cls(**{f.name: copy.deepcopy(getattr(row, f.name)) for f in fields(cls) if f.name not in computed},
               **computed)


def user_record(row: models.User) -> UserRecord:
    return _detached(UserRecord, row)


def api_key_record(row: models.ApiKey) -> ApiKeyRecord:
    return _detached(ApiKeyRecord, row)


def session_record(row: models.InterviewSession) -> SessionRecord:
    return _detached(SessionRecord, row)


def turn_record(row: models.Turn) -> TurnRecord:
    return _detached(
        TurnRecord, row,
        evaluation=copy.deepcopy(row.evaluation.payload) if row.evaluation else None,
        code_result=copy.deepcopy(row.code_result.payload) if row.code_result else None,
        hints=tuple(row.hints or ()),
    )


def draft_record(row: models.AnswerDraft) -> DraftRecord:
    return _detached(DraftRecord, row)
