"""Every read and write the app makes to the database, each write one committed transaction.

Methods return frozen records (app.store.records), never ORM objects, so nothing a caller holds
depends on a session that is already closed. Each domain's reads and writes live in its own module
(accounts, sessions, turns, history, drafts); this class joins them.
"""

from __future__ import annotations

from app.store.accounts import AccountRepository
from app.store.drafts import DraftRepository
from app.store.history import HistoryRepository
from app.store.sessions import SessionRepository
from app.store.turns import TurnRepository


class Repository(AccountRepository, SessionRepository, TurnRepository, HistoryRepository, DraftRepository):
    """The store's one entry point; safe to share between threads and to run in many processes."""
