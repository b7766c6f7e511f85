"""Sessions a failed start left without a first question are removed.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-28

A start stored its session before choosing and wording the first question, so a start that failed or was killed
there (an LLM wording it, the store refusing it, a closed terminal) left an active session with no turn: listed in
the user's history, with no prompt, and refused by every action. Starts now store the session with its first
question (Repository.open_session); this removes the ones left before. A session that new is left alone: an older
process may still be starting it.
"""

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STILL_STARTING = timedelta(hours=1)  # far longer than any start, an LLM wording its question at its timeout included


def upgrade() -> None:
    conn = op.get_bind()
    never_started = conn.execute(sa.text(
        "SELECT id, created_at FROM sessions WHERE status = 'active' "
        "AND NOT EXISTS (SELECT 1 FROM turns WHERE turns.session_id = sessions.id)"
    )).all()
    cutoff = datetime.now(UTC) - STILL_STARTING
    gone = [session_id for session_id, created_at in never_started if _utc(created_at) < cutoff]
    for session_id in gone:  # SQLite enforces no cascade here: its drafts, if any, go first
        conn.execute(sa.text("DELETE FROM answer_drafts WHERE session_id = :id"), {"id": session_id})
        conn.execute(sa.text("DELETE FROM sessions WHERE id = :id"), {"id": session_id})


def downgrade() -> None:
    pass  # nothing to put back: the sessions removed never held a question


def _utc(value: datetime | str) -> datetime:
    """A stored time as an aware UTC datetime: SQLite hands back the text it keeps, PostgreSQL a datetime."""
    at = datetime.fromisoformat(value) if isinstance(value, str) else value
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
