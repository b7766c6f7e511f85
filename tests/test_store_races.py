"""Two processes writing at the same instant, on SQLite and PostgreSQL: each pair of writes is interleaved at the
point where the older code read, then wrote, so what one read is out of date when it writes."""

# ruff: noqa: F811 - pytest fixtures imported from tests.test_store are redefined as arguments
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event, func, select, text
from sqlalchemy.orm import Session

from app.errors import ConflictError
from app.store import Repository, make_engine, session_factory
from app.store.models import AnswerDraft, InterviewSession
from tests.test_store import _open_turn, _session_with_turn, blank_url, db_url, postgres_server  # noqa: F401

WAIT_S = 30  # only ever waited out when something is broken


@pytest.fixture
def workers(db_url: str) -> Iterator[tuple[Repository, Repository]]:
    """Two repositories on engines of their own: separate pools, like two API workers."""
    engines = [make_engine(db_url) for _ in range(2)]
    yield Repository(session_factory(engines[0])), Repository(session_factory(engines[1]))
    for engine in engines:
        engine.dispose()


@contextmanager
def _held_before_writing(held: Callable[[], None]) -> Iterator[None]:
    """`held` runs in every repository transaction as it is about to write its first change (after its reads)."""
    def before_flush(session: Session, *_: Any) -> None:
        held()

    event.listen(Session, "before_flush", before_flush)
    try:
        yield
    finally:
        event.remove(Session, "before_flush", before_flush)


def _run(*calls: Callable[[], Any]) -> list[Any]:
    """Each call in a thread of its own; what it returned or raised, in order."""
    outcomes: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            outcomes[i] = calls[i]()
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            outcomes[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert not any(thread.is_alive() for thread in threads), "a racing write never finished"
    return outcomes


@pytest.mark.parametrize("make", ["create_user", "get_or_create_user"])
def test_two_names_drawn_alike_made_at_the_same_instant_make_one_account(db_url: str, workers, make: str) -> None:
    """Each new name was compared with the names stored, then inserted: on PostgreSQL "learner" and "leɑrner" (Latin
    alpha) made at once both read no twin and both became accounts. SQLite's writers take the write lock before
    they read, so there the second waits and is refused either way."""
    first, second = workers
    if db_url.startswith("postgresql"):  # both read before either writes
        both_read = threading.Barrier(2, timeout=WAIT_S)
        holding = _held_before_writing(both_read.wait)
    else:  # one writer at a time: both sent at once
        holding = _held_before_writing(lambda: None)
    with holding:
        outcomes = _run(lambda: getattr(first, make)("learner"), lambda: getattr(second, make)("le\u0251rner"))
    refused = [o for o in outcomes if isinstance(o, Exception)]
    assert len(refused) == 1, outcomes
    assert isinstance(refused[0], ConflictError) and "reads as the existing user" in str(refused[0])
    names = {first.user_named(n) is not None for n in ("learner", "le\u0251rner")}
    assert names == {True, False}


def _waiting_on_a_lock(repo: Repository) -> bool:
    """Whether a PostgreSQL transaction of this database waits for a row another one holds."""
    with repo._reading() as db:
        return bool(db.scalar(text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                   "AND wait_event_type = 'Lock'")))


def test_a_draft_saved_while_another_process_ends_the_session_is_not_left_behind(db_url: str, workers) -> None:
    """A draft read the session as active, then wrote: on PostgreSQL an end committed in between (deleting the drafts
    there were) and the draft was stored after it, on a completed session, where nothing ever reads or deletes it."""
    drafter, ender = workers
    user_id, session_id, first = _session_with_turn(drafter)
    drafter.record_answer(first, action="answer", answer_text="a")
    open_turn = _open_turn(drafter, session_id)
    on_postgres = db_url.startswith("postgresql")
    read, go = threading.Event(), threading.Event()

    def hold() -> None:  # the draft has read the session and is about to write; the end comes now
        if threading.current_thread().name == "drafting":
            read.set()
            assert go.wait(WAIT_S)

    def end() -> None:
        assert read.wait(WAIT_S)
        ender.save_state(session_id, state={"current_turn_id": None}, status="completed", open_turn=open_turn)

    def release() -> None:  # once the end has committed, or waits for the draft's transaction
        while ending.is_alive() and not (on_postgres and _waiting_on_a_lock(ender)):
            time.sleep(0.01)
        go.set()

    with _held_before_writing(hold if on_postgres else lambda: None):
        drafting = threading.Thread(name="drafting", target=lambda: _saved_or_refused(
            drafter, session_id, user_id=user_id, turn=1))
        ending = threading.Thread(target=end)
        releasing = threading.Thread(target=release)
        if not on_postgres:  # one writer at a time: the end waits for the draft, or the draft for the end
            read.set()
        for thread in (drafting, ending, releasing):
            thread.start()
        for thread in (drafting, ending, releasing):
            thread.join(WAIT_S)
            assert not thread.is_alive(), "a racing write never finished"
    with drafter._reading() as db:
        assert db.scalar(select(InterviewSession.status).where(InterviewSession.id == session_id)) == "completed"
        assert db.scalar(select(func.count()).select_from(AnswerDraft)) == 0


def _saved_or_refused(repo: Repository, session_id: str, *, user_id: int, turn: int) -> None:
    try:
        repo.save_draft(session_id, user_id=user_id, turn=turn, text="half an answer", code=None)
    except ConflictError:
        pass  # the end came first: refused, as it should be
