"""Turns keep the bank entry their question was asked and judged by.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-28

A report read the question's text and rubric from the bank when it was rendered, so editing a pack rewrote
the reports of sessions completed before. Rows from before this revision have no copy (NULL); their
reports still fall back to the bank.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("bank_entry", sa.JSON(), nullable=True))


def downgrade() -> None:
    # In place (SQLite drops a column itself since 3.35): batch mode rebuilt turns on SQLite, and dropping the
    # old table, with foreign keys on, deleted every evaluation and code result (ON DELETE CASCADE).
    op.drop_column("turns", "bank_entry")
