"""Durable storage: users, API keys, interview sessions and their scored turns.

SQLite (WAL) under the data directory by default, PostgreSQL when the settings name one. The schema
is created and upgraded only by Alembic migrations (`migrate`), never by `create_all`.
"""

from __future__ import annotations

from app.store.db import make_engine, migrate, session_factory
from app.store.records import ApiKeyRecord, QuestionScore, SessionRecord, TurnRecord, UserRecord
from app.store.repository import Repository


def open_repository(url: str) -> Repository:
    """Migrate the database at `url` to the latest schema and return a repository over it."""
    migrate(url)
    return Repository(session_factory(make_engine(url)))


__all__ = [
    "ApiKeyRecord",
    "Repository",
    "SessionRecord",
    "QuestionScore",
    "TurnRecord",
    "UserRecord",
    "make_engine",
    "migrate",
    "open_repository",
    "session_factory",
]
