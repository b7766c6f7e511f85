"""The storage layer on a real SQLite file and a real PostgreSQL server, schema made by migrations."""

from __future__ import annotations

import dataclasses
import hashlib
import selectors
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, event, func, text, update
from sqlalchemy import select as sql_select

from app.errors import ChoiceOutdatedError, ConflictError, NotFoundError, UserFacingError
from app.store import Repository, make_engine, migrate, session_factory
from app.store.db import alembic_config, current_revision
from app.store.models import (
    AnswerDraft,
    ApiKey,
    Base,
    CodeResult,
    Evaluation,
    InterviewSession,
    Turn,
    new_session_id,
)
from app.store.records import TurnRecord
from tests.postgres import postgres_server  # noqa: F401  (fixture)
from tests.processes import Watch, run_bounded

REPO = Path(__file__).resolve().parents[1]
EVALUATION = {"score": 0.75, "evaluator": "rubric", "points": [{"id": "p1", "hit": True}]}
CODE_RESULT = {"status": "passed", "score": 1.0, "checks": ["shape"]}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def blank_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database of each kind, no schema yet."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("postgres_server").create_database())


@pytest.fixture
def db_url(blank_url: str) -> str:
    """A database of each kind at the latest schema, made by the migrations."""
    migrate(blank_url)
    return blank_url


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def repo(engine: Engine) -> Repository:
    return Repository(session_factory(engine))


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "interviewer.db"  # a missing parent dir is created by make_engine
    migrate(f"sqlite:///{path}")
    return path


def _opened(repo: Repository, user_id: int, *, config: dict[str, Any] | None = None, **turn: Any) -> TurnRecord:
    """The first turn of a new session, opened with it as the engine opens one (Repository.open_session)."""
    first = {"question_id": "autograd-1", "topic": "autograd", "difficulty": 2, "kind": "question", "prompt": "Why?",
             **turn}
    return repo.open_session(user_id, session_id=new_session_id(), config=config or {}, **first)


def _session_with_turn(repo: Repository, user_name: str = "alice") -> tuple[int, str, int]:
    user = repo.get_or_create_user(user_name)
    turn = _opened(repo, user.id, config={"questions": 3})
    return user.id, turn.session_id, turn.id


def _count(engine: Engine, model: type[Base]) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(sql_select(func.count()).select_from(model)) or 0)


# Schema


def test_migrations_build_the_schema_the_models_describe(db_url: str, engine: Engine) -> None:
    head = ScriptDirectory.from_config(alembic_config(db_url)).get_current_head()
    assert current_revision(engine) == head == "0006"
    migrate(db_url)  # a second process starting up finds nothing to do
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []


def test_a_downgrade_and_upgrade_keep_every_answer_and_its_evaluation(db_url: str, engine: Engine,
                                                                      repo: Repository) -> None:
    """Downgrading 0003/0002 rebuilt the turns table on SQLite, and dropping the old one cascaded: 6 of 6
    evaluations of a database were gone."""
    from alembic import command

    from app.store.db import WRITE_TRANSACTION

    user_id, session_id, turn_id = _session_with_turn(repo)
    repo.record_answer(turn_id, action="answer", answer_text="a", evaluation=EVALUATION, code_result=CODE_RESULT)
    _open_turn(repo, session_id)
    repo.save_draft(session_id, user_id=user_id, turn=1, text="a draft", code=None)  # 0004's table is not empty
    for step, target in ((command.downgrade, "0001"), (command.upgrade, "head")):
        with engine.connect() as conn:
            conn = conn.execution_options(**{WRITE_TRANSACTION: True})
            with conn.begin():
                step(alembic_config(db_url, conn), target)
        assert (_count(engine, Turn), _count(engine, Evaluation), _count(engine, CodeResult)) == (2, 1, 1), target


def test_the_upgrade_removes_sessions_a_failed_start_left_without_a_question(blank_url: str) -> None:
    """A start stored its session before its first question: one that failed there left an active session with no
    turn in the user's history. 0005 removes those, but not one an older process may still be starting."""
    from datetime import timedelta

    def upgrade_to(target: str) -> None:
        _upgrade(engine, blank_url, target)

    def _without_turns(repo: Repository, user_id: int) -> str:  # stored as a start before 0005's release did
        with repo._writing() as db:
            row = InterviewSession(user_id=user_id, config={}, state={}, status="active")
            db.add(row)
            db.flush()
            return row.id

    engine = make_engine(blank_url)
    upgrade_to("0004")
    repo = Repository(session_factory(engine))
    with repo._writing() as db:  # the users table as it was at 0004: the model's User has columns added since
        user_id = db.execute(text("INSERT INTO users (name, created_at) VALUES ('alice', :now) RETURNING id"),
                             {"now": datetime.now(UTC)}).scalar_one()
    asked, left, starting, ended = (_without_turns(repo, user_id) for _ in range(4))
    repo.add_turn(asked, question_id="autograd-1", topic="autograd", difficulty=2, kind="question", prompt="Why?")
    repo.save_state(ended, state={}, status="completed")
    with repo._writing() as db:
        db.execute(update(InterviewSession).where(InterviewSession.id != starting)
                   .values(created_at=datetime.now(UTC) - timedelta(hours=2)))
    upgrade_to("head")
    assert sorted(s.id for s in repo.list_sessions(user_id)) == sorted([asked, starting, ended])
    assert len(repo.turns(asked)) == 1 and left not in {s.id for s in repo.list_sessions(user_id)}
    engine.dispose()


def test_two_key_rotations_at_once_leave_one_key_live(repo: Repository) -> None:
    """On PostgreSQL two rotations at once left both new keys live in 8 of 10 rounds."""
    user = repo.get_or_create_user("rotating")
    repo.create_api_key(user.id, "first")
    for round_ in range(5):
        barrier = threading.Barrier(2)

        def rotate(n: int, round_: int = round_, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            repo.create_api_key(user.id, f"rotation-{round_}-{n}", replacing=True)

        threads = [threading.Thread(target=rotate, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sum(key.revoked_at is None for key in repo.list_api_keys(user.id)) == 1, round_


def _upgrade(engine: Engine, url: str, target: str) -> None:
    from alembic import command

    from app.store.db import WRITE_TRANSACTION

    with engine.connect() as conn:
        conn = conn.execution_options(**{WRITE_TRANSACTION: True})
        with conn.begin():
            command.upgrade(alembic_config(url, conn), target)


def test_the_upgrade_keeps_names_drawn_alike_and_refuses_new_ones(blank_url: str) -> None:
    """0006 gives each user name its skeleton in a unique column. Names stored before that are drawn alike (made
    before the look-alike check, or two at once) are all kept: the oldest keeps the skeleton, the later ones none,
    and a new name drawn as any of them is refused."""
    engine = make_engine(blank_url)
    _upgrade(engine, blank_url, "0005")
    names = ["learner", "le\u0251rner", "adm\u0131n", "admin", "le\u0251rner-2", "Jos\u00e9", "Jose"]
    with engine.begin() as conn:
        for name in names:
            conn.execute(text("INSERT INTO users (name, created_at) VALUES (:name, :now)"),
                         {"name": name, "now": datetime.now(UTC)})
    _upgrade(engine, blank_url, "head")
    with engine.connect() as conn:
        stored = dict(conn.execute(text("SELECT name, name_skeleton FROM users")).all())
    assert stored == {"learner": "learner", "le\u0251rner": None, "adm\u0131n": "adrnin", "admin": None,
                      "le\u0251rner-2": "learner-2", "Jos\u00e9": "Jos\u00e9", "Jose": "Jose"}
    repo = Repository(session_factory(engine))
    assert repo.get_or_create_user("le\u0251rner").name == "le\u0251rner"  # kept, and found
    with pytest.raises(ConflictError, match="reads as the existing user 'le\u0251rner-2'"):
        repo.create_user("learner-2")
    engine.dispose()


def test_the_upgrade_names_the_users_drawn_alike_on_stderr(blank_url: str) -> None:
    """The warning naming them was logged under "alembic", which has a NullHandler: `serve` and the CLI, which
    configure no logging, showed nothing, and the operator never learnt which users now share a look."""
    engine = make_engine(blank_url)
    _upgrade(engine, blank_url, "0005")
    with engine.begin() as conn:
        for name in ("learner", "Iearner"):
            conn.execute(text("INSERT INTO users (name, created_at) VALUES (:name, :now)"),
                         {"name": name, "now": datetime.now(UTC)})
    engine.dispose()
    code = "import sys; from app.store import migrate; migrate(sys.argv[1])"
    done = run_bounded([sys.executable, "-c", code, blank_url], cwd=REPO, text=True)
    assert done.returncode == 0, done.stderr
    assert "user 'Iearner' is drawn as the older user 'learner'" in done.stderr


def test_processes_starting_together_migrate_once(blank_url: str) -> None:
    code = "import sys; from app.store import migrate; migrate(sys.argv[1])"
    with ThreadPoolExecutor(max_workers=3) as together:
        done = list(together.map(lambda _: run_bounded([sys.executable, "-c", code, blank_url], cwd=REPO, text=True),
                                 range(3)))
    failures = [d.stderr for d in done if d.returncode != 0]
    assert failures == []
    engine = make_engine(blank_url)
    assert current_revision(engine) == "0006"
    engine.dispose()


def test_sqlite_runs_in_wal_mode_with_foreign_keys(sqlite_path: Path) -> None:
    engine = make_engine(f"sqlite:///{sqlite_path}")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000
    engine.dispose()


# Users and keys


def test_get_or_create_user_is_stable(repo: Repository) -> None:
    alice = repo.get_or_create_user("alice")
    assert repo.get_or_create_user("alice") == alice
    assert repo.get_or_create_user("bob").id != alice.id
    assert alice.created_at.tzinfo == UTC
    with pytest.raises(UserFacingError, match="cannot be empty"):
        repo.get_or_create_user("  ")


def test_api_key_lifecycle(repo: Repository) -> None:
    alice, bob = repo.get_or_create_user("alice"), repo.get_or_create_user("bob")
    key, record = repo.create_api_key(alice.id, "laptop")
    assert key.startswith("iv_") and len(key) > 40
    assert record.prefix == key[:8] and record.active
    assert repo.user_for_key(key) == alice
    assert repo.user_for_key(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    assert repo.user_for_key("") is None
    with pytest.raises(ConflictError):
        repo.create_api_key(alice.id, "laptop")
    with pytest.raises(NotFoundError):
        repo.create_api_key(999_999, "ghost")
    assert [k.name for k in repo.list_api_keys(alice.id)] == ["laptop"]
    assert repo.list_api_keys(bob.id) == []


def test_revoked_key_is_rejected(repo: Repository) -> None:
    alice, bob = repo.get_or_create_user("alice"), repo.get_or_create_user("bob")
    key, _ = repo.create_api_key(alice.id, "laptop")
    assert repo.revoke_api_key(bob.id, "laptop") is False  # not bob's key to revoke
    assert repo.user_for_key(key) == alice
    assert repo.revoke_api_key(alice.id, "laptop") is True
    assert repo.user_for_key(key) is None
    assert repo.revoke_api_key(alice.id, "laptop") is False
    (listed,) = repo.list_api_keys(alice.id)
    assert not listed.active and listed.revoked_at is not None


def test_only_the_key_hash_is_stored(repo: Repository, engine: Engine) -> None:
    key, _ = repo.create_api_key(repo.get_or_create_user("alice").id, "laptop")
    with engine.connect() as conn:
        (row,) = conn.execute(sql_select(ApiKey.__table__)).all()
    assert row.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert key not in [str(value) for value in row]


def test_sqlite_file_bytes_never_contain_the_key(sqlite_path: Path) -> None:
    engine = make_engine(f"sqlite:///{sqlite_path}")
    key, _ = Repository(session_factory(engine)).create_api_key(
        Repository(session_factory(engine)).get_or_create_user("alice").id, "laptop"
    )
    engine.dispose()
    stored = b"".join(
        p.read_bytes() for p in sqlite_path.parent.iterdir() if p.name.startswith(sqlite_path.name)
    )
    assert hashlib.sha256(key.encode()).hexdigest().encode() in stored  # the scan does see the row
    assert key.encode() not in stored
    assert key[8:].encode() not in stored  # nor the secret part after the display prefix


# Sessions


def test_another_users_session_is_invisible(repo: Repository) -> None:
    alice, bob = repo.get_or_create_user("alice"), repo.get_or_create_user("bob")
    session = repo.get_session(_opened(repo, alice.id, config={"topics": ["autograd"]}).session_id, alice.id)
    assert session is not None and session.config == {"topics": ["autograd"]}
    assert repo.get_session(session.id, bob.id) is None
    assert repo.list_sessions(bob.id) == []
    assert [s.id for s in repo.list_sessions(alice.id)] == [session.id]
    assert len(session.id) == 32 and session.status == "active"
    # The start of an id (the terminal takes the app's 8 characters) finds only the user's own sessions.
    assert repo.session_ids_starting(session.id[:8], alice.id, limit=2) == [session.id]
    assert repo.session_ids_starting(session.id[:8], bob.id, limit=2) == []
    assert repo.session_ids_starting("%", alice.id, limit=2) == []  # a wildcard is a character, not a pattern


def test_sessions_page_by_their_order_through_ties_on_every_backend(repo: Repository, engine: Engine) -> None:
    user = repo.get_or_create_user("pager")
    made = [_opened(repo, user.id).session_id for _ in range(7)]
    with engine.begin() as db:  # four started in the same instant: pages must split them by id
        db.execute(update(InterviewSession).where(InterviewSession.id.in_(made[1:5]))
                   .values(created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    whole = [s.id for s in repo.list_sessions(user.id)]
    paged: list[str] = []
    while len(paged) < len(whole):
        last = repo.get_session(paged[-1], user.id) if paged else None
        page = repo.list_sessions(user.id, limit=2, after=None if last is None else (last.created_at, last.id))
        assert page, paged
        paged += [s.id for s in page]
    assert paged == whole and sorted(whole) == sorted(made)


def test_a_user_is_created_once(repo: Repository) -> None:
    assert repo.create_user("learner").name == "learner" == repo.user_named("learner").name
    with pytest.raises(ConflictError, match="exists already"):
        repo.create_user("learner")
    assert repo.user_named("nobody") is None


def test_save_state_and_status(repo: Repository) -> None:
    user_id, session_id, _ = _session_with_turn(repo)
    before = repo.get_session(session_id, user_id)
    repo.save_state(session_id, state={"cursor": 1, "asked": ["autograd-1"]})
    repo.save_state(session_id, state={"cursor": 2}, status="completed")
    after = repo.get_session(session_id, user_id)
    assert before is not None and after is not None
    assert after.state == {"cursor": 2} and after.status == "completed"
    assert after.updated_at >= before.updated_at and after.updated_at.tzinfo == UTC
    with pytest.raises(ValueError):
        repo.save_state(session_id, state={}, status="paused")
    with pytest.raises(NotFoundError):
        repo.save_state("missing", state={})


def test_records_are_detached_copies(repo: Repository) -> None:
    user_id, session_id, _ = _session_with_turn(repo)
    record = repo.get_session(session_id, user_id)
    assert record is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.status = "completed"  # type: ignore[misc]
    record.state["cursor"] = 99
    assert repo.get_session(session_id, user_id).state == {}  # type: ignore[union-attr]


# Turns


def test_turns_round_trip_with_payloads(repo: Repository) -> None:
    _, session_id, first = _session_with_turn(repo)
    follow_up = repo.add_turn(
        session_id,
        question_id="autograd-1",
        topic="autograd",
        difficulty=2,
        kind="follow_up",
        prompt="And the leaf tensors?",
        target_point="p2",
    )
    assert follow_up.position == 1 and follow_up.target_point == "p2"
    with pytest.raises(ConflictError, match="moved on in another request"):  # read before the follow-up
        repo.add_turn(session_id, question_id="autograd-2", topic="autograd", difficulty=1, kind="question",
                      prompt="Next?", position=1)
    assert len(repo.turns(session_id)) == 2
    assert repo.add_hint(first) == 1 and repo.add_hint(first) == 2
    answered = repo.record_answer(
        first,
        action="answer",
        answer_text="graph",
        answer_code="x.backward()",
        evaluation=EVALUATION,
        code_result=CODE_RESULT,
    )
    assert answered.evaluation == EVALUATION and answered.code_result == CODE_RESULT
    repo.record_answer(follow_up.id, action="dont_know", evaluation={"score": 0, "evaluator": "rubric"})
    stored = repo.turns(session_id)
    assert [t.position for t in stored] == [0, 1]
    assert stored[0] == answered and stored[0].hints_used == 2 and stored[0].answered
    assert stored[1].action == "dont_know" and stored[1].code_result is None
    assert stored[0].answered_at is not None and stored[0].answered_at.tzinfo == UTC


@pytest.mark.parametrize(("action", "taken", "again"), [
    ("skip", "this skip was recorded", "skip again"),
    ("dont_know", "this \u201cI don't know\u201d was recorded", "send \u201cI don't know\u201d again"),
])
def test_a_give_up_that_loses_to_a_hint_is_refused_in_its_own_words(repo: Repository, action, taken, again) -> None:
    """A skip or "I don't know" refused for a hint given meanwhile was told "while this answer was scored ... send
    the answer again", as if an answer had been lost."""
    user_id, session_id, turn_id = _session_with_turn(repo)
    repo.add_hint(turn_id, seen=0, text="Think about the graph.")
    with pytest.raises(ConflictError) as refused:
        repo.record_answer(turn_id, action=action, evaluation=EVALUATION, hints_seen=0)
    assert str(refused.value) == (f"a hint was given on turn 0 while {taken}, so its score is out of date; nothing "
                                  f"was recorded: {again}")
    repo.save_state(session_id, state={"current_turn_id": None}, status="completed")
    with pytest.raises(ConflictError, match=f"^the session was ended while {taken}; nothing was recorded$"):
        repo.record_answer(turn_id, action=action, evaluation=EVALUATION)
    assert not repo.turns(session_id)[0].answered


@pytest.mark.parametrize(("action", "done"), [
    ("answer", "answered"), ("skip", "skipped"), ("dont_know", "answered \u201cI don't know\u201d"),
])
def test_an_action_that_loses_a_race_is_told_what_the_winner_did_to_the_turn(repo: Repository, action, done) -> None:
    """Five requests on one prompt at once: a skip won, and the others were told the turn "was already answered"
    (review s56). The refusal says what the turn's recorded action was."""
    user_id, session_id, turn_id = _session_with_turn(repo)
    repo.record_answer(turn_id, action=action, evaluation=EVALUATION)
    with pytest.raises(ConflictError, match=f"^turn 0 was already {done}; nothing was recorded$"):
        repo.record_answer(turn_id, action="answer", evaluation=EVALUATION)


def test_a_session_ended_takes_no_answer_and_no_hint_on_the_prompt_it_left_open(repo: Repository) -> None:
    """Another process ends the session while this one scores an answer or chooses a hint: both were stored on the
    ended session (the answer's state putting back the prompt the end had closed; a hint on an unscored turn)."""
    user_id, session_id, turn_id = _session_with_turn(repo)
    repo.save_state(session_id, state={"current_turn_id": None}, status="completed")
    with pytest.raises(ConflictError, match="session was ended while this answer was scored"):
        repo.record_answer(turn_id, action="answer", evaluation=EVALUATION, state={"current_turn_id": turn_id})
    with pytest.raises(ConflictError, match="session has ended"):
        repo.add_hint(turn_id, seen=0, text="Think about the graph.")
    (turn,) = repo.turns(session_id)
    assert not turn.answered and turn.hints_used == 0 and turn.hints == ()
    assert repo.get_session(session_id, user_id).state == {"current_turn_id": None}  # type: ignore[union-attr]


def test_a_new_turn_is_current_in_its_own_commit_and_a_hint_counts_once(repo: Repository) -> None:
    user_id, session_id, _ = _session_with_turn(repo)
    second = repo.add_turn(session_id, question_id="autograd-1", topic="autograd", difficulty=2, kind="follow_up",
                           prompt="And then?", state={"step": 2})
    stored = repo.get_session(session_id, user_id)
    assert stored is not None and stored.state == {"step": 2, "current_turn_id": second.id}
    with pytest.raises(ConflictError, match="another hint was given"):
        repo.add_hint(second.id, seen=1)  # chosen when one hint was counted; there are none
    before = repo.get_session(session_id, user_id).updated_at
    assert repo.add_hint(second.id, seen=0, text="Think about the graph.") == 1
    assert repo.get_session(session_id, user_id).updated_at > before  # the report's version moves with it
    with pytest.raises(ConflictError):
        repo.add_hint(second.id, seen=0, text="A hint refused is not kept.")
    assert repo.add_hint(second.id, seen=1, text="Think about the leaves.") == 2
    assert repo.turns(session_id)[1].hints == ("Think about the graph.", "Think about the leaves.")
    assert repo.turns(session_id)[0].hints == ()


def test_a_question_chosen_before_another_session_took_one_is_not_recorded(repo: Repository) -> None:
    user_id, first, _ = _session_with_turn(repo)
    asked = repo.questions_asked(user_id)
    other = _opened(repo, user_id, kind="follow_up", user_asked=asked).session_id  # a follow-up asks nothing new
    repo.add_turn(other, question_id="autograd-2", topic="autograd", difficulty=2, kind="question", prompt="?",
                  user_asked=asked)
    with pytest.raises(ChoiceOutdatedError):
        repo.add_turn(first, question_id="autograd-2", topic="autograd", difficulty=2, kind="question", prompt="?",
                      user_asked=asked)
    assert len(repo.turns(first)) == 1 and repo.questions_asked(user_id) == asked + 1
    someone_else = repo.get_or_create_user("bob").id  # another user's questions are no concern of this one
    _opened(repo, someone_else, question_id="autograd-3")
    repo.add_turn(first, question_id="autograd-3", topic="autograd", difficulty=2, kind="question", prompt="?",
                  user_asked=asked + 1)


def test_readers_go_on_while_a_question_is_recorded(db_url: str, monkeypatch) -> None:
    """The user's lock is held only while a chosen question is checked and recorded; meanwhile every read goes on
    (WAL on SQLite), on PostgreSQL a new session of the same user too, and a question chosen before is refused."""
    import app.store.turns as turns

    engines = [make_engine(db_url) for _ in range(3)]  # separate pools, like separate processes
    writer, reader, other = (Repository(session_factory(e)) for e in engines)
    user_id, session_id, _ = _session_with_turn(writer)
    second = _opened(writer, user_id, kind="follow_up").session_id
    asked = writer.questions_asked(user_id)
    locked, release = threading.Event(), threading.Event()
    real = turns._asked_locked

    def held(session, user):  # the lock is taken: hold the transaction open until the reads are done
        count = real(session, user)
        if threading.current_thread().name == "recording":
            locked.set()
            release.wait(30)
        return count

    monkeypatch.setattr(turns, "_asked_locked", held)
    recording = threading.Thread(name="recording", target=lambda: writer.add_turn(
        session_id, question_id="autograd-2", topic="autograd", difficulty=2, kind="question", prompt="?",
        user_asked=asked))
    recording.start()
    try:
        assert locked.wait(30)
        assert reader.get_session(session_id, user_id) is not None and len(reader.turns(session_id)) == 1
        assert reader.questions_asked(user_id) == asked and reader.list_sessions(user_id)
        if db_url.startswith("postgresql"):  # SQLite has one writer at a time
            # A new session refers to the locked user row (FOR KEY SHARE): FOR NO KEY UPDATE lets it in.
            opening = threading.Thread(target=lambda: _opened(other, user_id, kind="follow_up"))
            opening.start()
            opening.join(10)
            assert not opening.is_alive(), "opening a session waited for the question being recorded"
    finally:
        release.set()
        recording.join(30)
    assert len(reader.turns(session_id)) == 2
    with pytest.raises(ChoiceOutdatedError):  # chosen before the question above was recorded
        other.add_turn(second, question_id="autograd-2", topic="autograd", difficulty=2, kind="question",
                       prompt="?", user_asked=asked)
    for e in engines:
        e.dispose()


def _open_turn(repo: Repository, session_id: str) -> int:
    """A next turn, current as the engine makes it (its id in the session's state)."""
    turn = repo.add_turn(session_id, question_id="autograd-2", topic="autograd", difficulty=2, kind="question",
                         prompt="How?", state={})
    return turn.id


def test_a_draft_is_kept_for_the_open_turn_only_and_goes_with_its_answer(repo: Repository, engine: Engine) -> None:
    user_id, session_id, first = _session_with_turn(repo)
    with pytest.raises(ConflictError):  # the first turn was added without the engine's state: none is open
        repo.save_draft(session_id, user_id=user_id, turn=0, text="x", code=None)
    repo.record_answer(first, action="answer", answer_text="a")
    turn_id = _open_turn(repo, session_id)
    saved = repo.save_draft(session_id, user_id=user_id, turn=1, text="half an answer", code="def f(): ...")
    assert (saved.turn, saved.text, saved.code) == (1, "half an answer", "def f(): ...")
    repo.save_draft(session_id, user_id=user_id, turn=1, text="most of an answer", code=None)
    assert (repo.draft(session_id, turn=1).text, repo.draft(session_id, turn=1).code) == ("most of an answer", None)
    assert repo.draft(session_id, turn=0) is None
    with pytest.raises(ConflictError):
        repo.save_draft(session_id, user_id=user_id, turn=0, text="from a tab left behind", code=None)
    other = repo.get_or_create_user("mallory").id
    with pytest.raises(NotFoundError):
        repo.save_draft(session_id, user_id=other, turn=1, text="not mine", code=None)
    assert repo.draft(session_id, turn=1).text == "most of an answer"
    repo.record_answer(turn_id, action="answer", answer_text="all of it")
    assert repo.draft(session_id, turn=1) is None
    with pytest.raises(ConflictError):
        repo.save_draft(session_id, user_id=user_id, turn=1, text="late keystrokes", code=None)
    assert repo.draft(session_id, turn=1) is None
    _open_turn(repo, session_id)
    repo.save_draft(session_id, user_id=user_id, turn=2, text="never sent", code=None)
    repo.save_state(session_id, state={}, status="completed")  # ended early
    assert _count(engine, AnswerDraft) == 0


def test_answer_rules(repo: Repository) -> None:
    _, session_id, turn_id = _session_with_turn(repo)
    with pytest.raises(ValueError):
        repo.record_answer(turn_id, action="shrug")
    with pytest.raises(ValueError):
        repo.record_answer(turn_id, action="answer", evaluation={"score": 1.0})
    with pytest.raises(ValueError):
        repo.add_turn(session_id, question_id="q", topic="t", difficulty=1, kind="essay", prompt="?")
    with pytest.raises(NotFoundError):
        repo.add_turn("missing", question_id="q", topic="t", difficulty=1, kind="question", prompt="?")
    repo.record_answer(turn_id, action="skip")
    with pytest.raises(ConflictError):
        repo.record_answer(turn_id, action="answer", answer_text="second thoughts")
    with pytest.raises(NotFoundError):
        repo.record_answer(999_999, action="skip")
    with pytest.raises(NotFoundError):
        repo.add_hint(999_999)


def test_record_answer_is_atomic(repo: Repository, engine: Engine, db_url: str) -> None:
    user_id, session_id, turn_id = _session_with_turn(repo)
    executed: list[str] = []

    def fail_on_code_result(conn: object, cursor: object, statement: str, *args: object) -> None:
        executed.append(statement)
        if statement.startswith("INSERT INTO code_results"):
            raise RuntimeError("disk on fire")

    event.listen(engine, "before_cursor_execute", fail_on_code_result)
    with pytest.raises(RuntimeError, match="disk on fire"):
        repo.record_answer(
            turn_id,
            action="answer",
            answer_text="graph",
            evaluation=EVALUATION,
            code_result=CODE_RESULT,
            state={"cursor": 1},
        )
    event.remove(engine, "before_cursor_execute", fail_on_code_result)
    # The failure really came mid-write: the turn's own row had already been updated.
    assert any(statement.startswith("UPDATE turns") for statement in executed)
    fresh = make_engine(db_url)  # read through another engine: nothing was left half-written
    assert _count(fresh, Evaluation) == 0 and _count(fresh, CodeResult) == 0
    with fresh.connect() as conn:
        assert conn.scalar(sql_select(Turn.answered_at).where(Turn.id == turn_id)) is None
    fresh.dispose()
    assert repo.get_session(session_id, user_id).state == {}  # type: ignore[union-attr]
    assert repo.record_answer(turn_id, action="answer", evaluation=EVALUATION).evaluation == EVALUATION


# History


def test_seen_questions_and_question_scores(repo: Repository) -> None:
    user_id, first_session, turn_id = _session_with_turn(repo)
    repo.record_answer(turn_id, action="answer", evaluation={"score": 0.2, "evaluator": "rubric"})
    again = _opened(repo, user_id)
    second = again.session_id
    other = repo.add_turn(
        second, question_id="opt-1", topic="optim", difficulty=1, kind="question", prompt="?"
    )
    probe = repo.add_turn(
        second,
        question_id="opt-1",
        topic="optim",
        difficulty=1,
        kind="follow_up",
        prompt="?",
        target_point="p1",
    )
    repo.record_answer(other.id, action="answer", evaluation={"score": 0.9, "evaluator": "rubric"})
    repo.record_answer(probe.id, action="answer", evaluation={"score": 0.5, "evaluator": "rubric"})
    _session_with_turn(repo, "bob")  # another user's history stays out

    seen = repo.seen_questions(user_id)
    assert set(seen) == {"autograd-1", "opt-1"}
    assert seen["autograd-1"] == again.created_at and seen["autograd-1"].tzinfo == UTC
    scores = repo.question_scores(user_id)  # a question's last evaluated turn: after its follow-up
    assert [(s.topic, s.question_id, s.score, s.session_id) for s in scores] == [
        ("autograd", "autograd-1", 0.2, first_session),
        ("optim", "opt-1", 0.5, second),
    ]
    assert scores[0].answered_at.tzinfo == UTC


# Several processes, crashes


def test_two_engines_see_each_others_writes(db_url: str) -> None:
    first_engine, second_engine = make_engine(db_url), make_engine(db_url)
    first, second = Repository(session_factory(first_engine)), Repository(session_factory(second_engine))
    user_id, session_id, turn_id = _session_with_turn(first)
    assert second.get_session(session_id, user_id) is not None
    second.record_answer(turn_id, action="answer", evaluation=EVALUATION, state={"cursor": 1})
    assert first.turns(session_id)[0].evaluation == EVALUATION
    assert first.get_session(session_id, user_id).state == {"cursor": 1}  # type: ignore[union-attr]
    first_engine.dispose()
    second_engine.dispose()


def test_concurrent_writers_do_not_lose_updates(db_url: str) -> None:
    engines = [make_engine(db_url) for _ in range(4)]  # separate pools, like separate processes
    repos = [Repository(session_factory(e)) for e in engines]
    _, session_id, turn_id = _session_with_turn(repos[0])
    errors: list[BaseException] = []

    def interview(repo: Repository) -> None:
        # add_turn reads the turn count and then inserts: the read-then-write shape that fails at
        # once with "database is locked" on SQLite unless writers take the lock up front.
        try:
            for _ in range(10):
                repo.add_turn(
                    session_id, question_id="q", topic="t", difficulty=1, kind="question", prompt="?"
                )
                repo.add_hint(turn_id)
        except BaseException as exc:  # surfaced below; a thread's exception is otherwise lost
            errors.append(exc)

    threads = [threading.Thread(target=interview, args=(r,)) for r in repos]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert [t.position for t in repos[0].turns(session_id)] == list(range(1 + 4 * 10))
    assert repos[0].add_hint(turn_id) == 4 * 10 + 1
    for e in engines:
        e.dispose()


CRASHING_WRITER = """
import sys, time
from app.store import Repository, make_engine, session_factory
from app.store.models import new_session_id
repo = Repository(session_factory(make_engine(sys.argv[1])))
user = repo.get_or_create_user("crash")
turn = repo.open_session(user.id, session_id=new_session_id(), config={"questions": 2}, question_id="autograd-1",
                         topic="autograd", difficulty=1, kind="question", prompt="Why?")
repo.record_answer(turn.id, action="answer", answer_text="because", state={"cursor": 1},
                   evaluation={"score": 0.75, "evaluator": "rubric"})
print("committed", turn.session_id, flush=True)
time.sleep(120)
"""


def test_answer_survives_kill_9(db_url: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHING_WRITER, db_url], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        watch = Watch(proc.pid)  # however long a loaded machine takes to start it
        with selectors.DefaultSelector() as readable:  # not select.select: it refuses descriptors past 1023
            readable.register(proc.stdout, selectors.EVENT_READ)
            while not readable.select(0.5):
                assert (why := watch.stuck()) is None, f"the writer never reported its commit: it {why}"
        word, session_id = proc.stdout.readline().split()  # type: ignore[union-attr]
        assert word == "committed"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()
    engine = make_engine(db_url)  # a brand-new process's view: nothing cached from the writer
    repo = Repository(session_factory(engine))
    session = repo.get_session(session_id, repo.get_or_create_user("crash").id)
    assert session is not None and session.state == {"cursor": 1} and session.status == "active"
    (turn,) = repo.turns(session_id)
    assert turn.answer_text == "because" and turn.evaluation == {"score": 0.75, "evaluator": "rubric"}
    engine.dispose()


def test_sqlite_url_from_settings_works_out_of_the_box(tmp_path: Path) -> None:
    from app.config import get_settings

    url = get_settings().sqlalchemy_url  # conftest points data_dir at tmp_path/data, not yet created
    migrate(url)
    engine = make_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM users")).scalar() == 0
    engine.dispose()
    assert (tmp_path / "data" / "interviewer.db").exists()


def test_values_postgresql_refuses_are_said_up_front_or_fitted(repo: Repository) -> None:
    """SQLite stores what PostgreSQL refuses with a driver error: each backend must behave the same."""
    with pytest.raises(UserFacingError, match="a key name is 101 characters; at most 100"):
        repo.create_api_key(repo.get_or_create_user("alice").id, "k" * 101)
    with pytest.raises(UserFacingError, match="a user name is 201 characters; at most 200"):
        repo.get_or_create_user("u" * 201)
    _, session_id, turn_id = _session_with_turn(repo)
    long_name = "offline-rubric (fallback from llm-judge:" + "org/Model-GGUF/" * 8 + "model-Q4_K_M.gguf)"
    stored = repo.record_answer(turn_id, action="answer", evaluation={**EVALUATION, "evaluator": long_name})
    assert stored.evaluation is not None and stored.evaluation["evaluator"] == long_name  # the payload keeps it


def test_a_nul_character_is_not_text() -> None:
    from app.text_input import as_text, not_text

    assert not_text("a\x00b") == "holds a NUL character (\\u0000) at character 1, which is not text"
    assert as_text("a\x00b") == "a\ufffdb"
