"""Engines, sessions and schema migrations for SQLite (the default) and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event, make_url, text
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# Execution option the repository sets on connections that will write (see _sqlite_begin).
WRITE_TRANSACTION = "interviewer_write"
SQLITE_BUSY_TIMEOUT_MS = 15_000
# Any constant shared by every process; serialises concurrent `migrate` calls on PostgreSQL.
_PG_MIGRATION_LOCK = 0x1E57_0E5


def make_engine(url: str) -> Engine:
    """An engine tuned for its backend: WAL SQLite with foreign keys, or pooled PostgreSQL."""
    parsed = make_url(url)
    if parsed.drivername == "postgresql":
        # A bare postgresql:// would pick psycopg2, which we do not ship; psycopg 3 is the driver.
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() != "sqlite":
        # pool_pre_ping: a database restart must not surface as one failed request per pooled conn.
        return create_engine(parsed, pool_pre_ping=True)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    # check_same_thread off: the pool hands connections to FastAPI's worker threads, one at a time.
    engine = create_engine(parsed, connect_args={"check_same_thread": False})
    event.listen(engine, "connect", _sqlite_on_connect)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    # Take transaction control from the sqlite3 module, which would otherwise skip BEGIN before
    # SELECT and DDL; _sqlite_begin emits it instead (SQLAlchemy's documented recipe).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        # busy_timeout first: switching to WAL needs a lock that another process may hold.
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        # WAL: readers never block the writer, so several API processes can share one file.
        # The mode is stored in the file: switch only once, since switching takes an exclusive lock
        # that fails ("database is locked") while another process is connecting at the same time.
        if cursor.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            _switch_to_wal(cursor)
        # FULL: a commit survives power loss, not only a killed process.
        cursor.execute("PRAGMA synchronous = FULL")
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()


def _switch_to_wal(cursor: Any) -> None:
    import sqlite3
    import time

    for attempt in range(50):
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:  # another process is switching it right now
            if "locked" not in str(exc) or attempt == 49:
                raise
            time.sleep(0.05)


def _sqlite_begin(conn: Connection) -> None:
    # A deferred transaction that reads and then writes cannot wait for the write lock: SQLite
    # fails it at once with "database is locked". Writers therefore take the lock up front, where
    # busy_timeout applies, and readers stay deferred so they never queue behind writers.
    write = conn.get_execution_options().get(WRITE_TRANSACTION, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions whose loaded objects stay readable after commit (records are built from them)."""
    return sessionmaker(engine, expire_on_commit=False)


def alembic_config(url: str, connection: Connection | None = None) -> Config:
    """Alembic configuration built in code: no alembic.ini, works from any cwd or installed copy.

    New revisions: `command.revision(alembic_config(url), message=..., autogenerate=True)`.
    """
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # Config values go through configparser interpolation, where a literal % must be doubled.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["connection"] = connection
    return config


def migrate(url: str) -> None:
    """Bring the database at `url` to the latest schema; safe to call from several processes."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(**{WRITE_TRANSACTION: True})
            with conn.begin():
                # One transaction around every migration: all or nothing, and a second process
                # waits here, then finds the schema current and does nothing.
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
                command.upgrade(alembic_config(url, conn), "head")
    finally:
        engine.dispose()


def current_revision(engine: Engine) -> str | None:
    """The schema revision the database is at, or None before the first migration."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
