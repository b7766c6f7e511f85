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


class Breaker:
    """Counts a server's unanswered calls in a row; shared by every client of that server in the process."""

    def __init__(
        self, *, failures_to_open: int = FAILURES_TO_OPEN, cool_down_s: float = COOL_DOWN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._failures_to_open, self._cool_down_s, self._clock = failures_to_open, cool_down_s, clock
        self._lock = threading.Lock()
        self._in_a_row = 0
        self._last_reason = ""
        self._closed_again_at: float | None = None  # while open: when one call may try the server again
        self._trying = False  # that one call is in flight; the others still skip

    @contextmanager
    def call(self, *, unanswered: type[LLMError]) -> Iterator[None]:
        """Make one call, unless its step or this server is known not to answer now (then LLMError).
        An `unanswered` error counts against the server and ends the step's calls; anything else is an answer."""
        step = _step.get()
        if step:
            raise LLMError(f"not called: an earlier call of this step got no reply, {step[0]}")
        self._admit()
        try:
            yield
        except unanswered as exc:
            self._failed(exc.reason)
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
            open_now = self._closed_again_at is not None and (self._clock() < self._closed_again_at or self._trying)
        return not _step.get() and not open_now

    def _admit(self) -> None:
        with self._lock:
            if self._closed_again_at is None:
                return
            if self._clock() >= self._closed_again_at and not self._trying:
                self._trying = True  # this call tries the server again
                return
            raise LLMError(
                f"not called during a {self._cool_down_s:g} s cool-down: the model server left {self._in_a_row} "
                f"calls in a row unanswered, last: {self._last_reason}"
            )

    def _failed(self, reason: str) -> None:
        with self._lock:
            self._in_a_row += 1
            self._last_reason = reason
            self._trying = False
            if self._in_a_row >= self._failures_to_open:
                self._closed_again_at = self._clock() + self._cool_down_s

    def _answered(self) -> None:
        with self._lock:
            self._in_a_row, self._closed_again_at, self._trying = 0, None, False


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
