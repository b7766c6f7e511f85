"""Plain, frozen copies of stored rows: what the repository hands out instead of live ORM objects.

ORM objects are bound to the session that loaded them; a caller touching one after the session
closed gets a lazy-load error or stale data. These records are detached by construction.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
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

    @property
    def answered(self) -> bool:
        return self.answered_at is not None


class TopicScore(NamedTuple):
    """One evaluated answer, for progress charts and spaced review."""

    topic: str
    score: float
    answered_at: datetime
    session_id: str


def user_record(row: models.User) -> UserRecord:
    return UserRecord(id=row.id, name=row.name, created_at=row.created_at)


def api_key_record(row: models.ApiKey) -> ApiKeyRecord:
    return ApiKeyRecord(
        id=row.id,
        user_id=row.user_id,
        name=row.name,
        prefix=row.prefix,
        created_at=row.created_at,
        revoked_at=row.revoked_at,
    )


def session_record(row: models.InterviewSession) -> SessionRecord:
    # Deep copies: a caller editing the returned state must not edit what the ORM may still hold.
    return SessionRecord(
        id=row.id,
        user_id=row.user_id,
        config=copy.deepcopy(row.config),
        state=copy.deepcopy(row.state),
        status=row.status,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def turn_record(row: models.Turn) -> TurnRecord:
    return TurnRecord(
        id=row.id,
        session_id=row.session_id,
        position=row.position,
        question_id=row.question_id,
        topic=row.topic,
        difficulty=row.difficulty,
        kind=row.kind,
        prompt=row.prompt,
        target_point=row.target_point,
        action=row.action,
        answer_text=row.answer_text,
        answer_code=row.answer_code,
        hints_used=row.hints_used,
        created_at=row.created_at,
        answered_at=row.answered_at,
        evaluation=copy.deepcopy(row.evaluation.payload) if row.evaluation else None,
        code_result=copy.deepcopy(row.code_result.payload) if row.code_result else None,
    )
