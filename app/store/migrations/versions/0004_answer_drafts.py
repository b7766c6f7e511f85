"""Sessions keep the candidate's unsent draft of the answer to their open prompt.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-28

The page held a draft only in its browser session, so a reload, a closed tab or a crash of the app lost a long
answer not yet sent. One row per session: only the open prompt has a draft, and recording its answer deletes it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "answer_drafts",
        sa.Column("session_id", sa.String(length=32), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("code", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], name=op.f("fk_answer_drafts_session_id_sessions"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_answer_drafts")),
    )


def downgrade() -> None:
    # A table of its own: dropping it touches no other table (no rebuild, no cascade).
    op.drop_table("answer_drafts")
