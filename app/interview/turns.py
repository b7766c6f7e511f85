"""A session's turns as the interview engine reads them: cached per call, and the questions it asks of
them (the current turn, the hints and the last evaluation and code run on a question)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

from app.errors import NotFoundError
from app.interview.asked import as_asked
from evaluators.base import Evaluation
from knowledge.schema import Question


class SessionTurns:
    """The repository, with one session's turns read once per engine call (several questions about them
    are asked per call) and dropped on every write. Thread-local: the API serves sessions from several
    threads."""

    WRITES = frozenset({"open_session", "save_state", "add_turn", "record_answer", "add_hint"})

    def __init__(self, repo: Any) -> None:
        self._repo = repo
        self._local = threading.local()

    def forget(self) -> None:
        self._local.turns = {}

    def turns(self, session_id: str) -> list[Any]:
        cache = getattr(self._local, "turns", None)
        if cache is None:
            cache = self._local.turns = {}
        if session_id not in cache:
            cache[session_id] = self._repo.turns(session_id)
        return list(cache[session_id])

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._repo, name)
        if name not in self.WRITES:
            return attr

        def write(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            finally:
                self.forget()

        return write

    # --- what the engine asks of a session's turns ---------------------------------------------
    def turn(self, session_id: str, turn_id: int | None) -> Any:
        for turn in self.turns(session_id):
            if turn.id == turn_id:
                return turn
        raise NotFoundError(f"turn {turn_id} not found in session {session_id}")

    def asked(self, session_id: str, question_id: str, bank: dict[str, Question]) -> Question | None:
        """The question as this session asked it (its copy on the question's turn), which its answers are judged
        against; None when it has no copy and the bank no longer has it."""
        copies = [t.bank_entry for t in self.turns(session_id) if t.question_id == question_id and t.bank_entry]
        return as_asked(copies[-1] if copies else None, bank.get(question_id))

    def last_code_result(self, session_id: str, question_id: str) -> dict[str, Any] | None:
        turns = self.turns(session_id)
        results = [t.code_result for t in turns if t.question_id == question_id and t.code_result]
        return results[-1] if results else None

    def code_shown(self, session_id: str, question_id: str) -> dict[str, Any] | None:
        """What the question's code showed, for its follow-ups and hints: the last run; no run ({}) when code was sent
        that no sandbox ran (a server without one); None when no code was sent on it."""
        turns = [t for t in self.turns(session_id) if t.question_id == question_id]
        runs = [t.code_result for t in turns if t.code_result]
        return runs[-1] if runs else {} if any((t.answer_code or "").strip() for t in turns) else None

    def hints_on_question(self, session_id: str, question_id: str) -> int:
        return sum(t.hints_used for t in self.turns(session_id) if t.question_id == question_id)

    def hints_given(self, session_id: str, question_id: str) -> list[str]:
        """The texts of the hints given on the question, where stored (turns before that keep a count only)."""
        return [hint for t in self.turns(session_id) if t.question_id == question_id for hint in t.hints]

    def last_evaluation_dict(self, session_id: str, question_id: str) -> dict[str, Any] | None:
        answered = [t for t in self.turns(session_id) if t.question_id == question_id and t.evaluation]
        return dict(answered[-1].evaluation) if answered else None

    def last_evaluation(self, session_id: str, question_id: str) -> Evaluation | None:
        answered = [t for t in self.turns(session_id) if t.question_id == question_id and t.evaluation]
        rubric = answered[-1].evaluation.get("rubric") if answered else None
        return Evaluation.model_validate(rubric) if rubric else None


def aware(at: datetime) -> datetime:
    """A stored time in UTC, whether or not the store handed it back with its zone."""
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def elapsed_s(since: datetime) -> float:
    """Seconds since a turn was asked or answered: a time limit runs from the one, a resumed step from the other."""
    return (datetime.now(UTC) - aware(since)).total_seconds()


def time_left_s(asked_at: datetime, limit_s: int | None) -> float | None:
    """Seconds left of a prompt's time limit (None: untimed), below 0 once it has passed."""
    return limit_s - elapsed_s(asked_at) if limit_s else None


def late(asked_at: datetime, limit_s: int | None) -> bool:
    """Whether an answer sent now comes after the limit: it is charged for it (`penalties.LATE_SHARE`), and the
    terminal says so before it is scored."""
    left = time_left_s(asked_at, limit_s)
    return left is not None and left < 0
