"""Each user name keeps its skeleton (how it is drawn) in a unique column.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28

A new name was compared with every stored one, then inserted: two names drawn alike made at the same instant by
two processes both passed on PostgreSQL. The unique column makes the database refuse the second. Names already
stored that are drawn alike (made before the look-alike check, or in such a race) are all kept, since each may
have sessions and keys: the oldest keeps the skeleton, each later one gets NULL (a unique column takes any number
of NULLs) and is named in a warning. A new name drawn as any of them is refused by the oldest's skeleton.
"""

import logging
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.lookalike import skeleton

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Not under "alembic": alembic gives that logger a NullHandler, so with no logging configured (the CLI, `serve`)
# its warnings reached no one. Here Python prints a warning on stderr when nothing else is set up to.
log = logging.getLogger("app.store.migrations")


def upgrade() -> None:
    # Added in place: a batch rebuild of users on SQLite would drop the old table, and with it, by ON DELETE
    # CASCADE, every session and key.
    op.add_column("users", sa.Column("name_skeleton", sa.Text(), nullable=True))
    conn = op.get_bind()
    owners: dict[str, str] = {}
    for user_id, name in conn.execute(sa.text("SELECT id, name FROM users ORDER BY id")).all():
        drawn = skeleton(name)
        if drawn in owners:
            log.warning("user %r is drawn as the older user %r; both are kept, and no new name drawn so is accepted",
                        name, owners[drawn])
            continue
        owners[drawn] = name
        conn.execute(sa.text("UPDATE users SET name_skeleton = :drawn WHERE id = :id"), {"drawn": drawn, "id": user_id})
    op.create_index(op.f("ix_users_name_skeleton"), "users", ["name_skeleton"], unique=True)


def downgrade() -> None:
    # The index first: SQLite will not drop a column that an index uses.
    op.drop_index(op.f("ix_users_name_skeleton"), table_name="users")
    op.drop_column("users", "name_skeleton")
