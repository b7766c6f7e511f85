"""Alembic environment: runs on the connection `app.store.db.migrate` hands in.

`migrate` opens the transaction and takes the cross-process lock before calling Alembic, so this
file only wires Alembic to that connection and to the models' metadata (for autogenerate).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from app.store.db import make_engine
from app.store.models import Base


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        compare_type=True,
        # SQLite cannot ALTER most things in place; batch mode rebuilds the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    # Used by authoring commands (e.g. autogenerate) called with alembic_config(url) alone.
    url = context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database: pass a connection or set sqlalchemy.url")
    engine = make_engine(url)
    try:
        with engine.connect() as conn, conn.begin():
            _run(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("offline (--sql) migrations are not supported; use app.store.db.migrate")
_run_online()
