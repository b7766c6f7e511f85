"""The transaction discipline every repository method follows."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.store.db import WRITE_TRANSACTION


class RepositoryBase:
    """Holds the session factory; reads and writes each get a short-lived session of their own."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    @contextmanager
    def _reading(self) -> Iterator[Session]:
        with self._sessions() as session:
            yield session

    @contextmanager
    def _writing(self) -> Iterator[Session]:
        """One transaction, committed on leaving the block and rolled back whole on any error."""
        with self._sessions() as session, session.begin():
            session.connection(execution_options={WRITE_TRANSACTION: True})
            yield session


def require_choice(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}; got {value!r}")


def require_keys(payload: Mapping[str, Any], keys: tuple[str, ...], what: str) -> None:
    missing = [key for key in keys if key not in payload]
    if missing:
        raise ValueError(f"{what} lacks {', '.join(missing)}")
