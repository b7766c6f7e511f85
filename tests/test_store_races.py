"""Two processes writing at the same instant, on SQLite and PostgreSQL: each pair of writes is interleaved at the
point where the older code read, then wrote, so what one read is out of date when it writes."""

# ruff: noqa: F811 - pytest fixtures imported from tests.test_store are redefined as arguments
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session

from app.errors import ConflictError
from app.store import Repository, make_engine, session_factory
from tests.test_store import blank_url, db_url, postgres_server  # noqa: F401

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
