"""Initial schema: users, API keys, sessions, turns, evaluations, code results.

Revision ID: 0001
Revises:
Create Date: 2026-11-22

Types are spelled out here rather than imported from app.store.models so that this revision keeps
describing the schema it created even after the models move on.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _timestamp(name: str, *, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _user_fk() -> sa.Column:
    return sa.Column("user_id", sa.Integer(), nullable=False)


def _turn_fk(table: str) -> tuple[sa.Column, sa.ForeignKeyConstraint, sa.UniqueConstraint]:
    return (
        sa.Column("turn_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["turn_id"], ["turns.id"], name=op.f(f"fk_{table}_turn_id_turns"), ondelete="CASCADE"
        ),
        sa.UniqueConstraint("turn_id", name=op.f(f"uq_{table}_turn_id")),
    )


def _owner(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["user_id"], ["users.id"], name=op.f(f"fk_{table}_user_id_users"), ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("name", name=op.f("uq_users_name")),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        _user_fk(),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=8), nullable=False),
        _timestamp("created_at"),
        _timestamp("revoked_at", nullable=True),
        _owner("api_keys"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
        sa.UniqueConstraint("user_id", "name", name=op.f("uq_api_keys_user_id_name")),
    )
    op.create_index(op.f("ix_api_keys_prefix"), "api_keys", ["prefix"])
    op.create_index(op.f("ix_api_keys_user_id"), "api_keys", ["user_id"])
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(length=32), nullable=False),
        _user_fk(),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        _timestamp("created_at"),
        _timestamp("updated_at"),
        sa.CheckConstraint("status IN ('active', 'completed')", name=op.f("ck_sessions_status")),
        _owner("sessions"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sessions")),
    )
    op.create_index(op.f("ix_sessions_user_id"), "sessions", ["user_id"])
    _create_turns()
    op.create_table(
        "evaluations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("evaluator", sa.String(length=100), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        *_turn_fk("evaluations"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evaluations")),
    )
    op.create_table(
        "code_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        *_turn_fk("code_results"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_code_results")),
    )


def _create_turns() -> None:
    op.create_table(
        "turns",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=32), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("question_id", sa.String(length=200), nullable=False),
        sa.Column("topic", sa.String(length=100), nullable=False),
        sa.Column("difficulty", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("target_point", sa.Text(), nullable=True),
        sa.Column("action", sa.String(length=16), nullable=True),
        sa.Column("answer_text", sa.Text(), nullable=True),
        sa.Column("answer_code", sa.Text(), nullable=True),
        sa.Column("hints_used", sa.Integer(), server_default="0", nullable=False),
        _timestamp("created_at"),
        _timestamp("answered_at", nullable=True),
        sa.CheckConstraint(
            "action IS NULL OR action IN ('answer', 'skip', 'dont_know')", name=op.f("ck_turns_action")
        ),
        sa.CheckConstraint("kind IN ('question', 'follow_up')", name=op.f("ck_turns_kind")),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_turns_session_id_sessions"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_turns")),
        sa.UniqueConstraint("session_id", "position", name=op.f("uq_turns_session_id_position")),
    )
    op.create_index(op.f("ix_turns_question_id"), "turns", ["question_id"])


def downgrade() -> None:
    for table in ("code_results", "evaluations", "turns", "sessions", "api_keys", "users"):
        op.drop_table(table)
