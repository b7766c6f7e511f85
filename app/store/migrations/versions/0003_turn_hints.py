"""Turns keep the texts of the hints shown on them.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-28

Only a count was stored, so a hint was gone from the page once it reloaded and absent from the report.
Rows from before this revision keep their count and have no texts (NULL).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("hints", sa.JSON(), nullable=True))


def downgrade() -> None:
    # In place (SQLite drops a column itself since 3.35): batch mode rebuilt turns on SQLite, and dropping the
    # old table, with foreign keys on, deleted every evaluation and code result (ON DELETE CASCADE).
    op.drop_column("turns", "hints")
