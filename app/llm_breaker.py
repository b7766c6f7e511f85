"""When the model server does not answer, stop asking it for a while.

A call that gets no reply (a timeout, or no connection) costs up to the timeout per attempt. Two scopes keep
that cost to one call: within a step (one action on a session: the judge, then the wordings of the feedback
and of the next question) the calls after one that got no reply are not made; and a server that left
FAILURES_TO_OPEN calls in a row unanswered is not called by anyone for COOL_DOWN_S, after which one call
tries it again (answered: back to normal; not: another cool-down). A call not made raises LLMError, so its
caller falls back offline with the reason in its note, as for any other failure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from evaluators.chat import LLMError

FAILURES_TO_OPEN = 3
COOL_DOWN_S = 30.0

# Why the current step's LLM calls stop (the first unanswered call's reason); an empty list: none failed yet.
_step: ContextVar[list[str] | None] = ContextVar("llm_step", default=None)


@contextmanager
def llm_step() -> Iterator[None]:
    """One step's LLM calls: once one of them gets no reply, the others are not made."""
    token = _step.set([])
    try:
        yield
    finally:
        _step.reset(token)


@dataclass(frozen=True, eq=False)
class _Ticket:
    """One admitted call: the run of calls it was admitted in, and whether it is the one call trying again."""

    run: int
    trial: bool = False


class Breaker:
    """Counts a server's unanswered calls in a row; shared by every client of that server in the process.

    Calls overlap (a batch keeps several in flight), so a failure counts only against the run of calls it was
    admitted in: one admitted before the breaker opened and failing during the cool-down says nothing new. Counted,
    it pushed the cool-down on by its own arrival ("4 calls in a row" at 3), and it cleared the mark of the one
    call trying again, so a second call tried the server beside it."""

    def __init__(
        self, *, failures_to_open: int = FAILURES_TO_OPEN, cool_down_s: float = COOL_DOWN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._failures_to_open, self._cool_down_s, self._clock = failures_to_open, cool_down_s, clock
        self._lock = threading.Lock()
        self._in_a_row = 0
        self._last_reason = ""
        self._closed_again_at: float | None = None  # while open: when one call may try the server again
        self._trial: _Ticket | None = None  # that one call, while in flight; the others still skip
        self._run = 0  # a new run of calls each time the breaker opens or closes

    @contextmanager
    def call(self, *, unanswered: type[LLMError]) -> Iterator[None]:
        """Make one call, unless its step or this server is known not to answer now (then LLMError).
        An `unanswered` error counts against the server and ends the step's calls; anything else is an answer."""
        step = _step.get()
        if step:
            raise LLMError(f"not called: an earlier call of this step got no reply, {step[0]}")
        ticket = self._admit()
        try:
            yield
        except unanswered as exc:
            self._failed(ticket, exc.reason)
            if step is not None:
                step.append(exc.reason)
            raise
        except BaseException:
            self._answered()
            raise
        self._answered()

    def admits(self) -> bool:
        """Whether a call would be made now (asking changes nothing: the one call that tries again is not taken)."""
        with self._lock:
            trying = self._trial is not None
            open_now = self._closed_again_at is not None and (self._clock() < self._closed_again_at or trying)
        return not _step.get() and not open_now

    def _admit(self) -> _Ticket:
        with self._lock:
            if self._closed_again_at is None:
                return _Ticket(self._run)
            if self._clock() >= self._closed_again_at and self._trial is None:
                self._trial = _Ticket(self._run, trial=True)  # this call tries the server again
                return self._trial
            raise LLMError(
                f"not called during a {self._cool_down_s:g} s cool-down: the model server left {self._in_a_row} "
                f"calls in a row unanswered, last: {self._last_reason}"
            )

    def _failed(self, ticket: _Ticket, reason: str) -> None:
        with self._lock:
            if ticket.run != self._run:
                return  # admitted before the breaker last opened or closed: already accounted for
            if ticket is self._trial:
                self._trial = None
            self._in_a_row += 1
            self._last_reason = reason
            if self._in_a_row >= self._failures_to_open:
                self._closed_again_at = self._clock() + self._cool_down_s
                self._run += 1

    def _answered(self) -> None:
        with self._lock:
            if self._closed_again_at is not None:
                self._run += 1
            self._in_a_row, self._closed_again_at, self._trial = 0, None, None


_BREAKERS: dict[str, Breaker] = {}
_BREAKERS_LOCK = threading.Lock()


def breaker_for(server: str) -> Breaker:
    """The process's breaker for one server (the judge and the phrasing share it)."""
    with _BREAKERS_LOCK:
        return _BREAKERS.setdefault(server, Breaker())


def forget_breakers() -> None:
    """Start every server's count afresh (tests, where a closed fake's port may be reused)."""
    with _BREAKERS_LOCK:
        _BREAKERS.clear()
